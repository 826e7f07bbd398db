/** `node:fs` plus a `globSync` stub, for the conformance bundle on Node 20 (see node20-hook.mjs). */
import fs from 'node:fs';

export * from 'node:fs';
export default fs;

export function globSync() {
  throw new Error('fs.globSync needs Node >= 22; only the conformance `tier-check` command uses it, and it is not supported here.');
}
