import type { ServerConfig } from '../../machines/types.js';
import { identityOf, stableHash } from '../util/stable-hash.js';

/**
 * Stable hash of the full server config: what an approval is bound to
 * (SPEC §4). Any edit to any field asks again; key order does not matter.
 * Except `startup` and `idleTimeoutMs` (issue 13): they decide when the
 * approved command runs, never what runs, so changing them asks nothing.
 */
export function approvalHash(config: ServerConfig): string {
  const { instance, startup, idleTimeoutMs, ...rest } = config;
  const body: Record<string, unknown> = { ...rest };
  if (instance !== null && typeof instance === 'object') body.instance = identityOf(instance);
  return stableHash(body);
}
