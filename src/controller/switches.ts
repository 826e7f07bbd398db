/**
 * `setEnabled`: servers and tools switched on and off at runtime and
 * persisted (docs/manage.md). A switch lives in the host's own field
 * where its file has one (config/enablement.ts), else in the workspace state
 * file, or for this controller's life only. The config read is overlaid with
 * the state file's and the session's switches before anything is compared,
 * so a switch is an ordinary config change: a disabled server rests in
 * `disabled`, a disabled tool leaves the registry by the tool filter.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { DesiredMap, DesiredServer } from '../../machines/types.js';
import { configHash } from '../config/identity.js';
import { HOST_SWITCHES, locateEntry, writeHostSwitch, type EntryLocation, type HostSwitchResult } from '../config/enablement.js';
import { claudeDisabledBy, writeClaudeSwitch, type ClaudeSwitchList } from '../config/claude-switches.js';
import { formatForPath, formats } from '../config/formats.js';
import { isYamlPath, type ConfigSource } from '../config/sources.js';
import { defaultWorkspaceStatePath, WorkspaceStateFile, type ServerToggle } from '../config/workspace-state.js';
import { ErrorCode, McpReconcilerError } from '../errors.js';
import { getOwn, setOwn } from '../util/own.js';
import { sanitiseNamePart } from '../registry/naming.js';
import type { ScopedSettings } from '../gating/compute.js';
import { matchesAny } from '../util/glob.js';
import { findProfile, narrow, profileNames, rawPatterns } from './profiles.js';

/** Options of `setEnabled`. */
export interface SetEnabledOptions {
  /** Switch only these tools (raw names, as the server lists them, or registered `mcp__server__tool` names). */
  tools?: readonly string[];
  /** Keep the switch in a file (default), or for this controller's life only. */
  persist?: boolean;
}

/** What `setEnabled` changed and where. */
export interface SetEnabledResult {
  server: string;
  enabled: boolean;
  /** The raw tool names switched, when tools were. */
  tools?: string[];
  /** Where the switch is kept: the host's file, the workspace state file, or this session. */
  where: 'host' | 'state' | 'session';
  /** The file written (`host`, `state`). */
  file?: string;
  /** The host's field, e.g. `disabled`, `enabled`, `disabledTools`. */
  field?: string;
  /** The previous version of a host file, kept. */
  backup?: string;
}

/** What the switches need from the controller. */
export interface SwitchDeps {
  /** The workspace root, canonical once started. */
  root(): string;
  env: NodeJS.ProcessEnv;
  /** The controller's `workspaceStateFile` option. */
  stateFile: string | false | undefined;
  /** The controller's `profile` option. */
  profile?: string | undefined;
  sources(): readonly ConfigSource[];
  warn(message: string): void;
}

/** Who switched a server or tool off, for `why`. */
type Origin = string;

/** A session switch: `true` on, `false` off. */
interface SessionSwitch {
  server?: boolean;
  tools: Map<string, boolean>;
}

/** The switches of one workspace, and the overlay they make on the config read. */
export class Switches {
  private readonly session = new Map<string, SessionSwitch>();
  private disabledBy = new Map<string, Origin>();
  private toolsDisabledBy = new Map<string, Map<string, Origin>>();
  private lastProblem: string | undefined;
  /** The profile in use, if any (docs/manage.md). */
  private profile: string | undefined;
  /** Servers the profile leaves out, and the raw-name patterns it keeps of the others. */
  private profileOff = new Map<string, Origin>();
  private profileTools = new Map<string, { patterns: string[]; origin: Origin }>();
  private knownProfiles: string[] = [];
  private lastSettings: readonly ScopedSettings[] = [];
  /** Claude Code's enable lists at the last overlay. */
  private claudeLists: readonly ClaudeSwitchList[] = [];
  /** Raw-name patterns `permissions.deny` hides, per server: each file's (settings or the entry's own) with what it is. */
  private denied = new Map<string, { patterns: string[]; origin: Origin }[]>();

  constructor(private readonly deps: SwitchDeps) {
    this.profile = deps.profile;
  }

  /** The profile in use. */
  get activeProfile(): string | undefined {
    return this.profile;
  }

  /** Use profile `name` from the next overlay on (`undefined`: none). */
  setProfile(name: string | undefined): void {
    this.profile = name;
  }

  /** The settings of the last overlay (permissions, profiles). */
  get settings(): readonly ScopedSettings[] {
    return this.lastSettings;
  }

  /** The workspace state file, when switches are kept in one. */
  stateFile(): WorkspaceStateFile | undefined {
    return this.file();
  }

  /** The profile names the settings defined at the last overlay. */
  get profiles(): readonly string[] {
    return this.knownProfiles;
  }

  /** The profile that leaves `server` out, when one does: its name. */
  serverProfile(server: string): string | undefined {
    return this.profileOff.has(server) ? this.profile : undefined;
  }

  /** The `permissions.deny` that hides raw tool `tool` of `server`, when one does. */
  deniedOrigin(server: string, tool: string): string | undefined {
    const by = (this.denied.get(server) ?? []).filter((d) => matchesAny(d.patterns, tool)).map((d) => d.origin);
    return by.length > 0 ? by.join(' and ') : undefined;
  }

  /** Why the profile leaves raw tool `tool` of `server` out, when it does. */
  profileToolOrigin(server: string, tool: string): string | undefined {
    const kept = this.profileTools.get(server);
    return kept && !matchesAny(kept.patterns, tool) ? kept.origin : undefined;
  }

  /** The workspace state file, or `undefined` when switches are not persisted there. */
  get path(): string | undefined {
    const { stateFile } = this.deps;
    if (stateFile === false) return undefined;
    return stateFile !== undefined ? path.resolve(this.deps.root(), stateFile) : defaultWorkspaceStatePath(this.deps.root(), this.deps.env);
  }

  private file(): WorkspaceStateFile | undefined {
    const p = this.path;
    return p === undefined ? undefined : new WorkspaceStateFile(p);
  }

  /** Who disabled `server` (a file, the session, the profile), when it is disabled. */
  serverOrigin(server: string): string | undefined {
    return this.disabledBy.get(server) ?? this.profileOff.get(server);
  }

  /** Who disabled raw tool `tool` of `server`, when it is. */
  toolOrigin(server: string, tool: string): string | undefined {
    return this.toolsDisabledBy.get(server)?.get(tool);
  }

  /**
   * `desired` with the state file's and the session's switches applied (a
   * new entry, with its config hash, for each server they change), and the
   * origins of every switch recorded for {@link serverOrigin}.
   */
  async overlay(desired: DesiredMap, settings: readonly ScopedSettings[]): Promise<DesiredMap> {
    const file = this.file();
    const read = file ? await file.read() : undefined;
    if (read?.problem !== this.lastProblem) {
      this.lastProblem = read?.problem;
      if (read?.problem) this.deps.warn(read.problem);
    }
    const stored = read?.state.servers ?? {};
    const statePath = file?.path;
    const disabledBy = new Map<string, Origin>();
    const toolsDisabledBy = new Map<string, Map<string, Origin>>();
    const out: Record<string, DesiredServer> = {};
    this.knownProfiles = profileNames(settings);
    this.lastSettings = settings;
    const profile = this.profile === undefined ? undefined : findProfile(settings, this.profile);
    // A profile no file defines keeps nothing: it can only ever narrow.
    const profileOrigin = this.profile === undefined ? undefined : profile ? `profile "${this.profile}" (${profile.file})` : `profile "${this.profile}", which no settings file defines`;
    const profileOff = new Map<string, Origin>();
    const profileTools = new Map<string, { patterns: string[]; origin: Origin }>();
    // Every file's deny list applies, and each entry's own: a deny only ever hides.
    const denyFiles = settings.filter((s) => s.settings.permissions?.deny?.length);
    const claudeLists = settings.flatMap((s) => s.settings.claudeCode ?? []);
    this.claudeLists = claudeLists;
    const denied = new Map<string, { patterns: string[]; origin: Origin }[]>();
    for (const [name, entry] of Object.entries(desired)) {
      const fromFile: ServerToggle = getOwn(stored, name) ?? {};
      const session = this.session.get(name);
      const config = entry.config;
      const hostOff = config.disabled === true;
      const narrowed = profileOrigin === undefined ? undefined : profile ? narrow(profile.definition, name, config) : { off: true };
      if (narrowed?.off) profileOff.set(name, profileOrigin!);
      if (narrowed?.includeTools) profileTools.set(name, { patterns: narrowed.includeTools, origin: profileOrigin! });
      // Claude Code's own lists (`disabledMcpServers`, `disabledMcpjsonServers`) switch it off as its own field would.
      const claudeOff = claudeLists.length > 0 && path.isAbsolute(entry.source) ? claudeDisabledBy(claudeLists, name, entry.scope) : undefined;
      const switchedOff = session?.server === undefined ? hostOff || fromFile.disabled === true || claudeOff !== undefined : !session.server;
      const off = switchedOff || narrowed?.off === true;
      // A runtime, sdk or inline entry has no file to name: `why` then says "in its config".
      const hostFile = path.isAbsolute(entry.source) ? entry.source : undefined;
      const origin =
        session?.server === false ? 'this session (setEnabled)' : fromFile.disabled ? `\`mcp-reconciler disable\` (${statePath})` : hostOff ? hostFile : (claudeOff ?? hostFile);
      if (switchedOff && origin !== undefined) disabledBy.set(name, origin);
      const origins = new Map<string, Origin | undefined>();
      for (const t of config.excludeTools ?? []) origins.set(t, hostFile);
      for (const t of fromFile.disabledTools ?? []) origins.set(t, `\`mcp-reconciler disable --tool\` (${statePath})`);
      for (const [t, on] of session?.tools ?? []) {
        if (on) origins.delete(t);
        else origins.set(t, 'this session (setEnabled)');
      }
      const denies = denyRules(name, entry, denyFiles);
      if (denies.length > 0) denied.set(name, denies);
      for (const p of denies.flatMap((d) => d.patterns)) if (!origins.has(p)) origins.set(p, undefined);
      const named = new Map([...origins].filter((e): e is [string, Origin] => e[1] !== undefined));
      if (named.size > 0) toolsDisabledBy.set(name, named);
      const exclude = [...origins.keys()];
      const sameExclude = exclude.length === (config.excludeTools ?? []).length && exclude.every((t, i) => t === config.excludeTools?.[i]);
      const include = narrowed?.includeTools;
      if (off === hostOff && sameExclude && include === undefined) {
        setOwn(out, name, entry);
        continue;
      }
      const next = { ...config };
      if (off) next.disabled = true;
      else delete next.disabled;
      if (exclude.length > 0) next.excludeTools = exclude;
      else delete next.excludeTools;
      if (include !== undefined) next.includeTools = include;
      setOwn(out, name, { ...entry, config: next, configHash: configHash(next) });
    }
    this.disabledBy = disabledBy;
    this.toolsDisabledBy = toolsDisabledBy;
    this.profileOff = profileOff;
    this.profileTools = profileTools;
    this.denied = denied;
    return out;
  }

  /**
   * Switch `server` (or some of its tools) on or off: in the host's own
   * field, else the workspace state file, else (or with `persist: false`)
   * for this session. `entry` is the server's entry as read from the files
   * (before the overlay).
   */
  async set(entry: DesiredServer, on: boolean, options: SetEnabledOptions = {}): Promise<SetEnabledResult> {
    const server = entry.name;
    const tools = options.tools ? rawToolNames(server, options.tools) : undefined;
    const result = (where: SetEnabledResult['where'], extra: Partial<SetEnabledResult> = {}): SetEnabledResult => ({
      server,
      enabled: on,
      ...(tools ? { tools } : {}),
      where,
      ...extra,
    });
    const session = this.session.get(server) ?? { tools: new Map<string, boolean>() };
    if (options.persist === false) {
      if (tools) for (const t of tools) session.tools.set(t, on);
      else session.server = on;
      this.session.set(server, session);
      return result('session');
    }
    // A persisted switch replaces this session's on the same things.
    if (tools) for (const t of tools) session.tools.delete(t);
    else delete session.server;
    const loc = await this.locate(entry);
    const host = loc ? await writeHostSwitch(loc, server, on, tools) : tools === undefined ? await this.claudeSwitch(entry, on) : undefined;
    const file = this.file();
    let stateWritten = false;
    // Enabling clears the state file's switch too: a server may have been switched off there before.
    if (file && (on || host === undefined)) {
      const before = (await file.read()).state.servers;
      const had = getOwn(before, server);
      const needed = on ? had !== undefined && (tools ? tools.some((t) => had.disabledTools?.includes(t)) : had.disabled === true) : true;
      if (needed) {
        await file.update(server, (t) => {
          if (tools) return { ...t, disabledTools: on ? (t.disabledTools ?? []).filter((x) => !tools.includes(x)) : [...(t.disabledTools ?? []), ...tools] };
          return { ...t, disabled: !on };
        });
        stateWritten = true;
      }
    }
    if (host && (host.written || !stateWritten)) return result('host', { file: host.file, field: host.field, ...(host.backup ? { backup: host.backup } : {}) });
    if (file) return result('state', { file: file.path });
    // Nowhere to keep it: this session only.
    if (tools) for (const t of tools) session.tools.set(t, on);
    else session.server = on;
    this.session.set(server, session);
    return result('session');
  }

  /**
   * A Claude Code server switched in Claude Code's own lists
   * (claude-switches.ts); `undefined` for other hosts' servers. Off writes
   * `projects[<root>]` of `~/.claude.json`; on clears every Claude Code list
   * that switches it off.
   */
  private async claudeSwitch(entry: DesiredServer, on: boolean): Promise<HostSwitchResult | undefined> {
    const local = this.deps.sources().find((s) => s.format === 'claude-code' && s.scope === 'local' && s.at?.length === 2 && s.at[0] === 'projects');
    const source = this.deps.sources().find((s) => s.path === entry.source && s.scope === entry.scope);
    if (!local || source?.format !== 'claude-code' || isYamlPath(source.path)) return undefined;
    const writes = await writeClaudeSwitch({ claudeJson: local.path, root: local.at![1]!, name: entry.name, scope: entry.scope, on, lists: this.claudeLists });
    if (writes.length === 0) return undefined;
    const written = writes.filter((w) => w.written);
    const first = written[0] ?? writes[0]!;
    return { file: written.map((w) => w.file).join(' and ') || first.file, field: [...new Set(writes.map((w) => w.field))].join(', '), written: written.length > 0, ...(first.backup ? { backup: first.backup } : {}) };
  }

  /** Where the entry is in its host file, when that file can be edited and its host has the field. */
  private async locate(entry: DesiredServer): Promise<EntryLocation | undefined> {
    const source = this.deps.sources().find((s) => s.path === entry.source && s.scope === entry.scope);
    if (source === undefined || isYamlPath(source.path)) return undefined;
    const format = source.format ?? formatForPath(source.path) ?? 'default';
    const sw = HOST_SWITCHES[format];
    if (sw.server === undefined && sw.tools === undefined) return undefined;
    const text = await readFile(source.path, 'utf8').catch(() => undefined);
    if (text === undefined) return undefined;
    return locateEntry({ ...source, format }, text, entry.name, source.keys ?? formats[format].keys);
  }
}

/**
 * The `permissions.deny` rules that apply to server `name`, as raw-name
 * patterns: the settings files' (registered names) and the entry's own
 * (its tool names, bare or `mcp__<server>__<tool>`), each with who says so.
 */
function denyRules(name: string, entry: DesiredServer, files: readonly ScopedSettings[]): { patterns: string[]; origin: Origin }[] {
  const out: { patterns: string[]; origin: Origin }[] = [];
  for (const s of files) {
    const patterns = rawPatterns(name, s.settings.permissions!.deny!);
    if (patterns.length > 0) out.push({ patterns, origin: `permissions.deny in ${s.source}` });
  }
  const own = entry.config.permissions?.deny;
  if (own?.length) {
    const patterns = rawPatterns(name, own);
    if (patterns.length > 0) out.push({ patterns, origin: `the permissions.deny of server "${name}" in ${entryFile(entry)}` });
  }
  return out;
}

/** The file an entry came from, for messages; code-added entries name their scope. */
export function entryFile(entry: DesiredServer): string {
  return path.isAbsolute(entry.source) ? entry.source : `its ${entry.scope} config`;
}

/** Raw tool names from what a user typed: `mcp__server__tool` loses its prefix. */
function rawToolNames(server: string, tools: readonly string[]): string[] {
  if (tools.length === 0) throw new McpReconcilerError(ErrorCode.Usage, 'no tool named', { hint: 'give --tool NAME, or leave it out to switch the whole server' });
  const prefix = `mcp__${sanitiseNamePart(server)}__`;
  return [...new Set(tools.map((t) => (t.startsWith(prefix) ? t.slice(prefix.length) : t)))];
}
