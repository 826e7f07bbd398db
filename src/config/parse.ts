import { findNodeAtLocation, getNodeValue, parseTree, printParseErrorCode, stripComments, type Node, type ParseError } from 'jsonc-parser';
import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Node as YamlNode } from 'yaml';

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

/** JSON with comments and trailing commas; an empty (or comment-only) file is `undefined`. */
export function parseJsonc(text: string): ParsedText | SyntaxProblem {
  // Fast path: most files are plain JSON, which V8 parses natively several times
  // faster than the tolerant tree parser; the tree is built only if an issue
  // needs a line number. Anything JSON.parse refuses (comments, trailing
  // commas, real errors) goes to the tolerant parser, which decides.
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return parseJsoncTree(text);
  }
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
  const root = parseTree(text, errors, { allowTrailingComma: true, disallowComments: false });
  const starts = lineStarts(text);
  if (root === undefined && stripComments(text).trim() === '') return { value: undefined, locate: () => undefined };
  const first = errors[0];
  if (first !== undefined || root === undefined) {
    const offset = first?.offset ?? 0;
    const what = first ? printParseErrorCode(first.error).replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase() : 'not JSON';
    return { position: positionAt(starts, offset), message: `JSON syntax error: ${what}` };
  }
  return {
    value: getNodeValue(root),
    locate(path) {
      for (let n = path.length; n >= 0; n--) {
        const node: Node | undefined = findNodeAtLocation(root, [...path.slice(0, n)]);
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
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: true });
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
        if (isMap(node)) {
          const pair = node.items.find((p) => (isScalar(p.key) ? String(p.key.value) : String(p.key)) === String(seg));
          if (!pair) break;
          const keyRange = isScalar(pair.key) ? pair.key.range : undefined;
          if (keyRange) found = keyRange[0];
          node = pair.value;
        } else if (isSeq(node) && typeof seg === 'number') {
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

/** Parse by format; `yaml` true for YAML, else JSON with comments. A leading BOM is ignored. */
export function parseText(text: string, yaml: boolean): ParsedText | SyntaxProblem {
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  return yaml ? parseYaml(body) : parseJsonc(body);
}

/** Narrowing helper. */
export function isSyntaxProblem(r: ParsedText | SyntaxProblem): r is SyntaxProblem {
  return !('locate' in r);
}
