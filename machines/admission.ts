import { getOwn } from './own.js';
import { GATED_SCOPES, type DesiredServer, type GatingState } from './types.js';

/** The outcome of admission; anything but `admitted` is also the server's resting state. */
export type AdmissionVerdict =
  | 'disabled'
  | 'untrusted'
  | 'excluded'
  | 'not_allowed'
  | 'rejected'
  | 'pending_approval'
  | 'admitted';

/** Approval state of a gated server for its current config hash (SPEC §4). */
export type ApprovalState = 'approved' | 'rejected' | 'pending';

/** True when the entry's scope needs a user decision before it may connect. */
export function isGated(entry: Pick<DesiredServer, 'scope'>): boolean {
  return GATED_SCOPES.has(entry.scope);
}

/** `approved`/`rejected` when a decision exists for the current hash, else `pending`. */
export function approvalStateOf(entry: Pick<DesiredServer, 'name' | 'hash'>, gating: Pick<GatingState, 'approvals'>): ApprovalState {
  const d = getOwn(gating.approvals, entry.name);
  if (!d || d.hash !== entry.hash) return 'pending';
  return d.decision;
}

/**
 * Admission in the SPEC §5 order: disabled → untrusted → excluded →
 * not_allowed → rejected → pending_approval → admitted. Pure; used by the
 * server machine's guards and by the `config` command, so both always agree.
 */
export function admissionOf(entry: DesiredServer, gating: GatingState): AdmissionVerdict {
  if (entry.config.disabled === true) return 'disabled';
  const gated = isGated(entry);
  if (gated && !gating.trusted) return 'untrusted';
  if (gating.excluded.includes(entry.name)) return 'excluded';
  // In-process servers are the host's own code: never filtered by `allowed` (SPEC §2.3).
  if (entry.scope !== 'sdk' && gating.allowed !== undefined && !gating.allowed.includes(entry.name)) {
    return 'not_allowed';
  }
  if (gated) {
    const state = approvalStateOf(entry, gating);
    if (state === 'rejected') return 'rejected';
    if (state === 'pending') return 'pending_approval';
  }
  return 'admitted';
}
