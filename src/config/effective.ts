import type { ApprovalDecision, DesiredMap } from '../../machines/types.js';
import { computeGating, type ComputedGating, type ScopedSettings } from '../gating/compute.js';
import { nameCollisionIssues } from './name-collisions.js';
import type { ConfigIssue } from './sources.js';

/** What one read of the config sources found (see `ConfigReader.read`). */
export interface FoundConfig {
  desired: DesiredMap;
  /** Each source's `mcp.allowed` / `mcp.excluded`, merged under the trust given (SPEC §2.3). */
  settings: readonly ScopedSettings[];
  issues: readonly ConfigIssue[];
}

/** What gates the servers of a read besides its own settings. */
export interface Gates {
  /** Decisions by server name (persisted and session-only, already merged). */
  approvals: Readonly<Record<string, ApprovalDecision>>;
  /** The host's `--allowed-mcp-server-names`: an upper bound the settings cannot widen. */
  cliAllowedServerNames?: readonly string[] | undefined;
  /** Whether the workspace folder is trusted. */
  trusted: boolean;
}

/** The effective config of a workspace: its servers, every config issue, and each server's gating verdict. */
export interface EffectiveConfig {
  desired: DesiredMap;
  /** The read's issues, then one per server name that cannot run (SPEC §2.4). */
  issues: ConfigIssue[];
  gating: ComputedGating;
}

/**
 * The effective config of one read under `gates` (SPEC §2–§4). Pure: the
 * controller (before it tells the machines) and `mcp-reconciler config` (to
 * show it) both compute it here.
 */
export function effectiveConfig(read: FoundConfig, gates: Gates): EffectiveConfig {
  const issues = [...read.issues, ...nameCollisionIssues(read.desired)];
  const gating = computeGating(read.desired, {
    settings: read.settings,
    ...(gates.cliAllowedServerNames ? { cliAllowedServerNames: gates.cliAllowedServerNames } : {}),
    trusted: gates.trusted,
    approvals: gates.approvals,
  });
  return { desired: read.desired, issues, gating };
}
