/**
 * Lets @modelcontextprotocol/conformance run on Node 20. Its bundle imports
 * `globSync` from `fs` (Node >= 22), used only by its `tier-check` command;
 * on Node 20 the import alone fails to link and nothing runs. This hook
 * points the bundle's `fs` import at a module that re-exports `node:fs` and
 * adds a `globSync` that explains itself if it is ever called.
 *
 * Use: node --import ./conformance/node20-hook.mjs node_modules/@modelcontextprotocol/conformance/dist/index.js …
 */
import { register } from 'node:module';
import * as fs from 'node:fs';

// Newer Node has the real thing: nothing to do.
if (typeof (/** @type {Record<string, unknown>} */ (fs)).globSync !== 'function') {
  register('./node20-hooks.mjs', import.meta.url);
}
