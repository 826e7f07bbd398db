/**
 * `import --from HOST [--to HOST]`: copy servers from one host's config
 * files into another's, with the writers `add` uses (docs/manage.md). Each
 * entry is read the way its host reads it but not expanded, so `${VAR}`
 * stays `${VAR}`; what the target host cannot express (a `headersHelper`
 * into Claude Desktop, a remote server into Claude Desktop, SSE into Zed) is
 * reported per server, never dropped without a word.
 */
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { addServer, type EditResult, type EditScope } from './edit.js';
import { formats, type FormatName } from './formats.js';
import { isSyntaxProblem, parseText } from './parse.js';
import { resolvePreset, type Preset } from './presets.js';
import { isYamlPath } from './sources.js';
import { hostEntry, type ServerSpec } from './writers/entry.js';
import { ErrorCode, McpReconcilerError } from '../errors.js';
import { isPlainObject } from '../util/persist.js';
import { setOwn } from '../util/own.js';

/** Options of {@link importServers}. */
export interface ImportOptions {
  /** The host (preset) to read. */
  from: Preset | string;
  /** The host (preset) to write; default `default`. */
  to?: Preset | string;
  /** Only these servers; default every server `from` has. */
  names?: readonly string[];
  /** The target scope; default the target host's own default (as for `add`). */
  scope?: EditScope;
  /** Report what would be written, write nothing. */
  dryRun?: boolean;
  cwd?: string;
  home?: string;
  env?: NodeJS.ProcessEnv;
}

/** What happened to one server. */
export interface ImportedServer {
  name: string;
  /** Where it was read. */
  from: string;
  /** `added` (or would be, in a dry run), `exists` (the target has the name), `skipped` (the target cannot express it). */
  status: 'added' | 'exists' | 'skipped';
  /** Why it was skipped or not written. */
  reason?: string;
  /** Fields the target cannot express, left behind, each with why. */
  dropped: { field: string; why: string }[];
  /** The edit, when written (not in a dry run). */
  edit?: EditResult;
  /** The entry as it is (or would be) written. */
  entry?: Record<string, unknown>;
  /** Notes about values (variables the target will not expand). */
  notes?: string[];
}

/** Fields of the common shape that `add` writes; the rest are checked one by one below. */
const CARRIED = new Set(['type', 'command', 'args', 'env', 'url', 'headers']);

/** Fields the controller sets or reads for itself; never worth a word when left behind. */
const QUIET = new Set(['fallbackToSse']);

function presetOf(p: Preset | string | undefined): Preset {
  return typeof p === 'string' ? resolvePreset(p) : (p ?? resolvePreset('default'));
}

/** The common-shape entries of `preset`'s files, unexpanded, in precedence order (a later file's entry replaces an earlier one's). */
async function readEntries(preset: Preset, ctx: { root: string; home: string; env: NodeJS.ProcessEnv }): Promise<Map<string, { entry: Record<string, unknown>; file: string }>> {
  const out = new Map<string, { entry: Record<string, unknown>; file: string }>();
  for (const source of preset.sources(ctx)) {
    const text = await readFile(source.path, 'utf8').catch(() => undefined);
    if (text === undefined) continue;
    const format = formats[source.format ?? 'default'];
    const parsed = parseText(text, isYamlPath(source.path) ? 'yaml' : format.syntax === 'toml' ? 'toml' : false);
    if (isSyntaxProblem(parsed) || !isPlainObject(parsed.value)) continue;
    let node: unknown = parsed.value;
    for (const k of source.at ?? []) node = isPlainObject(node) && Object.hasOwn(node, k) ? node[k] : undefined;
    if (!isPlainObject(node)) continue;
    for (const key of source.keys ?? format.keys) {
      const servers = node[key];
      if (!isPlainObject(servers)) continue;
      for (const [name, raw] of Object.entries(servers)) {
        if (!isPlainObject(raw)) continue;
        const normalized = format.normalize(raw, { env: ctx.env });
        if (normalized.entry !== undefined) out.set(name, { entry: normalized.entry, file: source.path });
      }
    }
  }
  return out;
}

/** Whether the target format reads `field` at all (it is not unknown to it, nor read and not applied). */
function targetReads(format: FormatName, field: string, value: unknown): boolean {
  const probe = formats[format].normalize({ command: 'x', [field]: value }, { env: {} });
  return !probe.unknown.includes(field) && !probe.notes.some((n) => n.path[0] === field);
}

/** `entry` as what `add` takes, and the fields left behind. */
function specOf(entry: Record<string, unknown>, format: FormatName): { spec: ServerSpec; dropped: { field: string; why: string }[] } {
  const target = formats[format].host;
  const spec: ServerSpec = {};
  if (typeof entry.command === 'string') spec.command = entry.command;
  if (Array.isArray(entry.args)) spec.args = entry.args.map(String);
  if (isPlainObject(entry.env)) spec.env = stringMap(entry.env);
  if (typeof entry.url === 'string') spec.url = entry.url;
  if (isPlainObject(entry.headers)) spec.headers = stringMap(entry.headers);
  if (spec.url !== undefined) spec.transport = entry.type === 'sse' ? 'sse' : 'http';
  const dropped = Object.keys(entry)
    .filter((k) => !CARRIED.has(k) && !QUIET.has(k) && entry[k] !== undefined)
    .map((field) => ({
      field,
      why: targetReads(format, field, entry[field])
        ? `import copies the command or URL, args, env and headers only: add "${field}" to the entry by hand`
        : `${target} has no such field, so it cannot be carried over`,
    }));
  return { spec, dropped };
}

function stringMap(v: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(v)) setOwn(out, k, String(x));
  return out;
}

/**
 * Copy the servers of host `from` into host `to`'s file, one by one with
 * `addServer` (the same minimal edit, backup, lock, read-back check). A
 * server the target already has is left alone (`exists`); one the target
 * cannot express is `skipped` with the reason; every field left behind is
 * listed. Throws `usage` when `from` has none of `names`.
 */
export async function importServers(options: ImportOptions): Promise<ImportedServer[]> {
  const env = options.env ?? process.env;
  const home = options.home ?? (env.HOME || homedir());
  const root = options.cwd ?? process.cwd();
  const from = presetOf(options.from);
  const to = presetOf(options.to);
  const entries = await readEntries(from, { root, home, env });
  const names = options.names ?? [...entries.keys()].sort();
  const missing = names.filter((n) => !entries.has(n));
  if (missing.length > 0 || names.length === 0) {
    throw new McpReconcilerError(ErrorCode.UnknownServer, names.length === 0 ? `the ${from.name} preset's files have no servers` : `no server named ${missing.map((n) => `"${n}"`).join(', ')} in the ${from.name} preset's files`, {
      hint: entries.size ? `its servers: ${[...entries.keys()].sort().join(', ')}` : `check the files with \`mcp-reconciler config --preset ${from.name}\``,
    });
  }
  const out: ImportedServer[] = [];
  for (const name of names) {
    const { entry, file } = entries.get(name)!;
    const { spec, dropped } = specOf(entry, to.format ?? 'default');
    const base = { name, from: file, dropped };
    let written: Record<string, unknown>;
    try {
      written = hostEntry(to.format ?? 'default', spec);
    } catch (err) {
      if (!(err instanceof McpReconcilerError)) throw err;
      out.push({ ...base, status: 'skipped', reason: `${err.message}${err.hint ? ` (${err.hint})` : ''}` });
      continue;
    }
    if (options.dryRun) {
      out.push({ ...base, status: 'added', entry: written });
      continue;
    }
    try {
      const edit = await addServer({ name, server: spec, preset: to, cwd: root, home, env, ...(options.scope ? { scope: options.scope } : {}) });
      out.push({ ...base, status: 'added', edit, entry: written, ...(edit.notes ? { notes: edit.notes } : {}) });
    } catch (err) {
      if (err instanceof McpReconcilerError && err.code === ErrorCode.Usage && /is already in/.test(err.message)) {
        out.push({ ...base, status: 'exists', reason: err.message });
        continue;
      }
      throw err;
    }
  }
  return out;
}
