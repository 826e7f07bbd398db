import type { ApprovalDecision, DesiredMap } from '../../machines/types.js';
import { configHash } from '../config/identity.js';
import { getOwn, setOwn } from '../util/own.js';

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
