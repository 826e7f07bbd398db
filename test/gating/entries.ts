import type { DesiredMap, DesiredServer, Scope, ServerConfig } from '../../machines/types.js';
import { approvalHash, configHash, fingerprint } from '../../src/config/identity.js';

/** A desired-map entry with its real fingerprint and approval hash, for pure tests. */
export function entry(name: string, scope: Scope, config: ServerConfig = { command: 'node', args: [`${name}.js`] }): DesiredServer {
  return { name, scope, source: scope === 'project' ? '/ws/.mcp.json' : scope, config, fingerprint: fingerprint(config), hash: approvalHash(config) };
}

/** A desired map from entries. */
export function desiredOf(...entries: DesiredServer[]): DesiredMap {
  return Object.fromEntries(entries.map((e) => [e.name, e]));
}
