/**
 * Host file formats: how each MCP host reads its own config file, so that a
 * preset loads exactly the servers that host would run (docs/presets.md). A format
 * turns one host-shaped server entry into the common shape `schema.ts`
 * validates, and says how the host expands variables. Each rule below names
 * the host behaviour it follows; the README has the same table.
 */
import { basename, dirname, sep } from 'node:path';
import { DEFAULT_SYNTAX, type VariableSyntax } from './expand.js';
import { setOwn } from '../util/own.js';
import { MAX_TIMEOUT_MS, type EntryProblem } from './schema.js';
import { isPlainObject } from '../util/persist.js';

/** The file formats mcp-reconciler reads, one per host. */
export const FORMAT_NAMES = [
  'default',
  'claude-code',
  'claude-desktop',
  'vscode',
  'cursor',
  'gemini',
  'qwen',
  'cline',
  'roo',
  'windsurf',
  'codex',
  'opencode',
  'zed',
] as const;

/** One of {@link FORMAT_NAMES}. */
export type FormatName = (typeof FORMAT_NAMES)[number];

/** What a format needs from the loader besides the entry. */
export interface NormalizeContext {
  /** The environment (Codex's `env_vars` and `bearer_token_env_var` name variables in it). */
  env: NodeJS.ProcessEnv;
}

/** One host entry turned into the common shape. */
export interface NormalizedEntry {
  /** The common-shape entry, or `undefined` when the host would not load it (the reason is in `notes`). */
  entry: Record<string, unknown> | undefined;
  /** Mistakes the host would refuse: the entry is dropped with `config_invalid`. */
  problems: EntryProblem[];
  /** Warnings: fields the host uses that are not applied here, or why the entry is skipped. */
  notes: EntryProblem[];
  /** Keys the host does not know; reported once per file, never an error. */
  unknown: string[];
}

/** How one host reads its config file. */
export interface ConfigFormat {
  name: FormatName;
  /** The host, for messages: `Claude Desktop`. */
  host: string;
  /** Top-level keys that hold servers, in the order they are read. */
  keys: readonly string[];
  /** File syntax when the extension does not decide it. */
  syntax?: 'toml';
  /** How the host expands variables. */
  variables: VariableSyntax;
  /** Host-provided variables, given the workspace root and the user's home. */
  builtins(root: string | undefined, home: string | undefined): Record<string, string>;
  /**
   * Variables the host sets itself, outside the user's environment (Claude
   * Code's `CLAUDE_PLUGIN_ROOT`): when unset they are asked of the host's
   * `resolveInput` hook like an input.
   */
  hostVariables?: readonly string[];
  /** Turn one raw entry into the common shape. Pure; never throws. */
  normalize(raw: Record<string, unknown>, ctx: NormalizeContext): NormalizedEntry;
}

type Raw = Record<string, unknown>;

function isStringArray(v: unknown): v is string[] {
  return Array.isArray(v) && v.every((x) => typeof x === 'string');
}

function kind(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v;
}

/**
 * `startup`, `idleTimeoutMs`, the start bound `startTimeoutMs`, the `protocol`
 * pin (docs/protocol.md) and `singleton` (docs/cluster.md), read in every format.
 */
const LIFECYCLE_FIELDS = ['startup', 'idleTimeoutMs', 'startTimeoutMs', 'protocol', 'singleton'] as const;

/** Mutable state while one entry is normalized. */
class Entry {
  readonly out: Raw = {};
  readonly result: NormalizedEntry = { entry: undefined, problems: [], notes: [], unknown: [] };
  private readonly used = new Set<string>();
  private skipped = false;

  constructor(readonly raw: Raw) {
    // `null` members count as absent, as everywhere else in the loader.
    for (const [k, v] of Object.entries(raw)) if (v === null) this.used.add(k);
  }

  has(key: string): boolean {
    return Object.hasOwn(this.raw, key) && this.raw[key] !== null && this.raw[key] !== undefined;
  }

  /** The value of `key` (marked as read), or `undefined`. */
  take(key: string): unknown {
    this.used.add(key);
    return this.has(key) ? this.raw[key] : undefined;
  }

  /** Copy `keys` unchanged into the common shape. */
  pass(...keys: string[]): void {
    for (const k of keys) if (this.has(k)) this.out[k] = this.take(k);
  }

  /** Read `keys` without using them (UI state and the like, which change nothing that runs). */
  ignore(...keys: string[]): void {
    for (const k of keys) this.used.add(k);
  }

  /** A field the host acts on that mcp-reconciler does not apply: a warning, never silence. */
  notApplied(key: string, why: string): void {
    if (this.has(key)) this.note([key], why);
    this.used.add(key);
  }

  problem(path: (string | number)[], message: string): void {
    this.result.problems.push({ path, message });
  }

  note(path: (string | number)[], message: string): void {
    this.result.notes.push({ path, message });
  }

  /** The host would not load this entry. */
  skip(path: (string | number)[], message: string): void {
    this.skipped = true;
    this.note(path, message);
  }

  done(): NormalizedEntry {
    // mcp-reconciler's own lifecycle fields, in every host's file: they decide when an
    // approved server starts and stops (and which protocol revision it is spoken to in),
    // never what runs, so the host's servers stay the same.
    this.pass(...LIFECYCLE_FIELDS);
    this.result.unknown = Object.keys(this.raw).filter((k) => !this.used.has(k));
    this.result.entry = this.skipped || this.result.problems.length > 0 ? undefined : this.out;
    return this.result;
  }
}

// ── shared field rules ────────────────────────────────────────────────────

/**
 * `type` spelled the host's way, mapped to ours; a spelling the host does not
 * accept is a problem naming the ones it does.
 */
function hostType(e: Entry, key: string, spellings: Readonly<Record<string, 'stdio' | 'sse' | 'http'>>): 'stdio' | 'sse' | 'http' | undefined {
  const v = e.take(key);
  if (v === undefined) return undefined;
  if (typeof v === 'string' && Object.hasOwn(spellings, v)) return spellings[v];
  e.problem([key], `must be one of ${Object.keys(spellings).map((s) => `"${s}"`).join(', ')}, got ${typeof v === 'string' ? `"${v}"` : kind(v)}`);
  return undefined;
}

/** Cline's `autoApprove`, Roo's `alwaysAllow`: tools the host runs without asking. Kept as metadata. */
function autoApprove(e: Entry, key: string): void {
  const v = e.take(key);
  if (v === undefined) return;
  if (!isStringArray(v)) return e.problem([key], `must be a list of tool names, got ${kind(v)}`);
  const prev = (e.out.autoApprove as string[] | undefined) ?? [];
  e.out.autoApprove = [...new Set([...prev, ...v])];
}

/** Gemini's `trust: true`: the host skips tool confirmations for this server. Kept as metadata. */
function trust(e: Entry): void {
  const v = e.take('trust');
  if (v === undefined) return;
  if (typeof v !== 'boolean') return e.problem(['trust'], `must be true or false, got ${kind(v)}`);
  e.out.trust = v;
}

/** Roo's and Windsurf's `disabledTools`, Codex's `disabled_tools`: the host hides these tools; here they join `excludeTools`. */
function disabledTools(e: Entry, key: string): void {
  const v = e.take(key);
  if (v === undefined) return;
  if (!isStringArray(v)) return e.problem([key], `must be a list of tool names, got ${kind(v)}`);
  const prev = isStringArray(e.out.excludeTools) ? e.out.excludeTools : [];
  e.out.excludeTools = [...new Set([...prev, ...v])];
}

/** `enabled: false` (Codex, opencode, Zed) is our `disabled: true`. */
function enabled(e: Entry, key = 'enabled'): void {
  const v = e.take(key);
  if (v === undefined) return;
  if (typeof v !== 'boolean') return e.problem([key], `must be true or false, got ${kind(v)}`);
  if (!v) e.out.disabled = true;
}

/** A timeout written in seconds (Cline, Roo, Codex), stored in milliseconds. */
function seconds(e: Entry, key: string): void {
  const v = e.take(key);
  if (v === undefined) return;
  const max = MAX_TIMEOUT_MS / 1000;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) return e.problem([key], `must be a positive number of seconds, got ${typeof v === 'number' ? v : kind(v)}`);
  if (v > max) return e.problem([key], `must be at most ${max} seconds (24 hours); this host reads it in seconds`);
  e.out.timeout = Math.round(v * 1000);
}

/**
 * A `transport` member (some Claude Code and mcp-remote style files): a
 * string is the type; an object may carry `type`, `url`, `headers`,
 * `command`, `args`, `env`. Top-level fields win. Read, and said so, rather
 * than dropped without a word.
 */
function transportMember(e: Entry): void {
  const t = e.take('transport');
  if (t === undefined) return;
  if (typeof t === 'string') {
    if (!e.has('type')) e.out.type = t;
    return;
  }
  if (!isPlainObject(t)) return e.problem(['transport'], `must be a transport name or an object with "type" and "url", got ${kind(t)}`);
  for (const k of ['type', 'url', 'headers', 'command', 'args', 'env']) {
    if (t[k] !== undefined && t[k] !== null && e.out[k] === undefined && !e.has(k)) e.out[k] = t[k];
  }
  e.note(['transport'], 'read as the server\'s "type", "url" and "headers"; write them at the top of the entry, where every host reads them');
}

/** The type a host gives an entry that names none: `stdio` for a `command`, `urlType` for a `url`. */
function impliedType(e: Entry, urlType: 'sse' | 'http'): 'stdio' | 'sse' | 'http' | undefined {
  return e.out.command !== undefined ? 'stdio' : e.out.url !== undefined ? urlType : undefined;
}

// ── formats ───────────────────────────────────────────────────────────────

/**
 * A format from what it declares and its `rule` for one entry, which reads
 * the host's fields off `e` into `e.out`; what follows the rule (lifecycle
 * fields, unknown keys, the verdict: {@link Entry.done}) is every host's.
 */
function hostFormat(spec: Omit<ConfigFormat, 'normalize'>, rule: (e: Entry, ctx: NormalizeContext) => void): ConfigFormat {
  return {
    ...spec,
    normalize(raw, ctx) {
      const e = new Entry(raw);
      rule(e, ctx);
      return e.done();
    },
  };
}

const noBuiltins = (): Record<string, string> => ({});
const workspaceFolderOnly = (root: string | undefined): Record<string, string> => (root !== undefined ? { workspaceFolder: root } : {});

/** Built-ins of VS Code and its forks. */
function editorBuiltins(root: string | undefined, home: string | undefined): Record<string, string> {
  const b: Record<string, string> = { pathSeparator: sep, '/': sep };
  if (root !== undefined) {
    b.workspaceFolder = root;
    b.workspaceFolderBasename = basename(root);
  }
  if (home !== undefined) b.userHome = home;
  return b;
}

const CLAUDE_TYPES = { stdio: 'stdio', sse: 'sse', http: 'http' } as const;

/** mcp-reconciler's own format: every common field, and the other hosts' spellings where they do not conflict. */
const defaultFormat = hostFormat(
  { name: 'default', host: 'mcp-reconciler', keys: ['mcpServers', 'servers'], variables: { ...DEFAULT_SYNTAX, inputs: true }, builtins: workspaceFolderOnly },
  (e) => {
    e.pass('type', 'command', 'args', 'env', 'cwd', 'url', 'httpUrl', 'headers', 'headersHelper', 'timeout', 'disabled', 'includeTools', 'excludeTools', 'description', 'auth', 'oauth', 'envFile', 'fallbackToSse', 'pinToolDefinitions', 'pinnedTools', 'logLevel', 'permissions');
    transportMember(e);
    disabledTools(e, 'disabledTools');
    autoApprove(e, 'autoApprove');
    autoApprove(e, 'alwaysAllow');
    trust(e);
  },
);

/**
 * Claude Code (`.mcp.json`, `~/.claude.json`): `${VAR}` and `${VAR:-default}`,
 * an unset variable without default is an error; a `url` needs `"type": "http"`
 * or `"sse"` (a bare `url` fails Claude Code's schema).
 */
const claudeCode = hostFormat(
  { name: 'claude-code', host: 'Claude Code', keys: ['mcpServers'], variables: { style: 'braces', defaults: true, envPrefix: false, unset: 'error', envUnset: 'error', inputs: false }, builtins: noBuiltins, hostVariables: ['CLAUDE_PLUGIN_ROOT'] },
  (e) => {
    // `headersHelper` runs at each connect of an http/sse server, its JSON output merged over `headers` (headers-helper.ts).
    e.pass('command', 'args', 'env', 'url', 'headers', 'headersHelper');
    transportMember(e);
    if (e.out.type === undefined) {
      const t = hostType(e, 'type', CLAUDE_TYPES);
      if (t !== undefined) e.out.type = t;
    } else e.ignore('type');
    if (e.out.type === undefined && e.out.command === undefined && e.out.url !== undefined) {
      e.problem(['url'], 'Claude Code needs "type": "http" (or "sse") next to "url" and does not load this entry: add the type');
    }
    e.notApplied('oauth', 'Claude Code OAuth client settings are not used by mcp-reconciler; the server is connected without them');
  },
);

/** Claude Desktop (`claude_desktop_config.json`): only `command` servers; no variable expansion at all. */
const claudeDesktop = hostFormat(
  { name: 'claude-desktop', host: 'Claude Desktop', keys: ['mcpServers'], variables: { ...DEFAULT_SYNTAX, style: 'none' }, builtins: noBuiltins },
  (e) => {
    e.pass('command', 'args', 'env');
    if (e.out.command === undefined) {
      const remote = e.has('url') || e.has('serverUrl');
      e.ignore('url', 'serverUrl', 'headers', 'type');
      e.skip(
        [],
        remote
          ? 'Claude Desktop does not load remote servers from its config file (they are added under Settings → Connectors), so this one is skipped: use a `command` (for example `npx mcp-remote <url>`) or another preset'
          : 'has no "command", which Claude Desktop needs; skipped',
      );
    } else e.ignore('type');
  },
);

/**
 * VS Code (`.vscode/mcp.json`, user `mcp.json`): the `servers` key, `inputs`,
 * `${input:id}`, `${env:X}` and `${config:x}`; an unset variable becomes `""`.
 * `type: http` (and a bare `url`) falls back to SSE when the server answers 4xx.
 */
const vscode = hostFormat(
  { name: 'vscode', host: 'VS Code', keys: ['servers'], variables: { style: 'braces', defaults: false, envPrefix: true, unset: 'empty', envUnset: 'empty', inputs: true }, builtins: editorBuiltins },
  (e) => {
    e.pass('command', 'args', 'env', 'envFile', 'cwd', 'url', 'headers');
    const t = hostType(e, 'type', CLAUDE_TYPES);
    e.out.type = t ?? impliedType(e, 'http');
    if (e.out.type === 'http') e.out.fallbackToSse = true;
    // `dev` (watch/debug a server under development) and gallery metadata change nothing that runs here.
    e.ignore('dev', 'gallery', 'version');
  },
);

/**
 * Cursor (`~/.cursor/mcp.json`, `.cursor/mcp.json`): `${env:X}`, `${userHome}`,
 * `${workspaceFolder}`; a plain `${X}` is not a Cursor variable and stays as
 * written. A `url` is streamable HTTP with SSE fallback unless `type` is `sse`.
 */
const cursor = hostFormat(
  { name: 'cursor', host: 'Cursor', keys: ['mcpServers'], variables: { style: 'braces', defaults: false, envPrefix: true, unset: 'keep', envUnset: 'empty', inputs: false }, builtins: editorBuiltins },
  (e) => {
    e.pass('command', 'args', 'env', 'envFile', 'url', 'headers');
    const t = hostType(e, 'type', { stdio: 'stdio', sse: 'sse', http: 'http', streamableHttp: 'http', 'streamable-http': 'http' });
    if (e.out.command !== undefined) e.out.type = 'stdio';
    else if (e.out.url !== undefined) {
      e.out.type = t === 'sse' ? 'sse' : 'http';
      if (e.out.type === 'http') e.out.fallbackToSse = true;
    }
    e.notApplied('auth', 'Cursor OAuth client settings are not used by mcp-reconciler; the server is connected without them');
  },
);

/**
 * Gemini CLI and Qwen Code (`settings.json`): `$VAR` and `${VAR}`, an unset
 * one stays as written; `httpUrl` (streamable HTTP) wins over `url` (SSE,
 * unless `type: http`), which wins over `command`; `timeout` in ms; `trust`.
 */
function geminiFormat(name: 'gemini' | 'qwen', host: string): ConfigFormat {
  return hostFormat(
    { name, host, keys: ['mcpServers'], variables: { style: 'braces-and-bare', defaults: false, envPrefix: false, unset: 'keep', envUnset: 'keep', inputs: false }, builtins: noBuiltins },
    (e) => {
      e.pass('args', 'env', 'cwd', 'headers', 'timeout', 'includeTools', 'excludeTools', 'description');
      const httpUrl = e.take('httpUrl');
      const url = e.take('url');
      const command = e.take('command');
      const t = hostType(e, 'type', { sse: 'sse', http: 'http' });
      if (httpUrl !== undefined) Object.assign(e.out, { type: 'http', url: httpUrl });
      else if (url !== undefined) Object.assign(e.out, { type: t === 'http' ? 'http' : 'sse', url });
      else if (command !== undefined) Object.assign(e.out, { type: 'stdio', command });
      trust(e);
      for (const k of ['oauth', 'authProviderType', 'targetAudience', 'targetServiceAccount']) {
        e.notApplied(k, `is ${host} authentication that mcp-reconciler does not perform; the server is connected without it`);
      }
      e.ignore('extensionName');
    },
  );
}

/**
 * Cline (`cline_mcp_settings.json`): `timeout` in seconds, a bare `url` is
 * SSE, `autoApprove`, `disabled`; no variable expansion.
 */
const cline = hostFormat(
  { name: 'cline', host: 'Cline', keys: ['mcpServers'], variables: { ...DEFAULT_SYNTAX, style: 'none' }, builtins: noBuiltins },
  (e) => {
    e.pass('command', 'args', 'env', 'cwd', 'url', 'headers', 'disabled');
    const spellings = { stdio: 'stdio', sse: 'sse', streamableHttp: 'http' } as const;
    const t = hostType(e, 'type', spellings) ?? hostType(e, 'transportType', spellings);
    e.out.type = t ?? impliedType(e, 'sse');
    seconds(e, 'timeout');
    autoApprove(e, 'autoApprove');
  },
);

/**
 * Roo Code (`mcp_settings.json`, `.roo/mcp.json`): `${env:X}` (unset stays as
 * written), `timeout` in seconds, a bare `url` is SSE, `alwaysAllow`,
 * `disabledTools`, `disabled`.
 */
const roo = hostFormat(
  { name: 'roo', host: 'Roo Code', keys: ['mcpServers'], variables: { style: 'braces', defaults: false, envPrefix: true, unset: 'keep', envUnset: 'keep', inputs: false }, builtins: workspaceFolderOnly },
  (e) => {
    e.pass('command', 'args', 'env', 'cwd', 'url', 'headers', 'disabled');
    const t = hostType(e, 'type', { stdio: 'stdio', sse: 'sse', 'streamable-http': 'http' });
    e.out.type = t ?? impliedType(e, 'sse');
    seconds(e, 'timeout');
    autoApprove(e, 'alwaysAllow');
    disabledTools(e, 'disabledTools');
    // Files Roo watches to restart the server on change; mcp-reconciler restarts on config edits only.
    e.notApplied('watchPaths', 'is not watched by mcp-reconciler: restart the server with `mcp-reconciler reconnect` after those files change');
  },
);

/**
 * Windsurf (`~/.codeium/windsurf/mcp_config.json`): `${env:X}`; a remote server
 * is `serverUrl` (streamable HTTP, falling back to SSE); `disabled`, `disabledTools`.
 */
const windsurf = hostFormat(
  { name: 'windsurf', host: 'Windsurf', keys: ['mcpServers'], variables: { style: 'braces', defaults: false, envPrefix: true, unset: 'keep', envUnset: 'empty', inputs: false }, builtins: noBuiltins },
  (e) => {
    e.pass('command', 'args', 'env', 'headers', 'disabled');
    const serverUrl = e.take('serverUrl');
    if (e.out.command !== undefined) e.out.type = 'stdio';
    else if (serverUrl !== undefined) Object.assign(e.out, { type: 'http', url: serverUrl, fallbackToSse: true });
    else if (e.has('url')) {
      e.take('url');
      e.skip(['url'], 'Windsurf reads a remote server from "serverUrl", not "url", so it does not load this entry: rename the field');
    }
    disabledTools(e, 'disabledTools');
  },
);

/**
 * Codex (`~/.codex/config.toml`, `[mcp_servers.<name>]`): `startup_timeout_sec`
 * (or `_ms`), `enabled`, `enabled_tools` / `disabled_tools`, `env_vars`
 * passed through, `url` is streamable HTTP with `bearer_token_env_var`,
 * `http_headers`, `env_http_headers`; no variable expansion.
 */
const codex = hostFormat(
  { name: 'codex', host: 'Codex', keys: ['mcp_servers'], syntax: 'toml', variables: { ...DEFAULT_SYNTAX, style: 'none' }, builtins: noBuiltins },
  (e, ctx) => {
    e.pass('command', 'args', 'env', 'cwd', 'url');
    if (e.out.command !== undefined) e.out.type = 'stdio';
    else if (e.out.url !== undefined) e.out.type = 'http';
    seconds(e, 'startup_timeout_sec');
    const ms = e.take('startup_timeout_ms');
    if (ms !== undefined && e.out.timeout === undefined) e.out.timeout = ms;
    enabled(e);
    const include = e.take('enabled_tools');
    if (include !== undefined) e.out.includeTools = include;
    disabledTools(e, 'disabled_tools');
    const names = e.take('env_vars');
    if (names !== undefined) {
      if (!isStringArray(names)) e.problem(['env_vars'], `must be a list of variable names, got ${kind(names)}`);
      else {
        // Codex passes these from its own environment; an unset one is simply not passed.
        const env: Raw = {};
        // setOwn: names are user data, and `__proto__` must stay an ordinary key.
        for (const n of names) if (typeof ctx.env[n] === 'string' && Object.hasOwn(ctx.env, n)) setOwn<unknown>(env, n, ctx.env[n]);
        if (isPlainObject(e.out.env)) for (const [k, v] of Object.entries(e.out.env)) setOwn<unknown>(env, k, v);
        e.out.env = env;
      }
    }
    const headers: Record<string, unknown> = {};
    const fixed = e.take('http_headers');
    if (fixed !== undefined) {
      if (!isPlainObject(fixed)) e.problem(['http_headers'], `must be a table of header names to values, got ${kind(fixed)}`);
      else for (const [h, v] of Object.entries(fixed)) setOwn<unknown>(headers, h, v);
    }
    const fromEnv = e.take('env_http_headers');
    if (fromEnv !== undefined) {
      if (!isPlainObject(fromEnv)) e.problem(['env_http_headers'], `must be a table of header names to variable names, got ${kind(fromEnv)}`);
      else for (const [h, v] of Object.entries(fromEnv)) if (typeof v === 'string' && Object.hasOwn(ctx.env, v) && typeof ctx.env[v] === 'string') setOwn<unknown>(headers, h, ctx.env[v]);
    }
    const bearer = e.take('bearer_token_env_var');
    if (bearer !== undefined) {
      const value = typeof bearer === 'string' && Object.hasOwn(ctx.env, bearer) ? ctx.env[bearer] : undefined;
      if (typeof bearer !== 'string') e.problem(['bearer_token_env_var'], `must be a variable name, got ${kind(bearer)}`);
      else if (value === undefined || value === '') e.problem(['bearer_token_env_var'], `names ${bearer}, which is not set; Codex cannot start this server without it: set ${bearer}`);
      else setOwn<unknown>(headers, 'Authorization', `Bearer ${value}`);
    }
    if (Object.keys(headers).length > 0) e.out.headers = headers;
    e.notApplied('tool_timeout_sec', 'is not applied by mcp-reconciler: pass a timeout to callTool (or `call --timeout`) instead');
  },
);

/**
 * opencode (`opencode.json`, key `mcp`): `type: local` with `command` as an
 * array and `environment`, or `type: remote` with `url` (streamable HTTP,
 * falling back to SSE); `enabled`; `{env:X}` (unset is `""`) and `{file:path}`.
 */
const opencode = hostFormat(
  { name: 'opencode', host: 'opencode', keys: ['mcp'], variables: { ...DEFAULT_SYNTAX, style: 'opencode' }, builtins: noBuiltins },
  (e) => {
    const type = e.take('type');
    e.pass('timeout');
    enabled(e);
    if (type === 'local') {
      const command = e.take('command');
      if (!isStringArray(command) || command.length === 0 || command[0] === '') {
        e.problem(['command'], 'must be a non-empty list: the program, then its arguments (opencode runs `command[0]` with the rest as arguments)');
      } else Object.assign(e.out, { type: 'stdio', command: command[0], args: command.slice(1) });
      const environment = e.take('environment');
      if (environment !== undefined) e.out.env = environment;
    } else if (type === 'remote') {
      e.pass('url', 'headers');
      Object.assign(e.out, { type: 'http', fallbackToSse: true });
      e.notApplied('oauth', 'opencode OAuth settings are not used by mcp-reconciler; the server is connected without them');
    } else {
      e.problem(['type'], `must be "local" or "remote", got ${typeof type === 'string' ? `"${type}"` : kind(type)} (opencode needs it)`);
    }
  },
);

/**
 * Zed (`settings.json`, key `context_servers`): `command` with `args` and
 * `env` (or the older `command: { path, args, env }`), or `url` with
 * `headers`; servers provided by a Zed extension cannot run outside Zed.
 */
const zed = hostFormat(
  { name: 'zed', host: 'Zed', keys: ['context_servers'], variables: { ...DEFAULT_SYNTAX, style: 'none' }, builtins: noBuiltins },
  (e) => {
    const command = e.take('command');
    e.pass('args', 'env', 'url', 'headers');
    enabled(e);
    e.ignore('source', 'settings');
    if (typeof command === 'string') Object.assign(e.out, { type: 'stdio', command });
    else if (isPlainObject(command)) {
      // The older form nests everything under `command`.
      Object.assign(e.out, { type: 'stdio', command: command.path });
      if (command.args !== undefined) e.out.args = command.args;
      if (command.env !== undefined) e.out.env = command.env;
      if (typeof command.path !== 'string') e.problem(['command', 'path'], 'must be the path of the program to run');
    } else if (command !== undefined) e.problem(['command'], `must be a program path, got ${kind(command)}`);
    else if (e.out.url !== undefined) e.out.type = 'http';
    else e.skip([], 'has no "command" or "url": it is provided by a Zed extension, which only Zed can run; skipped');
  },
);

/** Every format by name. */
export const formats: Readonly<Record<FormatName, ConfigFormat>> = Object.freeze({
  default: defaultFormat,
  'claude-code': claudeCode,
  'claude-desktop': claudeDesktop,
  vscode,
  cursor,
  gemini: geminiFormat('gemini', 'Gemini CLI'),
  qwen: geminiFormat('qwen', 'Qwen Code'),
  cline,
  roo,
  windsurf,
  codex,
  opencode,
  zed,
});

/** Whether `name` is a format name. */
export function isFormatName(name: string): name is FormatName {
  return (FORMAT_NAMES as readonly string[]).includes(name);
}

/**
 * The format a file is in, judged by where it is, for files passed without
 * a preset (`--config FILE`): `.vscode/mcp.json` is VS Code's,
 * `claude_desktop_config.json` Claude Desktop's, a `.toml` file Codex's, and
 * so on. `undefined` when the path says nothing.
 */
export function formatForPath(path: string): FormatName | undefined {
  const p = path.split(/[\\/]+/).join('/');
  const name = basename(p);
  const dir = basename(dirname(p));
  if (name === 'claude_desktop_config.json') return 'claude-desktop';
  if (name === 'cline_mcp_settings.json') return 'cline';
  if (name === 'mcp_settings.json' && p.includes('rooveterinaryinc.roo-cline')) return 'roo';
  if (name === 'mcp_config.json' && dir === 'windsurf') return 'windsurf';
  if (/\.toml$/i.test(name)) return 'codex';
  if (/^opencode\.jsonc?$/.test(name)) return 'opencode';
  if (name === 'mcp.json' && (dir === '.vscode' || dir === 'User')) return 'vscode';
  if (name === 'mcp.json' && dir === '.cursor') return 'cursor';
  if (name === 'mcp.json' && dir === '.roo') return 'roo';
  if (name === 'settings.json' && dir === '.gemini') return 'gemini';
  if (name === 'settings.json' && dir === '.qwen') return 'qwen';
  if (name === 'settings.json' && (dir === '.zed' || dir === 'zed')) return 'zed';
  if (name === '.claude.json') return 'claude-code';
  return undefined;
}

/**
 * Whether a parsed file is shaped like VS Code's `mcp.json`: servers under
 * `servers` and none under `mcpServers`, with VS Code's `inputs` list.
 */
export function isVscodeShaped(root: Record<string, unknown>): boolean {
  return isPlainObject(root.servers) && root.mcpServers === undefined && Array.isArray(root.inputs);
}
