/**
 * Minimal edits to a TOML config (Codex's `config.toml`): a server is one
 * `[mcp_servers.<name>]` table, appended at the end on add and cut out
 * (with its sub-tables and one separating blank line) on remove, so comments
 * and everything else stay byte-identical and remove undoes add.
 */
import { createRequire } from 'node:module';
import type * as SmolToml from 'smol-toml';
import { detectStyle, TextEditError } from './json-edit.js';

const requireLazy = createRequire(import.meta.url);
let tomlModule: typeof SmolToml | undefined;
const toml = (): typeof SmolToml => (tomlModule ??= requireLazy('smol-toml') as typeof SmolToml);

function tomlKey(key: string): string {
  return /^[A-Za-z0-9_-]+$/.test(key) ? key : tomlString(key);
}

/** A TOML basic string; control characters escaped (JSON leaves DEL raw, TOML does not allow it). */
function tomlString(s: string): string {
  return JSON.stringify(s).replace(/[\u007f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function tomlValue(v: unknown): string {
  if (typeof v === 'string') return tomlString(v);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return `[${v.map(tomlValue).join(', ')}]`;
  if (v !== null && typeof v === 'object') return `{ ${Object.entries(v).map(([k, x]) => `${tomlKey(k)} = ${tomlValue(x)}`).join(', ')} }`;
  throw new TextEditError(`cannot write ${String(v)} in TOML`);
}

function parse(text: string): Record<string, unknown> {
  try {
    return toml().parse(text) as Record<string, unknown>;
  } catch (err) {
    const line = err instanceof toml().TomlError ? err.line : undefined;
    throw new TextEditError(`TOML syntax error: ${(err instanceof Error ? err.message : String(err)).split('\n')[0]}`, line);
  }
}

function at(value: Record<string, unknown>, path: readonly string[]): unknown {
  let node: unknown = value;
  for (const k of path) node = node !== null && typeof node === 'object' && Object.hasOwn(node, k) ? (node as Record<string, unknown>)[k] : undefined;
  return node;
}

/** The server `name` under the table `path` (`['mcp_servers']`), or `undefined`. */
export function readTomlServer(text: string, path: readonly string[], name: string): unknown {
  return text.trim() === '' ? undefined : at(parse(text), [...path, name]);
}

/** `text` with `[<path>.<name>]` appended. Throws {@link TextEditError} when it does not parse or the server exists. */
export function addTomlServer(text: string, path: readonly string[], name: string, entry: Record<string, unknown>): string {
  if (readTomlServer(text, path, name) !== undefined) throw new TextEditError(`"${name}" is already there`);
  const { eol } = detectStyle(text);
  const header = `[${[...path, name].map(tomlKey).join('.')}]`;
  const body = Object.entries(entry).map(([k, v]) => `${tomlKey(k)} = ${tomlValue(v)}`);
  const block = [header, ...body].join(eol) + eol;
  if (text === '') return block;
  // A file whose last line has no line ending keeps that style: the new table becomes that last line.
  if (!text.endsWith('\n')) return `${text}${eol}${eol}${block.slice(0, -eol.length)}`;
  return `${text}${eol}${block}`;
}

/** A table header line `[a.b]` as its keys, or `undefined` (array tables and other lines). */
function headerKeys(line: string): string[] | undefined {
  const m = /^\s*\[(?!\[)(.*)\]\s*(#.*)?$/.exec(line);
  if (m === null) return undefined;
  try {
    // Parse the header through the TOML parser itself, so quoting and spacing are read as TOML reads them.
    const parsed = toml().parse(`[${m[1]}]\n__k = 0\n`);
    const keys: string[] = [];
    let node: unknown = parsed;
    while (node !== null && typeof node === 'object' && !Object.hasOwn(node, '__k')) {
      const k = Object.keys(node)[0];
      if (k === undefined) return undefined;
      keys.push(k);
      node = (node as Record<string, unknown>)[k];
    }
    return keys;
  } catch {
    return undefined;
  }
}

const isBlank = (line: string): boolean => line.trim() === '';
const isComment = (line: string): boolean => /^\s*#/.test(line);

/**
 * `text` without the table `[<path>.<name>]` and its sub-tables, or
 * `undefined` when the server is not there. A server written some other way
 * (dotted keys, an inline table) is a {@link TextEditError}: edit it by hand.
 */
export function removeTomlServer(text: string, path: readonly string[], name: string): string | undefined {
  if (readTomlServer(text, path, name) === undefined) return undefined;
  const want = [...path, name];
  // Lines with their endings, so joining them gives the text back exactly.
  const lines = text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
  const within = (keys: string[] | undefined) => keys !== undefined && keys.length >= want.length && want.every((k, i) => keys[i] === k);
  const start = lines.findIndex((l) => {
    const keys = headerKeys(l);
    return keys !== undefined && keys.length === want.length && within(keys);
  });
  if (start < 0) throw new TextEditError(`"${name}" is not written as its own [${want.map(tomlKey).join('.')}] table, so it cannot be removed safely; remove it by hand`);
  // The block runs until a header of another table; comments and blank lines just before that header belong to it.
  let end = start + 1;
  while (end < lines.length) {
    const keys = headerKeys(lines[end]!);
    if (keys !== undefined && !within(keys)) break;
    if (/^\s*\[\[/.test(lines[end]!)) break;
    end++;
  }
  while (end > start + 1 && (isBlank(lines[end - 1]!) || isComment(lines[end - 1]!))) end--;
  let from = start;
  let to = end;
  if (from > 0 && isBlank(lines[from - 1]!)) from--;
  else if (to < lines.length && isBlank(lines[to]!)) to++;
  const rest = [...lines.slice(0, from), ...lines.slice(to)].join('');
  // The table was the file's last line, without a line ending: so is the line now last.
  return to === lines.length && !lines[lines.length - 1]!.endsWith('\n') ? rest.replace(/\r?\n$/, '') : rest;
}

/** The lines of the table `[<path>]` itself (not its sub-tables): `[start, end)`, `start` being the header. */
function tableLines(lines: readonly string[], want: readonly string[]): { start: number; end: number } | undefined {
  const start = lines.findIndex((l) => {
    const keys = headerKeys(l);
    return keys !== undefined && keys.length === want.length && want.every((k, i) => keys[i] === k);
  });
  if (start < 0) return undefined;
  let end = start + 1;
  while (end < lines.length && headerKeys(lines[end]!) === undefined && !/^\s*\[\[/.test(lines[end]!)) end++;
  return { start, end };
}

function keyLine(line: string, key: string): boolean {
  const m = /^\s*("(?:[^"\\]|\\.)*"|'[^']*'|[A-Za-z0-9_-]+)\s*=/.exec(line);
  if (m === null) return false;
  const raw = m[1]!;
  return (raw.startsWith('"') ? (JSON.parse(raw) as string) : raw.startsWith("'") ? raw.slice(1, -1) : raw) === key;
}

function tableError(want: readonly string[]): TextEditError {
  return new TextEditError(`"${want[want.length - 1]}" is not written as its own [${want.map(tomlKey).join('.')}] table, so it cannot be changed safely; edit it by hand`);
}

/**
 * `text` with `key = value` in the table `[<path>.<name>]`: the key's line
 * replaced when it is there (one-line values only), else a line added after
 * the table's last key, so {@link deleteTomlKey} gives the original back.
 */
export function setTomlKey(text: string, path: readonly string[], name: string, key: string, value: unknown): string {
  const want = [...path, name];
  if (readTomlServer(text, path, name) === undefined) throw new TextEditError(`"${name}" is not in the file`);
  const lines = text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
  const table = tableLines(lines, want);
  if (table === undefined) throw tableError(want);
  const { eol } = detectStyle(text);
  const line = `${tomlKey(key)} = ${tomlValue(value)}`;
  for (let i = table.start + 1; i < table.end; i++) {
    if (!keyLine(lines[i]!, key)) continue;
    const ending = /\r?\n$/.exec(lines[i]!)?.[0] ?? '';
    const trial = [...lines.slice(0, i), `${line}${ending}`, ...lines.slice(i + 1)].join('');
    // A value that ran over several lines would leave its tail behind: refuse rather than corrupt.
    if (!deepSame(at(parse(trial), [...want, key]), value)) throw new TextEditError(`${key} of "${name}" spans several lines; edit it by hand`, i + 1);
    return trial;
  }
  let last = table.start;
  for (let i = table.start + 1; i < table.end; i++) if (!isBlank(lines[i]!) && !isComment(lines[i]!)) last = i;
  const tail = lines[last]!;
  // After the table's last key; in a file whose last line has no line ending, ours goes on a new last line without one.
  const inserted = tail.endsWith('\n') ? [tail, `${line}${eol}`] : [`${tail}${eol}`, line];
  return [...lines.slice(0, last), ...inserted, ...lines.slice(last + 1)].join('');
}

/** `text` without the line `key = …` of the table `[<path>.<name>]`, or `undefined` when it has none. */
export function deleteTomlKey(text: string, path: readonly string[], name: string, key: string): string | undefined {
  const want = [...path, name];
  const server = readTomlServer(text, path, name);
  if (server === undefined || typeof server !== 'object' || server === null || !Object.hasOwn(server, key)) return undefined;
  const lines = text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
  const table = tableLines(lines, want);
  if (table === undefined) throw tableError(want);
  for (let i = table.start + 1; i < table.end; i++) {
    if (!keyLine(lines[i]!, key)) continue;
    const trial = [...lines.slice(0, i), ...lines.slice(i + 1)].join('');
    const after = readTomlServer(trial, path, name) as Record<string, unknown> | undefined;
    if (after === undefined || Object.hasOwn(after, key)) throw new TextEditError(`${key} of "${name}" spans several lines; edit it by hand`, i + 1);
    // The last line had no line ending: the one before it loses its own instead.
    return lines[i]!.endsWith('\n') ? trial : trial.replace(/\r?\n$/, '');
  }
  throw tableError(want);
}

function deepSame(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
