import type { ApprovalDecision, DesiredMap, ServerConfig } from '../../machines/types.js';
import { connectionIdentity } from '../gating/fingerprint.js';
import { identityOf, stableHash } from '../util/stable-hash.js';
import { getOwn, setOwn } from '../config/own.js';

/**
 * Stable hash of what an approval is about (SPEC §4, narrowed by issue 15):
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

/**
 * Stored decisions as they apply to `desired`: a decision recorded under
 * the legacy hash of a server's current config counts as made for its
 * current hash, so upgrading asks nobody again.
 */
export function decisionsFor(stored: Readonly<Record<string, ApprovalDecision>>, desired: DesiredMap): Record<string, ApprovalDecision> {
  const out: Record<string, ApprovalDecision> = {};
  for (const [name, d] of Object.entries(stored)) {
    const entry = getOwn(desired, name);
    const current = entry && d.hash !== entry.hash && d.hash === (entry.configHash ?? configHash(entry.config)) ? entry.hash : d.hash;
    setOwn(out, name, { hash: current, decision: d.decision });
  }
  return out;
}
