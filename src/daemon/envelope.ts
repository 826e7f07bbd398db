/**
 * The envelope of one newline-delimited JSON-RPC message, read straight from
 * its bytes: the top-level `id` and `method`, and whether it carries a
 * `result` or an `error`. The shim needs only these to pass a message on
 * (docs/daemon.md, "How it works"); parsing the whole line (a tool result can
 * be megabytes) and serializing it again would be done for nothing, since
 * the bytes go on unchanged. Strings are skipped with `indexOf`, so a large
 * text costs a memchr, not a walk in JavaScript.
 */

/** What {@link readEnvelope} found. Offsets are into the buffer it was given. */
export interface Envelope {
  /** The `id` as canonical JSON (`5`, `"a"`), the key the shim files requests under; absent for a notification. */
  id?: string;
  /** Where the `id` value's bytes are (to splice another id in). */
  idStart: number;
  idEnd: number;
  method?: string;
  hasResult: boolean;
  hasError: boolean;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0d || c === 0x0a;
}

function skipSpace(buf: Uint8Array, i: number, end: number): number {
  while (i < end && isSpace(buf[i]!)) i++;
  return i;
}

/** The index just past the string whose opening quote is at `i`; -1 when it does not close before `end`. */
function stringEnd(buf: Buffer, i: number, end: number): number {
  let at = i + 1;
  for (;;) {
    const q = buf.indexOf(QUOTE, at);
    if (q < 0 || q >= end) return -1;
    let slashes = 0;
    for (let j = q - 1; j > i && buf[j] === BACKSLASH; j--) slashes++;
    if (slashes % 2 === 0) return q + 1;
    at = q + 1;
  }
}

/** The index just past the JSON value starting at `i`; -1 when it is cut off. */
function valueEnd(buf: Buffer, i: number, end: number): number {
  const c = buf[i];
  if (c === QUOTE) return stringEnd(buf, i, end);
  if (c === OPEN_BRACE || c === OPEN_BRACKET) {
    let depth = 0;
    while (i < end) {
      const b = buf[i]!;
      if (b === QUOTE) {
        i = stringEnd(buf, i, end);
        if (i < 0) return -1;
        continue;
      }
      if (b === OPEN_BRACE || b === OPEN_BRACKET) depth++;
      else if (b === CLOSE_BRACE || b === CLOSE_BRACKET) {
        depth--;
        if (depth === 0) return i + 1;
      }
      i++;
    }
    return -1;
  }
  while (i < end) {
    const b = buf[i]!;
    if (b === COMMA || b === CLOSE_BRACE || b === CLOSE_BRACKET || isSpace(b)) break;
    i++;
  }
  return i;
}

/** The canonical JSON of an id token (`"\u0041"` and `"A"` are one id), or undefined when it is not a string or number. */
function canonicalId(token: string): string | undefined {
  const first = token.charCodeAt(0);
  // A plain number or an escape-free string is canonical as written.
  if (first === QUOTE ? token.indexOf('\\') < 0 : /^-?\d+$/.test(token)) return token;
  try {
    const v = JSON.parse(token) as unknown;
    return typeof v === 'string' || typeof v === 'number' ? JSON.stringify(v) : undefined;
  } catch {
    return undefined;
  }
}

const RESULT_HEAD = Buffer.from('{"result":');
const METHOD_HEAD = Buffer.from('{"method":"');
const ID_TAIL = Buffer.from(',"id":');

/**
 * The id of a line ending in `,"id":<number or string>}` (`end` just past
 * the `}`): a quote after a comma opens a key, and the brace right after its
 * value closes the line's top-level object, so this `id` is the message's.
 */
function tailId(buf: Buffer, start: number, end: number): { id: string; idStart: number; idEnd: number } | undefined {
  if (end - start < ID_TAIL.length + 2 || buf[end - 1] !== CLOSE_BRACE) return undefined;
  const at = buf.lastIndexOf(ID_TAIL, end - 1);
  if (at < start) return undefined;
  const idStart = at + ID_TAIL.length;
  const idEnd = end - 1;
  if (idEnd - idStart > 256) return undefined;
  const token = buf.toString('utf8', idStart, idEnd);
  // The value must be one scalar running to the closing brace.
  if (token.charCodeAt(0) === QUOTE ? stringEnd(buf, idStart, idEnd + 1) !== idEnd : !/^-?\d+$/.test(token)) return undefined;
  const id = canonicalId(token);
  return id === undefined ? undefined : { id, idStart, idEnd };
}

function startsWith(buf: Buffer, start: number, head: Buffer): boolean {
  return buf.length - start >= head.length && buf.compare(head, 0, head.length, start, start + head.length) === 0;
}

/**
 * A response as the SDK writes it (`{"result":…,"jsonrpc":"2.0","id":…}`)
 * without walking its result: a line that opens with the key `result` is a
 * response, and its id is the one at its end ({@link tailId}).
 */
function fastResponse(buf: Buffer, start: number, end: number): Envelope | undefined {
  if (!startsWith(buf, start, RESULT_HEAD)) return undefined;
  const tail = tailId(buf, start + RESULT_HEAD.length, end);
  return tail && { ...tail, hasResult: true, hasError: false };
}

/**
 * The envelope of a long line known only by its first and last bytes (it
 * came in several chunks, and joining them would copy it for nothing): an
 * SDK-shaped response (`{"result":…,"id":…}`) or request
 * (`{"method":"…",…,"id":…}`). Undefined for any other shape (join the line
 * and use {@link readEnvelope}). The id's offsets are the tail's.
 */
export function readSplitEnvelope(head: Buffer, tail: Buffer): Envelope | undefined {
  let end = tail.length;
  while (end > 0 && isSpace(tail[end - 1]!)) end--;
  const id = tailId(tail, 0, end);
  if (!id) return undefined;
  if (startsWith(head, 0, RESULT_HEAD)) return { ...id, hasResult: true, hasError: false };
  if (!startsWith(head, 0, METHOD_HEAD)) return undefined;
  const close = head.indexOf(QUOTE, METHOD_HEAD.length);
  if (close < 0) return undefined;
  const method = head.toString('utf8', METHOD_HEAD.length, close);
  return method.includes('\\') ? undefined : { ...id, method, hasResult: false, hasError: false };
}

/**
 * Read the envelope of the JSON object in `buf[start, end)` (one line, its
 * newline excluded). Undefined when the line is not one well-formed JSON
 * object as far as its top level goes (the daemon or client will say what
 * is wrong with it).
 */
export function readEnvelope(buf: Buffer, start: number, end: number): Envelope | undefined {
  while (end > start && isSpace(buf[end - 1]!)) end--;
  start = skipSpace(buf, start, end);
  const fast = fastResponse(buf, start, end);
  if (fast) return fast;
  if (buf[start] !== OPEN_BRACE) return undefined;
  const env: Envelope = { idStart: -1, idEnd: -1, hasResult: false, hasError: false };
  let i = skipSpace(buf, start + 1, end);
  if (buf[i] === CLOSE_BRACE) return i === end - 1 ? env : undefined;
  for (;;) {
    if (buf[i] !== QUOTE) return undefined;
    const keyEnd = stringEnd(buf, i, end);
    if (keyEnd < 0) return undefined;
    const keyLength = keyEnd - i - 2;
    const key = keyLength <= 6 ? buf.toString('latin1', i + 1, keyEnd - 1) : '';
    i = skipSpace(buf, keyEnd, end);
    if (buf[i] !== COLON) return undefined;
    const valueStart = skipSpace(buf, i + 1, end);
    const vEnd = valueEnd(buf, valueStart, end);
    if (vEnd < 0 || vEnd === valueStart) return undefined;
    if (key === 'id') {
      const token = buf.toString('utf8', valueStart, vEnd);
      if (token !== 'null') {
        const id = canonicalId(token);
        if (id === undefined) return undefined;
        env.id = id;
        env.idStart = valueStart;
        env.idEnd = vEnd;
      }
    } else if (key === 'method') {
      if (buf[valueStart] !== QUOTE) return undefined;
      const raw = buf.toString('utf8', valueStart + 1, vEnd - 1);
      env.method = raw.includes('\\') ? (JSON.parse(buf.toString('utf8', valueStart, vEnd)) as string) : raw;
    } else if (key === 'result') env.hasResult = true;
    else if (key === 'error') env.hasError = true;
    i = skipSpace(buf, vEnd, end);
    if (buf[i] === COMMA) {
      i = skipSpace(buf, i + 1, end);
      continue;
    }
    if (buf[i] === CLOSE_BRACE && i === end - 1) return env;
    return undefined;
  }
}
