import { admissionOf, approvalStateOf, isGated, type AdmissionVerdict } from '../../machines/admission.js';
import type { ApprovalDecision, DesiredMap, GatingState } from '../../machines/types.js';

/** What gating is computed from: settings lists, the host's CLI bound, trust and approvals. */
export interface GatingInput {
  /** `mcp.allowed` / `mcp.excluded` from settings. An absent `allowed` allows all; `[]` denies all. */
  settings: { allowed?: readonly string[]; excluded?: readonly string[] };
  /** `--allowed-mcp-server-names`, captured once at start; an upper bound settings cannot widen. */
  cliAllowedServerNames?: readonly string[];
  /** `isTrustedFolder()`. */
  trusted: boolean;
  /** Decisions by server name (persisted and session-only, already merged). */
  approvals: Readonly<Record<string, ApprovalDecision>>;
}

/** The result of {@link computeGating}. */
export interface ComputedGating {
  /** What admission (and the server machines) consume. */
  gating: GatingState;
  /**
   * The lists as reported to users and compared with `gatingEqual`: sorted,
   * without duplicates; `allowed` is absent when everything is allowed.
   */
  lists: { allowed?: string[]; excluded: string[]; pending: string[]; rejected: string[] };
  /** Admission verdict of every desired server, from `admissionOf`. */
  verdicts: Record<string, AdmissionVerdict>;
}

function uniqueSorted(list: readonly string[]): string[] {
  return [...new Set(list)].sort();
}

/**
 * The effective `allowed` list (SPEC §2.3): flag ∩ settings when both are
 * given, the flag alone when settings have no `allowed`, settings alone when
 * there is no flag, `undefined` (allow all) when neither. Settings can narrow
 * admission but never widen it past the flag. The result is sorted and
 * deduplicated; `[]` means deny all.
 */
export function effectiveAllowed(
  settingsAllowed: readonly string[] | undefined,
  cliBound: readonly string[] | undefined,
): string[] | undefined {
  if (settingsAllowed === undefined && cliBound === undefined) return undefined;
  if (cliBound === undefined) return uniqueSorted(settingsAllowed ?? []);
  if (settingsAllowed === undefined) return uniqueSorted(cliBound);
  const bound = new Set(cliBound);
  return uniqueSorted(settingsAllowed.filter((name) => bound.has(name)));
}

/**
 * Gating for a desired map (SPEC §2.3, §4): the effective lists, the
 * `GatingState` admission runs on, and each server's verdict (from
 * `admissionOf`, so the machines and this report always agree).
 * `pending` / `rejected` list the gated servers whose approval state for
 * their current hash is `pending` / `rejected`, whatever else gates them.
 * Pure.
 */
export function computeGating(desired: DesiredMap, input: GatingInput): ComputedGating {
  const allowed = effectiveAllowed(input.settings.allowed, input.cliAllowedServerNames);
  const excluded = uniqueSorted(input.settings.excluded ?? []);
  const gating: GatingState = {
    ...(allowed === undefined ? {} : { allowed }),
    excluded,
    trusted: input.trusted,
    approvals: input.approvals,
  };

  const pending: string[] = [];
  const rejected: string[] = [];
  const verdicts: Record<string, AdmissionVerdict> = {};
  for (const name of Object.keys(desired).sort()) {
    const entry = desired[name]!;
    verdicts[name] = admissionOf(entry, gating);
    if (!isGated(entry)) continue;
    const state = approvalStateOf(entry, gating);
    if (state === 'pending') pending.push(name);
    else if (state === 'rejected') rejected.push(name);
  }

  return {
    gating,
    lists: { ...(allowed === undefined ? {} : { allowed: [...allowed] }), excluded: [...excluded], pending, rejected },
    verdicts,
  };
}
