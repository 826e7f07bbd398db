/**
 * Adding and removing servers in a host's own config file (`add`, `remove`):
 * the preset's file for the chosen scope, in that host's format, edited
 * minimally (every other byte stays), backed up, written atomically under a
 * lock. A running controller picks the change up by its usual hot reload;
 * nothing here starts or approves anything.
 */
import { access, readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { GATED_SCOPES, type Scope } from '../../machines/types.js';
import { shellQuote } from '../format/shell.js';
import { ErrorCode, McpReconcilerError } from '../errors.js';
import { formats, type FormatName } from './formats.js';
import { parseSourceText } from './load.js';
import { resolvePreset, type Preset } from './presets.js';
import { formatIssue, isYamlPath, type ConfigSource } from './sources.js';
import { hostEntry, holdsSecrets, variableNotes, type ServerSpec } from './writers/entry.js';
import { rewriteFile } from './writers/file.js';
import { addMember, deleteMember, TextEditError, readMember } from './writers/json-edit.js';
import { addTomlServer, readTomlServer, removeTomlServer } from './writers/toml-edit.js';

export type { ServerSpec } from './writers/entry.js';

/** The scopes `add` and `remove` take. `project` and `workspace` both mean the project's own file. */
export type EditScope = 'user' | 'project' | 'local' | 'workspace';

/** The scope names accepted on the command line. */
export const EDIT_SCOPES: readonly EditScope[] = ['user', 'project', 'local', 'workspace'];

/** One file (and place in it) a preset's servers can be written to. */
export interface EditTarget {
  /** The scope of the preset's source. */
  scope: Scope;
  /** The file, absolute. */
  path: string;
  /** The keys from the top of the file to the object that holds the servers: `['mcpServers']`, `['projects', root, 'mcpServers']`. */
  keyPath: string[];
  format: FormatName;
  syntax: 'json' | 'toml';
}

/** Where a workspace's preset lives. */
export interface EditContext {
  /** A preset or its name; default `default`. */
  preset?: Preset | string;
  /** The workspace root; default the current directory. */
  cwd?: string;
  /** Default `$HOME`. */
  home?: string;
  /** Default `process.env` (`XDG_CONFIG_HOME`, `CODEX_HOME`, `APPDATA`). */
  env?: NodeJS.ProcessEnv;
  /** `--user-config`: use this file for the user scope (and the local scope kept inside it). */
  userConfigPath?: string;
}

/** Options of {@link addServer}. */
export interface AddServerOptions extends EditContext {
  name: string;
  server: ServerSpec;
  /** Default: the host's own default (Claude Code `local`, Gemini and Qwen `project`), else `user`. */
  scope?: EditScope;
}

/** Options of {@link removeServer}. */
export interface RemoveServerOptions extends EditContext {
  name: string;
  /** Default: wherever the preset's files have it (an error when more than one does). */
  scope?: EditScope;
}

/** What {@link addServer} or {@link removeServer} changed. */
export interface EditResult {
  name: string;
  scope: Scope;
  /** The file written. */
  file: string;
  /** Where in the file, e.g. `['mcpServers']`. */
  keyPath: string[];
  /** The previous version of the file, kept. */
  backup?: string;
  /** The file did not exist before the add. */
  created: boolean;
  /** The server's scope needs an approval before it starts (project / workspace files). */
  needsApproval: boolean;
  /** The entry as written, for `add`. */
  entry?: Record<string, unknown>;
  /** Things the user should know about what was written (a `${VAR}` the host will not expand). */
  notes?: string[];
}

/** The host's own default scope for `add`. */
const DEFAULT_ADD_SCOPE: Readonly<Record<string, EditScope>> = { 'claude-code': 'local', gemini: 'project', qwen: 'project' };

function presetOf(ctx: EditContext): Preset {
  return typeof ctx.preset === 'string' ? resolvePreset(ctx.preset) : (ctx.preset ?? resolvePreset('default'));
}

function serversKey(source: ConfigSource, format: FormatName): string {
  return source.keys?.[0] ?? formats[format].keys[0] ?? 'mcpServers';
}

/** Every file the preset's servers can be written to, in the preset's order (YAML files are read-only). */
export function editTargets(ctx: EditContext = {}): EditTarget[] {
  const preset = presetOf(ctx);
  const env = ctx.env ?? process.env;
  const home = ctx.home ?? (env.HOME || homedir());
  const root = ctx.cwd ?? process.cwd();
  let sources = preset.sources({ root, home, env });
  if (ctx.userConfigPath !== undefined) {
    const userPaths = new Set(sources.filter((s) => s.scope === 'user').map((s) => s.path));
    const first = sources.find((s) => s.scope === 'user');
    sources = sources
      .filter((s) => s.scope !== 'user' || s === first)
      .map((s) => (userPaths.has(s.path) && (s.scope === 'user' || s.scope === 'local') ? { ...s, path: ctx.userConfigPath! } : s));
  }
  return sources
    .filter((s) => !isYamlPath(s.path))
    .map((s) => {
      const format = s.format ?? 'default';
      return {
        scope: s.scope,
        path: s.path,
        keyPath: [...(s.at ?? []), serversKey(s, format)],
        format,
        syntax: formats[format].syntax === 'toml' ? 'toml' : 'json',
      };
    });
}

function scopeMatches(target: EditTarget, scope: EditScope, all: readonly EditTarget[]): boolean {
  if (target.scope === scope) return true;
  // `project` and `workspace` both name "the project's own file": a preset has one or the other.
  const other = scope === 'project' ? 'workspace' : scope === 'workspace' ? 'project' : undefined;
  return other !== undefined && target.scope === other && !all.some((t) => t.scope === scope);
}

function targetsFor(ctx: EditContext, scope: EditScope): EditTarget[] {
  const all = editTargets(ctx);
  const matching = all.filter((t) => scopeMatches(t, scope, all));
  if (matching.length === 0) {
    const preset = presetOf(ctx);
    const have = [...new Set(all.map((t) => t.scope))];
    throw new McpReconcilerError(ErrorCode.Usage, `the ${preset.name} preset has no ${scope} scope${have.length ? '' : ' file that can be written'}`, {
      hint: have.length ? `use --scope ${have.join(' or --scope ')}` : 'use another --preset',
      details: { preset: preset.name, scope },
    });
  }
  return matching;
}

/** `~/.claude.json` projects["/w"].mcpServers: where a server is, for messages. */
export function describeTarget(t: Pick<EditTarget, 'path' | 'keyPath'>): string {
  const where = t.keyPath.map((k, i) => (/^[A-Za-z_]\w*$/.test(k) ? `${i === 0 ? '' : '.'}${k}` : `[${JSON.stringify(k)}]`)).join('');
  return `${t.path} (${where})`;
}

async function exists(t: EditTarget): Promise<boolean> {
  return access(t.path).then(
    () => true,
    () => false,
  );
}

/** The target of an add in `scope`: of the preset's files for it, the first that exists, else the first. */
async function addTarget(ctx: EditContext, scope: EditScope): Promise<EditTarget> {
  const matching = targetsFor(ctx, scope);
  for (const t of matching) if (await exists(t)) return t;
  return matching[0]!;
}

function editError(t: EditTarget, err: unknown): never {
  if (err instanceof TextEditError) {
    throw new McpReconcilerError(ErrorCode.ConfigInvalid, `cannot edit ${t.path}${err.line !== undefined ? `:${err.line}` : ''}: ${err.message}`, {
      hint: 'fix the file by hand (or restore it from its .bak), then run this again',
      details: { file: t.path, ...(err.line !== undefined ? { line: err.line } : {}) },
    });
  }
  throw err;
}

/** The source a target is read back as, to check what was written. */
function sourceOf(t: EditTarget, root: string): ConfigSource {
  const at = t.keyPath.slice(0, -1);
  return { scope: t.scope, path: t.path, root, format: t.format, ...(at.length ? { at } : {}) };
}

/**
 * Read `text` back as the host's reader does and throw if `name` would not
 * load: the file would otherwise say something other than what was asked.
 * Unset variables are fine (they may be set before the server starts).
 */
function checkReadBack(t: EditTarget, root: string, text: string, name: string): void {
  const loaded = parseSourceText(text, sourceOf(t, root), {}, {});
  if (Object.hasOwn(loaded.servers, name)) return;
  const problems = loaded.issues.filter((i) => (i.server === name || i.server === undefined) && i.severity !== 'warning' && i.code !== ErrorCode.ConfigUnsetVariable);
  if (problems.length === 0 && loaded.issues.some((i) => i.server === name && i.code === ErrorCode.ConfigUnsetVariable)) return;
  throw new McpReconcilerError(ErrorCode.ConfigInvalid, `"${name}" would not load from ${t.path}: ${problems.map(formatIssue).join('; ') || 'the host skips it'}`, {
    hint: 'nothing was written; check the command, URL and values',
    details: { file: t.path, server: name },
  });
}

function checkName(name: string): void {
  if (name.trim() === '' || name !== name.trim()) {
    throw new McpReconcilerError(ErrorCode.Usage, `server name ${JSON.stringify(name)} is empty or has surrounding spaces`, { hint: 'use a name like "github" or "my-files"' });
  }
}

/**
 * Add server `name` to the preset's file for `scope`, in the host's own
 * format. Throws `usage` when the preset has no such scope, when the host
 * cannot express the server, or when the file already has a server of that
 * name; `config_invalid` when the file cannot be edited safely (it does not
 * parse, or the servers key is not an object); `config_write` on I/O
 * failures. A project-scope server still needs an approval before it starts.
 */
export async function addServer(options: AddServerOptions): Promise<EditResult> {
  const { name } = options;
  checkName(name);
  const preset = presetOf(options);
  const root = options.cwd ?? process.cwd();
  const scope = options.scope ?? DEFAULT_ADD_SCOPE[preset.name] ?? (editTargets(options).some((t) => t.scope === 'user') ? 'user' : 'project');
  const t = await addTarget(options, scope);
  const entry = hostEntry(t.format, options.server);
  const done = await rewriteFile(
    t.path,
    (text) => {
      let next: string;
      try {
        next = t.syntax === 'toml' ? addTomlServer(text, t.keyPath, name, entry) : addMember(text, t.keyPath, name, entry);
      } catch (err) {
        if (err instanceof TextEditError && /is already there/.test(err.message)) {
          throw new McpReconcilerError(ErrorCode.Usage, `a server named "${name}" is already in ${describeTarget(t)}`, {
            hint: `remove it first (mcp-reconciler remove ${shellQuote(name)} --scope ${t.scope}), or add this one under another name`,
            details: { file: t.path, server: name, ...(err.line !== undefined ? { line: err.line } : {}) },
          });
        }
        editError(t, err);
      }
      checkReadBack(t, root, next, name);
      return { text: next, result: undefined };
    },
    { private: holdsSecrets(options.server) },
  );
  return {
    ...editResult(name, t, done, done.created),
    needsApproval: GATED_SCOPES.has(t.scope),
    entry,
    ...((notes) => (notes.length ? { notes } : {}))(variableNotes(t.format, formats[t.format].host, options.server)),
  };
}

function hasServer(t: EditTarget, text: string, name: string): boolean {
  try {
    return (t.syntax === 'toml' ? readTomlServer(text, t.keyPath, name) : readMember(text, t.keyPath, name)) !== undefined;
  } catch {
    return false;
  }
}

/**
 * Remove server `name` from the preset's files: from `scope`'s file, or,
 * without a scope, from the one file that has it. Throws `unknown_server`
 * naming every file looked in when none has it, `usage` when several do and
 * no scope says which.
 */
export async function removeServer(options: RemoveServerOptions): Promise<EditResult> {
  const { name } = options;
  checkName(name);
  const candidates = options.scope !== undefined ? targetsFor(options, options.scope) : editTargets(options);
  const found: EditTarget[] = [];
  for (const t of candidates) {
    const text = await readFile(t.path, 'utf8').catch(() => undefined);
    if (text !== undefined && hasServer(t, text, name)) found.push(t);
  }
  if (found.length === 0) {
    throw new McpReconcilerError(ErrorCode.UnknownServer, `no server named "${name}" in ${candidates.map((t) => `${describeTarget(t)} [${t.scope}]`).join(', ')}`, {
      hint: 'check the name and scope with `mcp-reconciler config` (servers from --config files are not removed by this command)',
      details: { server: name, looked: candidates.map((t) => t.path) },
    });
  }
  if (found.length > 1) {
    throw new McpReconcilerError(ErrorCode.Usage, `"${name}" is in more than one file: ${found.map((t) => `${describeTarget(t)} [${t.scope}]`).join(', ')}`, {
      hint: `say which with --scope ${[...new Set(found.map((t) => t.scope))].join(' or --scope ')}`,
      details: { server: name, files: found.map((t) => t.path) },
    });
  }
  const t = found[0]!;
  const done = await rewriteFile(t.path, (text) => {
    let next: string | undefined;
    try {
      next = t.syntax === 'toml' ? removeTomlServer(text, t.keyPath, name) : deleteMember(text, t.keyPath, name);
    } catch (err) {
      editError(t, err);
    }
    // Gone between the look and the lock (another remove): say so rather than claim it.
    if (next === undefined) throw new McpReconcilerError(ErrorCode.UnknownServer, `no server named "${name}" in ${describeTarget(t)} any more`, { hint: 'another process removed it', details: { file: t.path, server: name } });
    return { text: next, result: undefined };
  });
  return { ...editResult(name, t, done, false), needsApproval: false };
}

/** What every edit reports: which server, where, and the backup kept. */
function editResult(name: string, t: EditTarget, done: { file: string; backup?: string | undefined }, created: boolean): Omit<EditResult, 'needsApproval'> {
  return { name, scope: t.scope, file: done.file, keyPath: t.keyPath, ...(done.backup ? { backup: done.backup } : {}), created };
}
