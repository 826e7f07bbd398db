import { readFileSync, statSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { parseEnv } from 'node:util';
import { LOG_LEVELS, type LogLevel, type ServerConfig } from '../../machines/types.js';
import { ErrorCode } from '../errors.js';
import { expandServerConfig, type ExpandContext } from './expand.js';
import { formatForPath, formats, isVscodeShaped, type ConfigFormat } from './formats.js';
import { checkConfigSize, isSyntaxProblem, MAX_CONFIG_BYTES, parseText, type ParsedText } from './parse.js';
import { getOwn, setOwn } from '../util/own.js';
import { checkExpandedEntry, validateServerEntry, type EntryProblem } from './schema.js';
import { formatFieldPath } from './field-path.js';
import { claudeSettingsFiles, readClaudeLists, readClaudeSettingsFile } from './claude-switches.js';
import { isYamlPath, type ConfigIssue, type ConfigSource } from './sources.js';

/** Gating settings as written in one file (SPEC §2.3); `allowed: []` is kept (deny all). */export type { ScopedSettings, SourceSettings } from '../gating/compute.js';
import type { ProfileDefinition, SourceSettings, ToolPermissions } from '../gating/compute.js';
import { isPlainObject } from '../util/persist.js';

/** One source file after parse, validation and expansion. */
export interface LoadedSource {
  source: ConfigSource;
  /** False when the file does not exist (not an error: it may be created later). */
  exists: boolean;
  /** The valid entries; invalid ones are left out and reported in `issues`. */
  servers: Record<string, ServerConfig>;
  settings: SourceSettings;
  issues: ConfigIssue[];
  /** The whole file is unparseable: callers keep their last good config for it. */
  fatal: boolean;
  /** Inputs and host variables the file needs that nothing answered (their servers are skipped). */
  pendingInputs?: PendingInput[];
  /** Answers to `password` inputs that went into the servers: never print them. */
  secrets?: string[];
  /**
   * Other files the servers were read from (`envFile`, `{file:path}`,
   * `.vscode/settings.json` for `${config:…}`), absolute, also when missing:
   * a change to one of them must re-read this source.
   */
  extraWatchPaths?: string[];
}

function empty(source: ConfigSource, exists: boolean): LoadedSource {
  return { source, exists, servers: {}, settings: {}, issues: [], fatal: false };
}

function fatalResult(source: ConfigSource, issue: Omit<ConfigIssue, 'file'>): LoadedSource {
  return { ...empty(source, true), fatal: true, issues: [{ file: source.path, code: ErrorCode.ConfigInvalid, ...issue }] };
}

/** The object at key path `at` inside `value`, or `{}` when the path leads nowhere. */
function descend(value: Record<string, unknown>, at: readonly string[]): Record<string, unknown> {
  let node: unknown = value;
  for (const key of at) node = isPlainObject(node) && Object.hasOwn(node, key) ? node[key] : undefined;
  return isPlainObject(node) ? node : {};
}

function readSettings(root: Record<string, unknown>, doc: ParsedText, atPath: readonly string[], file: string, issues: ConfigIssue[]): SourceSettings {
  const settings: SourceSettings = {};
  const nested = isPlainObject(root.mcp) ? root.mcp : undefined;
  const isNames = (raw: unknown): raw is string[] => Array.isArray(raw) && raw.every((x) => typeof x === 'string');
  // Each `mcp` key: how to check its value, and what to say when it is wrong.
  const keys = {
    allowed: [isNames, 'must be a list of server names; ignored'],
    excluded: [isNames, 'must be a list of server names; ignored'],
    pinToolDefinitions: [(raw: unknown): raw is boolean => typeof raw === 'boolean', 'must be true or false; ignored'],
    pinnedTools: [isNames, 'must be a list of tool names as the server lists them; ignored'],
    logLevel: [(raw: unknown): raw is LogLevel => (LOG_LEVELS as readonly unknown[]).includes(raw), `must be one of ${LOG_LEVELS.join(', ')}; ignored`],
  } as const;
  for (const [key, [valid, message]] of Object.entries(keys) as [keyof typeof keys, (typeof keys)[keyof typeof keys]][]) {
    // The nested form wins over the flat dotted key when a file has both.
    const fromNested = nested !== undefined && nested[key] !== undefined;
    const raw = fromNested ? nested[key] : root[`mcp.${key}`];
    if (raw === undefined || raw === null) continue;
    if (valid(raw)) {
      (settings as Record<string, unknown>)[key] = Array.isArray(raw) ? [...raw] : raw;
      continue;
    }
    const pos = doc.locate([...atPath, ...(fromNested ? ['mcp', key] : [`mcp.${key}`])]);
    issues.push({ file, line: pos?.line, column: pos?.column, field: `mcp.${key}`, message, code: ErrorCode.ConfigInvalid });
  }
  const profiles = readProfiles(root.profiles, (path, message) => {
    const pos = doc.locate([...atPath, 'profiles', ...path]);
    issues.push({ file, line: pos?.line, column: pos?.column, field: ['profiles', ...path].join('.'), message, code: ErrorCode.ConfigInvalid });
  });
  if (profiles !== undefined) settings.profiles = profiles;
  const permissions = root.permissions;
  if (isPlainObject(permissions)) {
    const out: ToolPermissions = {};
    for (const key of ['allow', 'ask', 'deny'] as const) {
      const v = permissions[key];
      if (v === undefined || v === null) continue;
      if (Array.isArray(v) && v.every((x) => typeof x === 'string')) out[key] = [...v];
      else {
        const pos = doc.locate([...atPath, 'permissions', key]);
        issues.push({ file, line: pos?.line, column: pos?.column, field: `permissions.${key}`, message: 'must be a list of tool names (mcp__<server>__<tool>, "*" matching anything); ignored', code: ErrorCode.ConfigInvalid });
      }
    }
    settings.permissions = out;
  }
  return settings;
}

/** `profiles` as written in a settings file; a malformed profile is reported and left out, the others stay. */
function readProfiles(raw: unknown, problem: (path: string[], message: string) => void): Record<string, ProfileDefinition> | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (!isPlainObject(raw)) {
    problem([], 'must be an object of profiles, e.g. { "research": { "servers": ["search"], "tools": ["mcp__search__*"] } }; ignored');
    return undefined;
  }
  const out: Record<string, ProfileDefinition> = {};
  for (const [name, def] of Object.entries(raw)) {
    if (!isPlainObject(def)) {
      problem([name], 'must be an object with "servers" and/or "tools" lists; this profile is ignored');
      continue;
    }
    const profile: ProfileDefinition = {};
    let ok = true;
    for (const key of ['servers', 'tools'] as const) {
      const v = def[key];
      if (v === undefined || v === null) continue;
      if (Array.isArray(v) && v.every((x) => typeof x === 'string')) profile[key] = [...v];
      else {
        problem([name, key], `must be a list of ${key === 'servers' ? 'server names' : 'tool names (mcp__<server>__<tool>)'}, "*" matching anything; this profile is ignored`);
        ok = false;
      }
    }
    if (ok) setOwn(out, name, profile);
  }
  return out;
}

/** A VS Code `inputs` declaration, or a host variable, as passed to `resolveInput`. */
export interface InputSpec {
  /** `promptString` / `pickString` (VS Code), or `hostVariable` for a variable the host sets (`CLAUDE_PLUGIN_ROOT`). */
  type: string;
  description?: string;
  /** A secret: never echo or print the answer. */
  password?: boolean;
  default?: string;
  options?: unknown[];
  /** The file that asks for it. */
  file: string;
}

/**
 * The host's answer to `${input:id}` (or to a host variable such as
 * `CLAUDE_PLUGIN_ROOT`), or `undefined` when it has none. Called on every
 * load of a file that needs it: hosts that prompt should remember answers.
 */
export type InputResolver = (id: string, spec: InputSpec) => string | undefined | Promise<string | undefined>;

/** Options of {@link parseSourceText} and {@link loadSource}. */
export interface LoadOptions {
  /** Answers to inputs and host variables, by the name written in the braces: `input:api-key`, `CLAUDE_PLUGIN_ROOT`. */
  answers?: Readonly<Record<string, string>>;
  /** Asks the host for inputs the file needs (`loadSource` only). */
  resolveInput?: InputResolver;
  /** The user's home, for `${userHome}` and `~/`; default `env.HOME`. */
  home?: string;
}

/** An input or host variable a file needs and nothing answered yet. */
export interface PendingInput {
  /** As written in the braces: `input:api-key`, `CLAUDE_PLUGIN_ROOT`. */
  variable: string;
  /** The id passed to `resolveInput`: `api-key`, `CLAUDE_PLUGIN_ROOT`. */
  id: string;
  spec: InputSpec;
}

/** `MCP_RECONCILER_INPUT_API_KEY` for the input `api-key`: where a CLI user can answer an input. */
export function inputEnvName(id: string): string {
  return `MCP_RECONCILER_INPUT_${id.replace(/[^A-Za-z0-9]/g, '_').toUpperCase()}`;
}

/** Unknown keys named in a file's warning, at most. */
const MAX_NAMED_KEYS = 20;

/** Env files (`envFile`) are config: the same size cap applies. */
function readEnvFile(path: string): { env: Record<string, string> } | { error: string } {
  try {
    if (statSync(path).size > MAX_CONFIG_BYTES) return { error: `is over the ${MAX_CONFIG_BYTES / (1024 * 1024)} MB limit for a config file` };
    const parsed = parseEnv(readFileSync(path, 'utf8'));
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(parsed)) if (typeof v === 'string') setOwn(env, k, v);
    return { env };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return { error: code === 'ENOENT' ? 'does not exist' : `cannot be read: ${err instanceof Error ? err.message : String(err)}` };
  }
}

/** A small text file for opencode's `{file:path}`, trimmed as opencode does; `undefined` when unreadable. */
function readSmallFile(path: string): string | undefined {
  try {
    if (statSync(path).size > MAX_CONFIG_BYTES) return undefined;
    return readFileSync(path, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** VS Code's `${config:key}`: the workspace's `.vscode/settings.json`, flat dotted key first, then nested. */
function vscodeSetting(root: string | undefined): (key: string) => string | undefined {
  let settings: Record<string, unknown> | undefined;
  return (key) => {
    if (root === undefined) return undefined;
    if (settings === undefined) {
      const path = join(root, '.vscode', 'settings.json');
      const text = readSmallFile(path);
      const parsed = text === undefined ? undefined : parseText(text, 'json');
      settings = parsed && !isSyntaxProblem(parsed) && isPlainObject(parsed.value) ? parsed.value : {};
    }
    let v: unknown = Object.hasOwn(settings, key) ? settings[key] : undefined;
    if (v === undefined) {
      v = settings;
      for (const part of key.split('.')) v = isPlainObject(v) && Object.hasOwn(v, part) ? v[part] : undefined;
    }
    return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? String(v) : undefined;
  };
}

function declaredInputs(root: Record<string, unknown>, file: string): Map<string, InputSpec> {
  const inputs = new Map<string, InputSpec>();
  if (!Array.isArray(root.inputs)) return inputs;
  for (const item of root.inputs) {
    if (!isPlainObject(item) || typeof item.id !== 'string') continue;
    inputs.set(item.id, {
      type: typeof item.type === 'string' ? item.type : 'promptString',
      ...(typeof item.description === 'string' ? { description: item.description } : {}),
      ...(item.password === true ? { password: true } : {}),
      ...(typeof item.default === 'string' ? { default: item.default } : {}),
      ...(Array.isArray(item.options) ? { options: item.options } : {}),
      file,
    });
  }
  return inputs;
}

/** The format a source is read in: explicit, else judged from the path, else from the content, else `default`. */
function formatOf(source: ConfigSource, root: Record<string, unknown>): ConfigFormat {
  if (source.format !== undefined) return formats[source.format];
  if (source.keys !== undefined) return formats.default;
  const byPath = formatForPath(source.path);
  if (byPath !== undefined) return formats[byPath];
  return isVscodeShaped(root) ? formats.vscode : formats.default;
}

/**
 * Parse one source's text (sync; only an entry's `envFile` and opencode's
 * `{file:…}` are read from disk). The source's format (`source.format`,
 * else judged from the path or, for `--config` files, from the content)
 * decides which keys hold servers, how each host-shaped entry reads, and how
 * variables expand (see `formats.ts`); `mcp.allowed` / `mcp.excluded` are
 * read too. Invalid entries, and entries whose variables the host would
 * refuse, are dropped with an issue naming file, line, server and field; the
 * other entries still load. Keys the host does not know are named in one
 * warning per file. A syntax error makes the result `fatal` with no servers.
 * A relative `cwd` is resolved against the file's directory.
 */
export function parseSourceText(text: string, source: ConfigSource, env: NodeJS.ProcessEnv, options: LoadOptions = {}): LoadedSource {
  try {
    return parseSourceTextUnguarded(text, source, env, options);
  } catch (err) {
    // Last line of defence (the size and depth limits should make this unreachable):
    // one bad file must become one issue, never take the other files' servers down.
    return fatalResult(source, {
      message: `cannot load the file: ${err instanceof Error ? err.message : String(err)}; fix or remove it (the other config files still load)`,
    });
  }
}

function unsetMessage(variable: string, format: ConfigFormat, inputs: Map<string, InputSpec>, root: string | undefined): string {
  if (variable.startsWith('input:')) {
    const id = variable.slice(6);
    const spec = inputs.get(id);
    if (spec === undefined) return `\${${variable}} is not declared in this file's "inputs", so ${format.host} cannot ask for it: declare it there; server skipped`;
    const what = spec.description ? ` ("${spec.description}")` : '';
    return `\${${variable}} is an input${what} that nothing answered, so the server is skipped: set ${inputEnvName(id)}, or run \`mcp-reconciler config\` in a terminal once to be asked (the answer is remembered for this workspace; library hosts: the resolveInput option)`;
  }
  if (variable.startsWith('config:')) {
    const where = root !== undefined ? join(root, '.vscode', 'settings.json') : '.vscode/settings.json';
    return `\${${variable}} names a ${format.host} setting that is not set in ${where}: set "${variable.slice(7)}" there; server skipped`;
  }
  if (variable.startsWith('file:')) return `{${variable}} cannot be read: create the file or fix the path; server skipped`;
  if (format.hostVariables?.includes(variable)) {
    return `\${${variable}} is set by ${format.host} itself (for plugin servers), not by you: set ${variable} to the folder it means, or answer it from the host's resolveInput; server skipped`;
  }
  return `\${${variable}} is not set and has no default (set it, or write \${${variable}:-default}); server skipped`;
}

/** What reading one file's entries shares: the file, where its results and issues go. */
interface FileReading {
  source: ConfigSource;
  file: string;
  format: ConfigFormat;
  env: NodeJS.ProcessEnv;
  inputs: Map<string, InputSpec>;
  hostVariables: Set<string>;
  expandContext: ExpandContext;
  servers: Record<string, ServerConfig>;
  issues: ConfigIssue[];
  pending: Map<string, PendingInput>;
  secrets: Set<string>;
  /** Files read besides this one (`extraWatchPaths`). */
  watched: Set<string>;
  /** `server.key` of every key the host does not know. */
  unknown: string[];
  /** Report problem `p` of the value at `path` (inside the source's object). */
  issueAt(path: (string | number)[], server: string | undefined, p: EntryProblem, code?: ErrorCode, severity?: 'warning'): void;
}

function parseSourceTextUnguarded(text: string, source: ConfigSource, env: NodeJS.ProcessEnv, options: LoadOptions): LoadedSource {
  const file = source.path;
  const byName = source.format !== undefined ? formats[source.format] : formats[formatForPath(file) ?? 'default'];
  const parsed = parseText(text, byName.syntax ?? (isYamlPath(file) ? 'yaml' : 'json'));
  if (isSyntaxProblem(parsed)) return fatalResult(source, { ...parsed.position, message: parsed.message });
  if (parsed.value === undefined || parsed.value === null) return empty(source, true);
  if (!isPlainObject(parsed.value)) {
    return fatalResult(source, { line: 1, column: 1, message: 'expected an object at the top level' });
  }
  const top = parsed.value;
  // A source that lives inside a larger file (`at`) reads only its own object;
  // issues still point into the whole file.
  const root = source.at === undefined ? top : descend(top, source.at);
  const atPath: string[] = source.at === undefined ? [] : [...source.at];
  const reading = startReading(source, root, env, options, (path, server, p, code = ErrorCode.ConfigInvalid, severity) => {
    const pos = parsed.locate([...atPath, ...path, ...p.path]);
    reading.issues.push({ file, line: pos?.line, column: pos?.column, server, field: formatFieldPath(p.path), message: p.message, code, ...(severity ? { severity } : {}) });
  });
  const { format, issues, servers, pending, secrets, watched } = reading;

  // `--config FILE` without a format reads `mcpServers`; `servers` is VS Code's key (SPEC §2.1).
  const cliDefault = format === formats.default && source.format === undefined && source.keys === undefined && source.scope === 'cli';
  const keys = source.keys ?? (cliDefault ? ['mcpServers'] : format.keys);
  if (cliDefault && isPlainObject(root.servers)) {
    reading.issueAt(['servers'], undefined, {
      path: [],
      message: '`servers` is VS Code\'s key and this file is not VS Code-shaped (no "inputs"), so its servers are not loaded: rename it to `mcpServers`, or load the file with the vscode preset',
    }, ErrorCode.ConfigInvalid, 'warning');
  }
  readServerBlocks(reading, root, keys);
  const unknownKeys = unknownKeysIssue(reading);
  if (unknownKeys) issues.push(unknownKeys);
  const settings = readSettings(root, parsed, atPath, file, issues);
  // Claude Code's enable lists: its project entry here, and its settings files, which are watched with this source.
  if (format.name === 'claude-code' && source.at !== undefined) {
    const home = options.home ?? env.HOME;
    const lists = [readClaudeLists(root, file, atPath), ...(source.root !== undefined && home ? claudeSettingsFiles(source.root, home).map((p) => (watched.add(p), readClaudeSettingsFile(p))) : [])].filter((l) => l !== undefined);
    if (lists.length > 0) settings.claudeCode = lists;
  }
  return {
    source,
    exists: true,
    servers,
    settings,
    issues,
    fatal: false,
    ...(pending.size > 0 ? { pendingInputs: [...pending.values()] } : {}),
    ...(secrets.size > 0 ? { secrets: [...secrets] } : {}),
    ...(watched.size > 0 ? { extraWatchPaths: [...watched].sort() } : {}),
  };
}

/** The state of reading `root` (the source's object): its format, and how variables expand in it. */
function startReading(
  source: ConfigSource,
  root: Record<string, unknown>,
  env: NodeJS.ProcessEnv,
  options: LoadOptions,
  issueAt: FileReading['issueAt'],
): FileReading {
  const file = source.path;
  const format = formatOf(source, root);
  const secrets = new Set<string>();
  const home = options.home ?? (typeof env.HOME === 'string' ? env.HOME : undefined);
  const inputs = declaredInputs(root, file);
  const answers = options.answers ?? {};
  const hostVariables = new Set(format.hostVariables ?? []);
  const builtins: Record<string, string> = { ...format.builtins(source.root, home) };
  for (const name of hostVariables) if (typeof env[name] !== 'string' && Object.hasOwn(answers, name)) builtins[name] = answers[name]!;
  const watched = new Set<string>();
  const settingsLookup = vscodeSetting(source.root);
  const configLookup = (key: string): string | undefined => {
    if (source.root !== undefined) watched.add(join(source.root, '.vscode', 'settings.json'));
    return settingsLookup(key);
  };
  const fileDir = dirname(file);
  const expandContext: ExpandContext = {
    env,
    builtins,
    syntax: format.variables,
    input(id: string): string | undefined {
      const spec = inputs.get(id);
      if (spec === undefined) return undefined;
      const answer = Object.hasOwn(answers, `input:${id}`) ? answers[`input:${id}`] : getOwn(env, inputEnvName(id));
      if (typeof answer !== 'string') return undefined;
      if (spec.password) secrets.add(answer);
      return answer;
    },
    config: configLookup,
    file: (p: string) => {
      const full = resolve(fileDir, p.startsWith('~/') && home !== undefined ? join(home, p.slice(2)) : p);
      watched.add(full);
      return readSmallFile(full);
    },
  };
  return {
    source,
    file,
    format,
    env,
    inputs,
    hostVariables,
    expandContext,
    servers: {},
    issues: [],
    pending: new Map(),
    secrets,
    watched,
    unknown: [],
    issueAt,
  };
}

/** Read the server entries under each of `keys` of `root`; a name defined under two keys keeps the first. */
function readServerBlocks(reading: FileReading, root: Record<string, unknown>, keys: readonly string[]): void {
  // Server names are user data: `__proto__`, `constructor` and friends are names like any other.
  const seen = new Map<string, string>();
  for (const key of keys) {
    const block = root[key];
    if (block === undefined || block === null) continue;
    if (!isPlainObject(block)) {
      reading.issueAt([key], undefined, { path: [], message: `\`${key}\` must be an object mapping server names to configs; ignored` });
      continue;
    }
    for (const [name, raw] of Object.entries(block)) {
      const at = [key, name];
      if (name.trim() === '') {
        reading.issueAt(at, name, { path: [], message: 'a server name must not be empty' });
        continue;
      }
      const earlier = seen.get(name);
      if (earlier !== undefined) {
        reading.issueAt(at, name, { path: [], message: `is also defined under \`${earlier}\` in the same file; this one is ignored` });
        continue;
      }
      seen.set(name, key);
      const config = readServerEntry(reading, at, name, raw);
      if (config !== undefined) setOwn(reading.servers, name, config);
    }
  }
}

/**
 * One server entry, read the way the file's host reads it: normalized,
 * validated, variables expanded, its `envFile` loaded under `env`, a relative
 * `cwd` resolved against the file. `undefined`, with issues, when the host
 * would refuse it or a variable it needs is unset.
 */
function readServerEntry(reading: FileReading, at: string[], name: string, raw: unknown): ServerConfig | undefined {
  const { file, format, source } = reading;
  if (!isPlainObject(raw)) {
    reading.issueAt(at, name, { path: [], message: `must be an object, got ${raw === null ? 'null' : Array.isArray(raw) ? 'an array' : typeof raw}` });
    return undefined;
  }
  const normalized = format.normalize(raw, { env: reading.env });
  for (const k of normalized.unknown) reading.unknown.push(`${name}.${k}`);
  for (const p of normalized.problems) reading.issueAt(at, name, p);
  for (const p of normalized.notes) reading.issueAt(at, name, p, ErrorCode.ConfigInvalid, 'warning');
  if (normalized.entry === undefined) return undefined;
  const { envFile, ...entry } = normalized.entry;
  if (envFile !== undefined && (typeof envFile !== 'string' || envFile === '')) {
    reading.issueAt(at, name, { path: ['envFile'], message: 'must be the path of an env file' });
    return undefined;
  }
  const validated = validateServerEntry(entry);
  if (!validated.ok) {
    for (const p of validated.problems) reading.issueAt(at, name, p);
    return undefined;
  }
  const expanded = expandServerConfig({ ...validated.config, ...(envFile !== undefined ? { envFile } : {}) }, reading.expandContext);
  if (expanded.missing.length > 0) {
    for (const m of expanded.missing) {
      const id = m.variable.startsWith('input:') ? m.variable.slice(6) : m.variable;
      const spec = m.variable.startsWith('input:') ? reading.inputs.get(id) : reading.hostVariables.has(m.variable) ? { type: 'hostVariable', file } : undefined;
      if (spec !== undefined) reading.pending.set(m.variable, { variable: m.variable, id, spec });
      reading.issueAt(at, name, { path: m.path, message: unsetMessage(m.variable, format, reading.inputs, source.root) }, ErrorCode.ConfigUnsetVariable);
    }
    return undefined;
  }
  const config = expanded.config;
  if (config.envFile !== undefined) {
    // VS Code and Cursor load the file, then `env` wins over it. The path stays on the
    // entry (absolute) so that `config` and approval prompts show where env came from.
    const full = resolve(source.root ?? dirname(file), config.envFile);
    config.envFile = full;
    reading.watched.add(full);
    const loaded = readEnvFile(full);
    if ('error' in loaded) {
      reading.issueAt(at, name, { path: ['envFile'], message: `${full} ${loaded.error}, so ${format.host} cannot start this server: create it or fix the path; server skipped` });
      return undefined;
    }
    const merged: Record<string, string> = { ...loaded.env };
    for (const [k, v] of Object.entries(config.env ?? {})) setOwn(merged, k, v);
    config.env = merged;
  }
  const late = checkExpandedEntry(config);
  if (late.length > 0) {
    for (const p of late) reading.issueAt(at, name, p);
    return undefined;
  }
  if (config.cwd !== undefined && !isAbsolute(config.cwd)) config.cwd = resolve(dirname(file), config.cwd);
  return config;
}

/** One warning naming the keys the file's host does not know (bounded), or `undefined` when there are none. */
function unknownKeysIssue({ unknown, format, file }: FileReading): ConfigIssue | undefined {
  if (unknown.length === 0) return undefined;
  // Bounded: a file with thousands of stray keys still gets one short line.
  const shown = unknown.length > MAX_NAMED_KEYS ? `${unknown.slice(0, MAX_NAMED_KEYS).join(', ')} and ${unknown.length - MAX_NAMED_KEYS} more` : unknown.join(', ');
  return {
    file,
    message: `${format.host} does not know ${unknown.length === 1 ? 'this key' : 'these keys'}, so ${unknown.length === 1 ? 'it is' : 'they are'} ignored: ${shown}; remove or rename ${unknown.length === 1 ? 'it' : 'them'}`,
    code: ErrorCode.ConfigInvalid,
    severity: 'warning',
  };
}

/**
 * Read and parse one source. A missing file is `exists: false` with no
 * issue; an unreadable one is `fatal`. Never throws.
 */
export async function loadSource(source: ConfigSource, env: NodeJS.ProcessEnv, options: LoadOptions = {}): Promise<LoadedSource> {
  let text: string;
  try {
    // Refuse an oversized file without reading it; parseText checks again what was read.
    const tooBig = checkConfigSize((await stat(source.path)).size);
    if (tooBig) return fatalResult(source, tooBig);
    text = await readFile(source.path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return empty(source, false);
    return fatalResult(source, { message: `cannot read the file: ${err instanceof Error ? err.message : String(err)}` });
  }
  const first = parseSourceText(text, source, env, options);
  const resolveInput = options.resolveInput;
  if (!first.pendingInputs || resolveInput === undefined) return first;
  const answers: Record<string, string> = { ...options.answers };
  for (const p of first.pendingInputs) {
    try {
      const answer = await resolveInput(p.id, p.spec);
      if (typeof answer === 'string') answers[p.variable] = answer;
    } catch {
      // A hook that throws answers nothing: the server is reported as skipped.
    }
  }
  return Object.keys(answers).length === Object.keys(options.answers ?? {}).length ? first : parseSourceText(text, source, env, { ...options, answers });
}
