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
  return `${text}${text.endsWith('\n') ? '' : eol}${eol}${block}`;
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
  return [...lines.slice(0, from), ...lines.slice(to)].join('');
}
