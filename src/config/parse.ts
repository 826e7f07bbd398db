import { createRequire } from 'node:module';
import type * as Jsonc from 'jsonc-parser';
import type * as SmolToml from 'smol-toml';
import type * as Yaml from 'yaml';

type Node = Jsonc.Node;
type ParseError = Jsonc.ParseError;
type YamlNode = Yaml.Node;

// The parsers load on first use: most config files are plain JSON (parsed
// natively), and loading all three up front costs every host ~15 MB of RSS.
const requireLazy = createRequire(import.meta.url);
let jsoncModule: typeof Jsonc | undefined;
let tomlModule: typeof SmolToml | undefined;
let yamlModule: typeof Yaml | undefined;
const jsonc = (): typeof Jsonc => (jsoncModule ??= requireLazy('jsonc-parser') as typeof Jsonc);
const toml = (): typeof SmolToml => (tomlModule ??= requireLazy('smol-toml') as typeof SmolToml);
const yaml = (): typeof Yaml => (yamlModule ??= requireLazy('yaml') as typeof Yaml);

/**
 * Largest config file read, in bytes (1 MiB). Real config files are a few
 * kilobytes; a bigger one is refused before parsing so it cannot stall the
 * event loop (a 9 MB one-line YAML takes the YAML parser about a minute).
 */
export const MAX_CONFIG_BYTES = 1024 * 1024;

/**
 * Deepest nesting of objects and arrays accepted in a config file. Real
 * configs need about five levels; parsing, validation and hashing recurse,
 * so a 10 000-level file would overflow the stack.
 */
export const MAX_CONFIG_DEPTH = 64;

/** A 1-based position in a file. */
export interface Position {
  line: number;
  column: number;
}

/** A parsed file: its plain value and a way to find where a path is written. */
export interface ParsedText {
  value: unknown;
  /**
   * Where `path` is written: the key of the deepest existing member on the
   * path (so a bad field points at its own line), or `undefined`.
   */
  locate(path: readonly (string | number)[]): Position | undefined;
}

/** Why a whole file could not be parsed. */
export interface SyntaxProblem {
  position?: Position;
  message: string;
}

function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) starts.push(i + 1);
  return starts;
}

function positionAt(starts: readonly number[], offset: number): Position {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid]! <= offset) lo = mid;
    else hi = mid - 1;
  }
  return { line: lo + 1, column: offset - starts[lo]! + 1 };
}

function tooLarge(bytes: number): SyntaxProblem {
  const mb = (n: number) => `${(n / (1024 * 1024)).toFixed(1)} MB`;
  return {
    message: `the file is ${mb(bytes)}, over the ${mb(MAX_CONFIG_BYTES)} limit for a config file, so it was not read; a config file needs only server entries and settings: move anything else out of it`,
  };
}

/**
 * A problem when `bytes` is over {@link MAX_CONFIG_BYTES}, for callers that
 * know a file's size before reading it.
 */
export function checkConfigSize(bytes: number): SyntaxProblem | undefined {
  return bytes > MAX_CONFIG_BYTES ? tooLarge(bytes) : undefined;
}

function tooDeep(position: Position | undefined): SyntaxProblem {
  return {
    position,
    message: `nested more than ${MAX_CONFIG_DEPTH} levels deep, so the file was not loaded; config files need only a few levels: remove or flatten the deeply nested value`,
  };
}

/**
 * Offset of the first `{` or `[` that opens level `MAX_CONFIG_DEPTH + 1`, or
 * -1. A linear scan that skips strings and comments, so it runs before (and
 * instead of) any recursive parser.
 */
function jsonDepthOverflow(text: string): number {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c /* \ */) i++;
        else if (d === 0x22 || d === 0x0a) break;
      }
    } else if (c === 0x2f /* / */ && text.charCodeAt(i + 1) === 0x2f) {
      const end = text.indexOf('\n', i);
      i = end < 0 ? text.length : end;
    } else if (c === 0x2f && text.charCodeAt(i + 1) === 0x2a /* * */) {
      const end = text.indexOf('*/', i + 2);
      i = end < 0 ? text.length : end + 1;
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (++depth > MAX_CONFIG_DEPTH) return i;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      if (depth > 0) depth--;
    }
  }
  return -1;
}

/**
 * Offset of the first YAML collection at level `MAX_CONFIG_DEPTH + 1`, or -1.
 * The YAML CST parser keeps an explicit stack (no recursion), and the walk
 * here does too; only the composer, which builds the document, recurses.
 */
function yamlDepthOverflow(text: string): number {
  const stack: { token: Yaml.CST.Token; depth: number }[] = [];
  for (const token of new (yaml().Parser)().parse(text)) stack.push({ token, depth: 0 });
  while (stack.length > 0) {
    const { token, depth } = stack.pop()!;
    if (token.type === 'document') {
      if (token.value) stack.push({ token: token.value, depth });
    } else if (token.type === 'block-map' || token.type === 'block-seq' || token.type === 'flow-collection') {
      if (depth + 1 > MAX_CONFIG_DEPTH) return token.offset;
      for (const item of token.items as Yaml.CST.CollectionItem[]) {
        if (item.key) stack.push({ token: item.key, depth: depth + 1 });
        if (item.value) stack.push({ token: item.value, depth: depth + 1 });
      }
    }
  }
  return -1;
}

/**
 * Whether a parsed value nests deeper than {@link MAX_CONFIG_DEPTH}. YAML
 * aliases can stack shallow anchors into a deep value, so the YAML text
 * check alone is not enough. Iterative; a shared node is walked again only
 * when reached deeper than before, which bounds the work.
 */
function valueTooDeep(value: unknown): boolean {
  const seenAt = new Map<object, number>();
  const stack: { v: unknown; depth: number }[] = [{ v: value, depth: 0 }];
  while (stack.length > 0) {
    const { v, depth } = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth + 1 > MAX_CONFIG_DEPTH) return true;
    if ((seenAt.get(v) ?? -1) >= depth) continue;
    seenAt.set(v, depth);
    for (const child of Object.values(v)) stack.push({ v: child, depth: depth + 1 });
  }
  return false;
}

/** JSON with comments and trailing commas; an empty (or comment-only) file is `undefined`. */
export function parseJsonc(text: string): ParsedText | SyntaxProblem {
  // Fast path: most files are plain JSON, which V8 parses natively several times
  // faster than the tolerant tree parser (and without recursing, whatever the
  // depth); the tree is built only if an issue needs a line number. Anything
  // JSON.parse refuses (comments, trailing commas, real errors) goes to the
  // tolerant parser, which decides.
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // The tolerant parser, the schema and the hashes all recurse: refuse a deep file first.
    const deep = jsonDepthOverflow(text);
    return deep >= 0 ? tooDeep(positionAt(lineStarts(text), deep)) : parseJsoncTree(text);
  }
  // The schema and the hashes recurse. Checked on the value, not by scanning
  // the text: a per-character loop over a large config is hot enough that V8
  // optimises it, which costs a start more memory than the check itself
  // (docs/performance.md). The text scan only places the error.
  if (valueTooDeep(value)) return tooDeep(positionAt(lineStarts(text), jsonDepthOverflow(text)));
  let tree: ParsedText | undefined;
  return {
    value,
    locate(path) {
      tree ??= parseJsoncTree(text) as ParsedText;
      return tree.locate(path);
    },
  };
}

function parseJsoncTree(text: string): ParsedText | SyntaxProblem {
  const errors: ParseError[] = [];
  const root = jsonc().parseTree(text, errors, { allowTrailingComma: true, disallowComments: false });
  const starts = lineStarts(text);
  if (root === undefined && jsonc().stripComments(text).trim() === '') return { value: undefined, locate: () => undefined };
  const first = errors[0];
  if (first !== undefined || root === undefined) {
    const offset = first?.offset ?? 0;
    const what = first ? jsonc().printParseErrorCode(first.error).replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase() : 'not JSON';
    return { position: positionAt(starts, offset), message: `JSON syntax error: ${what}` };
  }
  return {
    value: jsonc().getNodeValue(root),
    locate(path) {
      for (let n = path.length; n >= 0; n--) {
        const node: Node | undefined = jsonc().findNodeAtLocation(root, [...path.slice(0, n)]);
        if (node === undefined) continue;
        // Point at the property's key, where the member starts.
        const at = node.parent?.type === 'property' ? node.parent.offset : node.offset;
        return positionAt(starts, at);
      }
      return undefined;
    },
  };
}

/** YAML (one document); an empty file is `null`. */
export function parseYaml(text: string): ParsedText | SyntaxProblem {
  const deep = yamlDepthOverflow(text);
  if (deep >= 0) return tooDeep(positionAt(lineStarts(text), deep));
  const lineCounter = new (yaml().LineCounter)();
  const doc = yaml().parseDocument(text, { lineCounter, prettyErrors: true });
  const first = doc.errors[0];
  if (first !== undefined) {
    const pos = first.linePos?.[0];
    // prettyErrors appends " at line X, column Y:" and a code excerpt; keep the sentence.
    const message = (first.message.split('\n')[0] ?? first.message).replace(/ at line \d+, column \d+:?$/, '');
    return { position: pos ? { line: pos.line, column: pos.col } : undefined, message: `YAML syntax error: ${message}` };
  }
  let value: unknown;
  try {
    value = doc.toJS();
  } catch (err) {
    return { message: `YAML error: ${err instanceof Error ? err.message : String(err)}` };
  }
  if (valueTooDeep(value)) return tooDeep(undefined);
  const toPos = (offset: number): Position => {
    const p = lineCounter.linePos(offset);
    return { line: p.line, column: p.col };
  };
  return {
    value,
    locate(path) {
      let node: unknown = doc.contents;
      let found: number | undefined = (doc.contents as YamlNode | null)?.range?.[0];
      for (const seg of path) {
        if (yaml().isMap(node)) {
          const pair = node.items.find((p) => (yaml().isScalar(p.key) ? String(p.key.value) : String(p.key)) === String(seg));
          if (!pair) break;
          const keyRange = yaml().isScalar(pair.key) ? pair.key.range : undefined;
          if (keyRange) found = keyRange[0];
          node = pair.value;
        } else if (yaml().isSeq(node) && typeof seg === 'number') {
          const item = node.items[seg] as YamlNode | undefined;
          if (!item) break;
          if (item.range) found = item.range[0];
          node = item;
        } else break;
      }
      return found === undefined ? undefined : toPos(found);
    },
  };
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * TOML (Codex's `config.toml`). Dates become strings (no config field takes
 * one), and `locate` finds a `[table.name]` header and then a `key =` line
 * in it, which is all a server entry needs.
 */
export function parseToml(text: string): ParsedText | SyntaxProblem {
  let value: unknown;
  try {
    // maxDepth bounds inline arrays and tables; dotted headers are checked below.
    value = toml().parse(text, { maxDepth: MAX_CONFIG_DEPTH });
  } catch (err) {
    if (err instanceof toml().TomlError) {
      const message = (err.message.split('\n')[0] ?? err.message).trim();
      return { position: { line: err.line, column: err.column }, message: `TOML syntax error: ${message}` };
    }
    return { message: `TOML error: ${err instanceof Error ? err.message : String(err)}` };
  }
  if (valueTooDeep(value)) return tooDeep(undefined);
  const lines = text.split('\n');
  return {
    value: JSON.parse(JSON.stringify(value)) as unknown,
    locate(path) {
      const keys = path.map(String);
      const quoted = (k: string) => `(?:${escapeRegExp(k)}|"${escapeRegExp(k)}"|'${escapeRegExp(k)}')`;
      let found: Position | undefined;
      // The longest table header that is a prefix of the path, then a key line inside it.
      for (let n = keys.length; n >= 1 && found === undefined; n--) {
        const header = new RegExp(`^\\s*\\[\\s*${keys.slice(0, n).map(quoted).join('\\s*\\.\\s*')}\\s*\\]\\s*(#.*)?$`);
        const at = lines.findIndex((l) => header.test(l));
        if (at < 0) continue;
        found = { line: at + 1, column: 1 };
        const key = keys[n];
        if (key === undefined) break;
        const member = new RegExp(`^\\s*${quoted(key)}\\s*=`);
        for (let i = at + 1; i < lines.length && !/^\s*\[/.test(lines[i]!); i++) {
          if (member.test(lines[i]!)) {
            found = { line: i + 1, column: lines[i]!.search(/\S/) + 1 };
            break;
          }
        }
      }
      return found;
    },
  };
}

/** The syntax of a config file. */
export type Syntax = 'json' | 'yaml' | 'toml';

/**
 * Parse by format; `yaml` true (or `'yaml'`) for YAML, `'toml'` for TOML, else JSON with comments. A leading
 * BOM is ignored. Text over {@link MAX_CONFIG_BYTES} or nested deeper than
 * {@link MAX_CONFIG_DEPTH} is refused with a problem saying so, before any
 * recursive parsing. Never throws.
 */
export function parseText(text: string, yaml: boolean | Syntax): ParsedText | SyntaxProblem {
  // Characters never outnumber UTF-8 bytes, so only a long text needs counting.
  if (text.length > MAX_CONFIG_BYTES / 4) {
    const bytes = Buffer.byteLength(text, 'utf8');
    if (bytes > MAX_CONFIG_BYTES) return tooLarge(bytes);
  }
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  if (yaml === 'toml') return parseToml(body);
  return yaml === true || yaml === 'yaml' ? parseYaml(body) : parseJsonc(body);
}

/** Narrowing helper. */
export function isSyntaxProblem(r: ParsedText | SyntaxProblem): r is SyntaxProblem {
  return !('locate' in r);
}
