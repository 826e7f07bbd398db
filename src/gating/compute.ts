import { admissionOf, approvalStateOf, isGated, type AdmissionVerdict } from '../../machines/admission.js';
import { GATED_SCOPES, type ApprovalDecision, type DesiredMap, type GatingState } from '../../machines/types.js';
import type { LogLevel, Scope } from '../../machines/types.js';
import { setOwn } from '../util/own.js';

/** Gating lists that are already merged: absent `allowed` allows all, `[]` denies all. */
export interface SourceSettings {
  allowed?: string[];
  excluded?: string[];
  /** Named sets of servers and tools (docs/manage.md): a profile in use narrows what gating allows. */
  profiles?: Record<string, ProfileDefinition>;
  /** Tool permissions (docs/manage.md): `deny` globs over registered names hide those tools. */
  permissions?: ToolPermissions;
  /** `mcp.pinToolDefinitions` (docs/tool-definitions.md): the default of every server without its own. */
  pinToolDefinitions?: boolean;
  /** `mcp.pinnedTools`: raw tool names kept in the tool list under a budget, of every server without its own list. */
  pinnedTools?: string[];
  /** `mcp.logLevel` (docs/manage.md): the `logging/setLevel` of every server without its own `logLevel`. */
  logLevel?: LogLevel;
  /** Claude Code's own enable lists (config/claude-switches.ts), each with its file. */
  claudeCode?: ClaudeSwitchList[];
}

/** The enable lists one Claude Code file holds (only the ones it has). */
export interface ClaudeSwitchList {
  /** The file (absolute). */
  file: string;
  /** Key path to the object holding the lists: `['projects', <root>]` in `~/.claude.json`, `[]` in a settings file. */
  at: string[];
  disabledMcpServers?: string[];
  disabledMcpjsonServers?: string[];
  enabledMcpjsonServers?: string[];
  enableAllProjectMcpServers?: boolean;
}

/** Globs over registered tool names (`mcp__<server>__<tool>`, `*` any run of characters). */
export interface ToolPermissions {
  allow?: string[];
  ask?: string[];
  deny?: string[];
}

/** One profile: server names and registered tool names, `*` matching any run of characters. */
export interface ProfileDefinition {
  /** Servers the profile keeps; absent keeps every server. */
  servers?: string[];
  /** Registered tool names (`mcp__<server>__<tool>`) the profile keeps; absent keeps every tool of its servers. */
  tools?: string[];
}

/**
 * One source's gating settings and the scope that wrote them. Gating is
 * merged from these per scope, not by precedence, so that a less trusted
 * scope can only narrow what a more trusted one set (SPEC §2.3; see
 * `mergeGatingSettings`).
 */
export interface ScopedSettings {
  scope: Scope;
  /** The file the settings came from. */
  source: string;
  settings: SourceSettings;
}

export interface GatingSettings {
  allowed?: readonly string[];
  excluded?: readonly string[];
}

/** What gating is computed from: settings lists, the host's CLI bound, trust and approvals. */
export interface GatingInput {
  /**
   * `mcp.allowed` / `mcp.excluded`: either each source's lists (what
   * `assemble` returns), merged here by {@link mergeGatingSettings} with
   * `trusted` so an untrusted folder's files change nothing, or lists the
   * caller already merged. An absent `allowed` allows all; `[]` denies all.
   */
  settings: GatingSettings | readonly ScopedSettings[];
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
  /**
   * For each excluded name, the files whose `mcp.excluded` lists it (those
   * that count: an untrusted folder's project files do not), so a user is
   * told where to remove it. Empty when the settings came merged.
   */
  excludedBy: Record<string, string[]>;
}

function uniqueSorted(list: readonly string[]): string[] {
  return [...new Set(list)].sort();
}

/**
 * Merge each source's gating lists so that gating only narrows as trust
 * drops (SPEC §2.3): `excluded` is the union of every list, `allowed` the
 * intersection of every list that is present (`[]` anywhere denies all;
 * absent everywhere allows all). A checked-in project or workspace file can
 * therefore add exclusions and narrow `allowed`, but never un-exclude or
 * re-allow a server a user or CLI source gated. In an untrusted folder
 * (`trusted` false) the project and workspace sources are ignored entirely.
 * Order-independent; the lists are sorted and deduplicated. Pure.
 */
export function mergeGatingSettings(
  scoped: readonly ScopedSettings[],
  trusted: boolean,
): { allowed?: string[]; excluded: string[] } {
  let allowed: string[] | undefined;
  const excluded = new Set<string>();
  for (const { scope, settings } of scoped) {
    if (!trusted && GATED_SCOPES.has(scope)) continue;
    for (const name of settings.excluded ?? []) excluded.add(name);
    const list = settings.allowed;
    if (list === undefined) continue;
    allowed = allowed === undefined ? uniqueSorted(list) : allowed.filter((name) => list.includes(name));
  }
  return { ...(allowed === undefined ? {} : { allowed }), excluded: [...excluded].sort() };
}

function isScoped(settings: GatingInput['settings']): settings is readonly ScopedSettings[] {
  return Array.isArray(settings);
}

/** Which counted sources exclude each name (the same sources {@link mergeGatingSettings} reads). */
function excludingSources(scoped: readonly ScopedSettings[], trusted: boolean): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const { scope, source, settings } of scoped) {
    if (!trusted && GATED_SCOPES.has(scope)) continue;
    for (const name of new Set(settings.excluded ?? [])) {
      const files = Object.hasOwn(out, name) ? out[name]! : [];
      if (!files.includes(source)) files.push(source);
      setOwn(out, name, files);
    }
  }
  return out;
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
 * Per-source settings are merged with {@link mergeGatingSettings} under
 * `input.trusted`. `pending` / `rejected` list the gated servers whose approval state for
 * their current hash is `pending` / `rejected`, whatever else gates them.
 * Pure.
 */
export function computeGating(desired: DesiredMap, input: GatingInput): ComputedGating {
  const settings = isScoped(input.settings) ? mergeGatingSettings(input.settings, input.trusted) : input.settings;
  const allowed = effectiveAllowed(settings.allowed, input.cliAllowedServerNames);
  const excluded = uniqueSorted(settings.excluded ?? []);
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
    setOwn(verdicts, name, admissionOf(entry, gating)); // own property even for `__proto__`
    if (!isGated(entry)) continue;
    const state = approvalStateOf(entry, gating);
    if (state === 'pending') pending.push(name);
    else if (state === 'rejected') rejected.push(name);
  }

  return {
    gating,
    lists: { ...(allowed === undefined ? {} : { allowed: [...allowed] }), excluded: [...excluded], pending, rejected },
    verdicts,
    excludedBy: isScoped(input.settings) ? excludingSources(input.settings, input.trusted) : {},
  };
}
