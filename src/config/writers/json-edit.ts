/**
 * Minimal edits to JSON-with-comments text: add or remove one member of an
 * object and leave every other byte alone. jsonc-parser locates the members;
 * the text is spliced here rather than with its `modify`, which reformats
 * the neighbouring member and moves its trailing comment. An insertion is
 * made so that removing the same member gives back the original bytes.
 */
import { createRequire } from 'node:module';
import type * as Jsonc from 'jsonc-parser';

type Node = Jsonc.Node;

const requireLazy = createRequire(import.meta.url);
let jsoncModule: typeof Jsonc | undefined;
const jsonc = (): typeof Jsonc => (jsoncModule ??= requireLazy('jsonc-parser') as typeof Jsonc);

/** Line ending and indent unit a file already uses, so new text matches it. */
export interface TextStyle {
  eol: string;
  unit: string;
}

/** The style of `text`: CRLF if it has any, the first indented line's indent as the unit (default two spaces). */
export function detectStyle(text: string): TextStyle {
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  const m = /^([ \t]+)\S/m.exec(text);
  const unit = m === null ? '  ' : m[1]!.startsWith('\t') ? '\t' : m[1]!;
  return { eol, unit };
}

/** Why an edit cannot be made (any syntax); the caller turns it into a user-facing error. */
export class TextEditError extends Error {
  constructor(
    message: string,
    /** 1-based line of the problem, when it has one. */
    readonly line?: number,
  ) {
    super(message);
    this.name = 'TextEditError';
  }
}

const isBlankChar = (c: string | undefined): boolean => c === ' ' || c === '\t';
const isEol = (c: string | undefined): boolean => c === '\n' || c === '\r';

function lineStart(text: string, off: number): number {
  return text.lastIndexOf('\n', off - 1) + 1;
}

/** Where the line holding `off` ends: the offset of its `\r\n` / `\n`, or the end of the text. */
function lineEnd(text: string, off: number): number {
  const nl = text.indexOf('\n', off);
  if (nl < 0) return text.length;
  return nl > 0 && text[nl - 1] === '\r' ? nl - 1 : nl;
}

/** After the line ending at `end` (an offset from {@link lineEnd}): the start of the next line. */
function afterEol(text: string, end: number): number {
  if (text[end] === '\r' && text[end + 1] === '\n') return end + 2;
  return end < text.length ? end + 1 : end;
}

function indentOf(text: string, off: number): string {
  const start = lineStart(text, off);
  let i = start;
  while (isBlankChar(text[i])) i++;
  return text.slice(start, i);
}

function onlyBlankBefore(text: string, off: number): boolean {
  return text.slice(lineStart(text, off), off).trim() === '';
}

/** Past spaces, tabs and comments on this line (a `//` comment runs to the line's end); stops at a line break. */
function skipInline(text: string, off: number): number {
  let i = off;
  for (;;) {
    while (isBlankChar(text[i])) i++;
    if (text.startsWith('//', i)) return lineEnd(text, i);
    if (text.startsWith('/*', i)) {
      const close = text.indexOf('*/', i + 2);
      const body = close < 0 ? text.slice(i) : text.slice(i, close);
      if (close < 0 || body.includes('\n')) return i;
      i = close + 2;
      continue;
    }
    return i;
  }
}

/** Past whitespace and comments, across lines. */
function skipAll(text: string, off: number): number {
  let i = off;
  for (;;) {
    i = skipInline(text, i);
    if (isEol(text[i])) {
      i++;
      continue;
    }
    if (text.startsWith('/*', i)) {
      const close = text.indexOf('*/', i + 2);
      i = close < 0 ? text.length : close + 2;
      continue;
    }
    return i;
  }
}

function lineOf(text: string, off: number): number {
  let n = 1;
  for (let i = text.indexOf('\n'); i >= 0 && i < off; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

/** `value` as JSON in the file's style, its later lines indented by `indent`. */
function serialize(value: unknown, indent: string, style: TextStyle): string {
  return JSON.stringify(value, null, style.unit).split('\n').join(style.eol + indent);
}

function parse(text: string): Node | undefined {
  const errors: Jsonc.ParseError[] = [];
  const root = jsonc().parseTree(text, errors, { allowTrailingComma: true, disallowComments: false });
  const first = errors[0];
  if (first !== undefined) {
    const what = jsonc().printParseErrorCode(first.error).replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
    throw new TextEditError(`JSON syntax error: ${what}`, lineOf(text, first.offset));
  }
  return root;
}

function memberOf(obj: Node, key: string): Node | undefined {
  return obj.children?.find((p) => p.children?.[0]?.value === key);
}

function splice(text: string, at: number, remove: number, insert: string): string {
  return text.slice(0, at) + insert + text.slice(at + remove);
}

/** Add `"key": value` as the last member of the object node `obj`. */
function insertMember(text: string, obj: Node, key: string, value: unknown, style: TextStyle): string {
  const props = obj.children ?? [];
  const open = obj.offset;
  const close = obj.offset + obj.length - 1;
  const name = JSON.stringify(key);
  if (props.length === 0) {
    const base = indentOf(text, open);
    const indent = base + style.unit;
    const member = `${name}: ${serialize(value, indent, style)}`;
    const inner = text.slice(open + 1, close);
    if (inner.trim() === '') return splice(text, open + 1, inner.length, `${style.eol}${indent}${member}${style.eol}${base}`);
    // Only comments inside: the member goes on its own line before the closing brace.
    if (onlyBlankBefore(text, close)) return splice(text, lineStart(text, close), 0, `${indent}${member}${style.eol}`);
    return splice(text, close, 0, ` ${name}: ${JSON.stringify(value)} `);
  }
  const last = props[props.length - 1]!;
  const lastEnd = last.offset + last.length;
  const next = skipAll(text, lastEnd);
  const trailingComma = text[next] === ',';
  const ownLine = onlyBlankBefore(text, last.offset) && text.slice(lastEnd, close).includes('\n');
  if (!ownLine) {
    // An object written on one line stays on one line.
    const member = `${name}: ${JSON.stringify(value)}`;
    return trailingComma ? splice(text, next + 1, 0, ` ${member},`) : splice(text, lastEnd, 0, `, ${member}`);
  }
  const indent = indentOf(text, last.offset);
  const member = `${name}: ${serialize(value, indent, style)}`;
  if (trailingComma) return splice(text, lineEnd(text, next), 0, `${style.eol}${indent}${member},`);
  // The comma right after the last value, the new member after that line's own comment.
  const withComma = splice(text, lastEnd, 0, ',');
  return splice(withComma, lineEnd(withComma, lastEnd + 1), 0, `${style.eol}${indent}${member}`);
}

/** Remove member `index` of the object node `obj`, with its separator and its own lines. */
function spliceOut(text: string, obj: Node, index: number): string {
  const props = obj.children ?? [];
  const p = props[index]!;
  const open = obj.offset;
  const close = obj.offset + obj.length - 1;
  const pStart = p.offset;
  const pEnd = p.offset + p.length;
  const after = skipAll(text, pEnd);
  const hasComma = text[after] === ',';
  const endTok = hasComma ? after + 1 : pEnd;
  const ownLine = onlyBlankBefore(text, pStart) && isEolOrEnd(text, skipInline(text, endTok));
  const only = props.length === 1;
  if (only) {
    const rest = text.slice(open + 1, pStart) + text.slice(endTok, close);
    if (rest.trim() === '') return splice(text, open + 1, close - open - 1, '');
  }
  if (ownLine) {
    if (index < props.length - 1 || hasComma || only) {
      const from = lineStart(text, pStart);
      const to = afterEol(text, lineEnd(text, endTok));
      return splice(text, from, to - from, '');
    }
    const q = props[index - 1]!;
    const comma = skipAll(text, q.offset + q.length);
    const from = lineEnd(text, comma);
    const to = lineEnd(text, pEnd);
    return splice(splice(text, from, to - from, ''), comma, 1, '');
  }
  if (hasComma) return splice(text, pStart, skipAll(text, after + 1) - pStart, '');
  if (index > 0) {
    const q = props[index - 1]!;
    const qEnd = q.offset + q.length;
    return splice(text, qEnd, pEnd - qEnd, '');
  }
  return splice(text, pStart, pEnd - pStart, '');
}

function isEolOrEnd(text: string, off: number): boolean {
  return off >= text.length || isEol(text[off]);
}

/** What is at `path` in a document, by key: an object node, missing, or something else. */
function walk(root: Node, path: readonly string[]): { node: Node; depth: number } {
  let node = root;
  let depth = 0;
  for (const key of path) {
    if (node.type !== 'object') break;
    const member = memberOf(node, key);
    if (member === undefined) break;
    node = member.children![1]!;
    depth++;
  }
  return { node, depth };
}

function describePath(path: readonly string[]): string {
  return path.map((k, i) => (i === 0 && /^[A-Za-z_][\w-]*$/.test(k) ? k : `[${JSON.stringify(k)}]`)).join('');
}

/**
 * `text` with `value` added at `[...path, key]`; the objects on `path` are
 * created when missing. `text` may be empty (a new file). Throws
 * {@link TextEditError} when the text does not parse, when something on the
 * path is not an object, or when `key` is already there.
 */
export function addMember(text: string, path: readonly string[], key: string, value: unknown): string {
  const bom = text.startsWith('\uFEFF') ? '\uFEFF' : '';
  const body = text.slice(bom.length);
  const style = detectStyle(body);
  const root = body.trim() === '' ? undefined : parse(body);
  const nested = (rest: readonly string[]): unknown => rest.reduceRight<unknown>((inner, k) => ({ [k]: inner }), { [key]: value });
  if (root === undefined) return `${bom}${serialize(nested(path), '', style)}${style.eol}`;
  if (root.type !== 'object') throw new TextEditError('the top level is not an object', lineOf(body, root.offset));
  const { node, depth } = walk(root, path);
  if (node.type !== 'object') {
    throw new TextEditError(`${describePath(path.slice(0, depth))} is ${node.type === 'null' ? 'null' : `a ${node.type}`}, not an object of servers`, lineOf(body, node.offset));
  }
  if (depth < path.length) {
    const rest = path.slice(depth + 1);
    return bom + insertMember(body, node, path[depth]!, nested(rest), style);
  }
  if (memberOf(node, key) !== undefined) throw new TextEditError(`"${key}" is already there`, lineOf(body, memberOf(node, key)!.offset));
  return bom + insertMember(body, node, key, value, style);
}

/**
 * `text` without the member `key` of the object at `path`, or `undefined`
 * when there is no such member. The object itself stays, even when empty.
 */
export function deleteMember(text: string, path: readonly string[], key: string): string | undefined {
  const bom = text.startsWith('\uFEFF') ? '\uFEFF' : '';
  const body = text.slice(bom.length);
  if (body.trim() === '') return undefined;
  const root = parse(body);
  if (root === undefined || root.type !== 'object') return undefined;
  const { node, depth } = walk(root, path);
  if (depth < path.length || node.type !== 'object') return undefined;
  const index = (node.children ?? []).findIndex((p) => p.children?.[0]?.value === key);
  if (index < 0) return undefined;
  return bom + spliceOut(body, node, index);
}

/** The member `key` of the object at `path`, as a plain value, or `undefined`. */
export function readMember(text: string, path: readonly string[], key: string): unknown {
  const body = text.startsWith('\uFEFF') ? text.slice(1) : text;
  if (body.trim() === '') return undefined;
  const root = parse(body);
  if (root === undefined || root.type !== 'object') return undefined;
  const { node, depth } = walk(root, path);
  if (depth < path.length || node.type !== 'object') return undefined;
  const member = memberOf(node, key);
  return member === undefined ? undefined : jsonc().getNodeValue(member.children![1]!);
}

/**
 * `text` with the member `key` of the object at `path` set to `value`: its
 * value replaced in place when it is there (the rest of the line untouched),
 * else added as the object's last member. Throws {@link TextEditError} when
 * the text does not parse or the object at `path` is missing.
 */
export function setMember(text: string, path: readonly string[], key: string, value: unknown): string {
  const bom = text.startsWith('\uFEFF') ? '\uFEFF' : '';
  const body = text.slice(bom.length);
  const root = body.trim() === '' ? undefined : parse(body);
  if (root === undefined || root.type !== 'object') throw new TextEditError('the file has no object to edit');
  const { node, depth } = walk(root, path);
  if (depth < path.length || node.type !== 'object') throw new TextEditError(`${describePath(path)} is not there`, lineOf(body, node.offset));
  const member = memberOf(node, key);
  if (member === undefined) return bom + insertMember(body, node, key, value, detectStyle(body));
  const old = member.children![1]!;
  return bom + splice(body, old.offset, old.length, JSON.stringify(value));
}

/** The array node at `[...path, key]` of `body`, or a {@link TextEditError}. */
function arrayAt(body: string, path: readonly string[], key: string): Node {
  const root = body.trim() === '' ? undefined : parse(body);
  if (root === undefined || root.type !== 'object') throw new TextEditError('the file has no object to edit');
  const { node, depth } = walk(root, [...path, key]);
  if (depth < path.length + 1 || node.type !== 'array') throw new TextEditError(`${describePath([...path, key])} is not a list`, lineOf(body, node.offset));
  return node;
}

/**
 * `text` with `value` appended to the array at `[...path, key]`, written in
 * the array's own layout (the separator its elements already use), so that
 * {@link removeFromArray} of it gives back the same bytes.
 */
export function appendToArray(text: string, path: readonly string[], key: string, value: unknown): string {
  const bom = text.startsWith('\uFEFF') ? '\uFEFF' : '';
  const body = text.slice(bom.length);
  const arr = arrayAt(body, path, key);
  const items = arr.children ?? [];
  const json = JSON.stringify(value);
  if (items.length === 0) return bom + splice(body, arr.offset + 1, arr.length - 2, json);
  const last = items[items.length - 1]!;
  const end = last.offset + last.length;
  let sep: string;
  if (items.length >= 2) {
    const prev = items[items.length - 2]!;
    sep = body.slice(prev.offset + prev.length, last.offset);
  } else {
    const lead = body.slice(arr.offset + 1, last.offset);
    sep = lead.includes('\n') ? `,${detectStyle(body).eol}${indentOf(body, last.offset)}` : ', ';
  }
  return bom + splice(body, end, 0, sep + json);
}

/** `text` without the element of the array at `[...path, key]` equal to `value` (its separator goes too); `undefined` when it has none. */
export function removeFromArray(text: string, path: readonly string[], key: string, value: unknown): string | undefined {
  const bom = text.startsWith('\uFEFF') ? '\uFEFF' : '';
  const body = text.slice(bom.length);
  const arr = arrayAt(body, path, key);
  const items = arr.children ?? [];
  const i = items.findIndex((n) => JSON.stringify(jsonc().getNodeValue(n)) === JSON.stringify(value));
  if (i < 0) return undefined;
  const item = items[i]!;
  if (items.length === 1) return bom + splice(body, arr.offset + 1, arr.length - 2, '');
  if (i > 0) {
    const prev = items[i - 1]!;
    return bom + splice(body, prev.offset + prev.length, item.offset + item.length - (prev.offset + prev.length), '');
  }
  return bom + splice(body, item.offset, items[1]!.offset - item.offset, '');
}
