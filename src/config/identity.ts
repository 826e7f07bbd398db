/**
 * Config identity, the one home of "is this the same server?" (SPEC §2.4, §2.5, §4):
 * the fingerprint (what the connection depends on), the approval hash (what
 * runs and what it reaches), the config hash (edited at all) and `serversEqual`
 * (the reconcile comparison). Every layer compares configs through this module.
 */
import type { ServerConfig } from '../../machines/types.js';
import deepEqual from 'fast-deep-equal';
import { identityOf, normalise, stableHash } from '../util/stable-hash.js';
import { setOwn } from '../util/own.js';

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
 * (whether an http entry may end up on SSE), `headersHelper` (the command
 * whose output becomes headers) and a pinned `protocol`. A change to
 * `description`, `includeTools`/`excludeTools`, `timeout` or `disabled` keeps
 * it, so a filter edit re-applies the filter without reconnecting.
 */
export function fingerprint(config: ServerConfig): string {
  // A pinned protocol revision changes the wire (a reconnect), not what runs (no new approval);
  // `auto` ≡ absent, so configs without a pin keep their fingerprints.
  const protocol = config.protocol !== undefined && config.protocol !== 'auto' ? config.protocol : undefined;
  return stableHash(protocol === undefined ? connectionIdentity(config) : { ...connectionIdentity(config), protocol });
}

/**
 * Stable hash of what an approval is about (SPEC §4):
 * what runs and what it reaches — `type`, `command`, `args`, `env`, `cwd`,
 * `url`, `headers`, `auth`/`oauth`, `fallbackToSse`, `headersHelper`. An edit
 * of any of these asks again; an edit of a filter, a description, a timeout
 * or `startup`/`idleTimeoutMs` applies without a new prompt (and, since the
 * fingerprint is the same set, without a reconnect). Key order does not matter.
 */
export function approvalHash(config: ServerConfig): string {
  // Versioned, so it never equals the fingerprint of the same fields by accident of design.
  return stableHash({ approval: 2, ...connectionIdentity(config) });
}

/**
 * Hash of the whole config except `startup` and `idleTimeoutMs`: any edit
 * changes it (the reconciler's test for "edited at all"). Earlier versions
 * bound approvals to it, so decisions stored under it are still honoured.
 */
export function configHash(config: ServerConfig): string {
  const { instance, startup, idleTimeoutMs, ...rest } = config;
  const body: Record<string, unknown> = { ...rest };
  if (instance !== null && typeof instance === 'object') body.instance = identityOf(instance);
  return stableHash(body);
}

function normaliseServers(servers: Readonly<Record<string, ServerConfig>> | undefined): unknown {
  const out: Record<string, unknown> = {};
  for (const [name, cfg] of Object.entries(servers ?? {})) {
    const { instance, ...rest } = cfg;
    const n = normalise(rest) as Record<string, unknown>;
    // `undefined ≡ {}` for map-shaped fields.
    for (const k of ['env', 'headers', 'auth']) {
      const v = n[k];
      if (v && typeof v === 'object' && Object.keys(v).length === 0) delete n[k];
    }
    if (instance !== null && typeof instance === 'object') n.instance = identityOf(instance);
    setOwn(out, name, n);
  }
  return out;
}

/**
 * Whether two server maps are the same for reconcile purposes (SPEC §2.4):
 * object key order ignored, array order significant, `undefined ≡ {}`.
 */
export function serversEqual(
  a: Readonly<Record<string, ServerConfig>> | undefined,
  b: Readonly<Record<string, ServerConfig>> | undefined,
): boolean {
  return deepEqual(normaliseServers(a), normaliseServers(b));
}
