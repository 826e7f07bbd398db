import deepEqual from 'fast-deep-equal';
import type { ServerConfig } from '../../machines/types.js';
import { identityOf, normalise } from '../util/stable-hash.js';
import { setOwn } from '../config/own.js';

/** Gating lists as read from settings (before the CLI bound is applied). */
export interface GatingLists {
  allowed?: readonly string[];
  excluded?: readonly string[];
  pending?: readonly string[];
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

function asSet(list: readonly string[] | undefined): string[] {
  return [...new Set(list ?? [])].sort();
}

/**
 * Whether two gating lists are the same (SPEC §2.4): each list is a set;
 * `undefined ≡ []` for `excluded` and `pending`, but an absent `allowed`
 * (allow all) differs from `allowed: []` (deny all).
 */
export function gatingEqual(a: GatingLists | undefined, b: GatingLists | undefined): boolean {
  const aa = a?.allowed;
  const ba = b?.allowed;
  if ((aa === undefined) !== (ba === undefined)) return false;
  return (
    deepEqual(asSet(aa), asSet(ba)) &&
    deepEqual(asSet(a?.excluded), asSet(b?.excluded)) &&
    deepEqual(asSet(a?.pending), asSet(b?.pending))
  );
}
