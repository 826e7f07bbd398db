import type { ServerConfig } from '../../machines/types.js';
import { identityOf, stableHash } from '../util/stable-hash.js';

/** The fields that decide what is connected to (SPEC §2.5). */
export const CONNECTION_FIELDS = ['type', 'command', 'args', 'env', 'cwd', 'url', 'headers', 'auth', 'oauth', 'fallbackToSse', 'headersHelper'] as const;

/** The effective transport type: explicit, else `stdio` with a command, else `http` with a url. */
export function transportOf(config: ServerConfig): NonNullable<ServerConfig['type']> {
  if (config.type) return config.type;
  if (config.instance !== undefined) return 'sdk';
  return config.command !== undefined ? 'stdio' : 'http';
}

/**
 * The connection-relevant fields of a config, normalised: the effective
 * `type`, the {@link CONNECTION_FIELDS} that are set (`env`/`headers`/`auth`
 * `{}` ≡ absent, `fallbackToSse: false` ≡ absent), and an in-process
 * instance by identity. What the fingerprint and the approval hash cover.
 */
export function connectionIdentity(config: ServerConfig): Record<string, unknown> {
  const picked: Record<string, unknown> = { type: transportOf(config) };
  for (const field of CONNECTION_FIELDS) {
    if (field === 'type') continue;
    const v = config[field];
    // `undefined ≡ {}` for the map-shaped fields, as in serversEqual.
    if ((field === 'env' || field === 'headers' || field === 'auth') && v !== undefined && Object.keys(v).length === 0) continue;
    // `fallbackToSse: false ≡ absent`: only a fallback that may happen changes what is connected to.
    if (field === 'fallbackToSse' && v !== true) continue;
    picked[field] = v;
  }
  if (config.instance !== undefined && config.instance !== null && typeof config.instance === 'object') {
    picked.instance = identityOf(config.instance);
  }
  return picked;
}

/**
 * Stable hash of the connection-relevant fields only: also `fallbackToSse`
 * (whether an http entry may end up on SSE) and `headersHelper` (the command
 * whose output becomes headers). A change to
 * `description`, `includeTools`/`excludeTools`, `timeout` or `disabled` keeps
 * it, so a filter edit re-applies the filter without reconnecting.
 */
export function fingerprint(config: ServerConfig): string {
  return stableHash(connectionIdentity(config));
}
