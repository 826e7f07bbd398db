import { approvalStateOf, isGated, type ApprovalState } from '../../machines/admission.js';
import type { ApprovalDecision, DesiredMap } from '../../machines/types.js';
import { setOwn } from '../util/own.js';

/**
 * Approval state of every gated server in `desired` for its current config
 * hash (SPEC §4): `approved` / `rejected` when a decision exists for that
 * hash, otherwise `pending`. Servers from ungated scopes are left out.
 */
export function approvalStates(
  desired: DesiredMap,
  decisions: Readonly<Record<string, ApprovalDecision>>,
): Record<string, ApprovalState> {
  const out: Record<string, ApprovalState> = {};
  for (const name of Object.keys(desired).sort()) {
    const entry = desired[name]!; // an own key: it came from Object.keys
    if (isGated(entry)) setOwn(out, name, approvalStateOf(entry, { approvals: decisions }));
  }
  return out;
}

/**
 * The servers to ask the user about (SPEC §4): gated servers whose state is
 * strictly `pending`, sorted. A rejected server is not asked again until its
 * config (and so its hash) changes. Computed from the decisions, not from a
 * name diff, so it can be called after every reconcile.
 */
export function promptableServers(desired: DesiredMap, decisions: Readonly<Record<string, ApprovalDecision>>): string[] {
  return Object.entries(approvalStates(desired, decisions))
    .filter(([, state]) => state === 'pending')
    .map(([name]) => name);
}
