/**
 * Reading newline-delimited JSON-RPC from a server's stdout, as the SDK's
 * `ReadBuffer` does, with two costs taken out (docs/performance.md, "Two more
 * allocations cut"):
 * - a message split over many chunks is joined once, when its newline
 *   arrives, not re-copied with every chunk;
 * - a message of a common shape is checked by hand instead of by the SDK's
 *   zod `JSONRPCMessageSchema` (a union that fails its way through the
 *   request and notification schemas before it accepts a response). The
 *   result is what the schema would return, key order included; anything
 *   else goes through the schema, so what is accepted or refused, and the
 *   error thrown, stay the SDK's.
 */
import { parseJSONRPCMessage, type JSONRPCMessage } from '@modelcontextprotocol/client';

/** The SDK's limit for one buffered stdio stream (`STDIO_DEFAULT_MAX_BUFFER_SIZE`). */
export const MAX_BUFFERED_BYTES = 10 * 1024 * 1024;

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;

/** A drop-in for the SDK's `ReadBuffer` (append, readMessage, clear). */
export class MessageLines {
  /** Buffered chunks, oldest first; the first `searched` of them hold no newline. */
  private chunks: Buffer[] = [];
  private searched = 0;
  private size = 0;

  constructor(private readonly maxBytes = MAX_BUFFERED_BYTES) {}

  /** Buffer a chunk; throws (and drops everything buffered) past the size limit, as the SDK does. */
  append(chunk: Buffer): void {
    if (this.size + chunk.length > this.maxBytes) {
      this.clear();
      throw new Error(`ReadBuffer exceeded maximum size of ${this.maxBytes} bytes`);
    }
    this.chunks.push(chunk);
    this.size += chunk.length;
  }

  /**
   * The next complete message, or null when only a partial line is left. A
   * line that is not JSON is skipped; JSON that is not a JSON-RPC message
   * throws the SDK's error (the line is consumed either way).
   */
  readMessage(): JSONRPCMessage | null {
    for (;;) {
      const line = this.nextLine();
      if (line === undefined) return null;
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch (err) {
        if (err instanceof SyntaxError) continue;
        throw err;
      }
      return plainMessage(value) ?? parseJSONRPCMessage(value);
    }
  }

  /** Drop everything buffered. */
  clear(): void {
    this.chunks = [];
    this.searched = 0;
    this.size = 0;
  }

  private nextLine(): string | undefined {
    const chunks = this.chunks;
    let i = this.searched;
    let at = -1;
    for (; i < chunks.length; i++) {
      at = chunks[i]!.indexOf(NEWLINE);
      if (at >= 0) break;
    }
    if (at < 0) {
      this.searched = chunks.length;
      return undefined;
    }
    const last = chunks[i]!;
    const bytes = i === 0 ? last.subarray(0, at) : Buffer.concat([...chunks.slice(0, i), last.subarray(0, at)]);
    const rest = last.subarray(at + 1);
    // The chunk that held the newline stays as its rest (more lines, or empty); the ones before it go.
    chunks.splice(0, i + 1, rest);
    this.searched = 0;
    this.size -= bytes.length + 1;
    const end = bytes.length > 0 && bytes[bytes.length - 1] === CARRIAGE_RETURN ? bytes.length - 1 : bytes.length;
    return bytes.toString('utf8', 0, end);
  }
}

type Json = Record<string, unknown>;

/** An object as `JSON.parse` makes them (anything more exotic is left to the schema). */
function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;
}

/** The schema's request id: a string or a safe integer. */
function isRequestId(value: unknown): value is string | number {
  return typeof value === 'string' || Number.isSafeInteger(value);
}

/**
 * A loose object the schema passes through unchanged: one without `_meta`
 * (whose members the schema checks and may drop) and without an own
 * `__proto__` key (which a copy would turn into a prototype).
 */
function isPlainLoose(value: unknown): value is Json {
  return isObject(value) && !Object.hasOwn(value, '_meta') && !Object.hasOwn(value, '__proto__');
}

/** Whether every key of `value` is among `allowed`. */
function keysWithin(value: Json, allowed: readonly string[]): boolean {
  for (const key in value) if (!allowed.includes(key)) return false;
  return true;
}

const REQUEST_KEYS = ['jsonrpc', 'id', 'method', 'params'] as const;
const NOTIFICATION_KEYS = ['jsonrpc', 'method', 'params'] as const;
const RESULT_KEYS = ['jsonrpc', 'id', 'result'] as const;
const ERROR_KEYS = ['jsonrpc', 'id', 'error'] as const;

/**
 * `value` as the SDK's `JSONRPCMessageSchema` would return it, when it is a
 * request, a notification, a result response or an error response of the
 * plain shape (no `_meta` in its params or result, no unknown envelope keys);
 * undefined otherwise, for the schema to decide. Exported for its tests.
 */
export function plainMessage(value: unknown): JSONRPCMessage | undefined {
  if (!isObject(value) || value.jsonrpc !== '2.0') return undefined;
  if ('result' in value) {
    // A response: the schema's envelope is strict, its result loose.
    if (!isRequestId(value.id) || !isPlainLoose(value.result) || !keysWithin(value, RESULT_KEYS)) return undefined;
    return { jsonrpc: '2.0', id: value.id, result: value.result };
  }
  if ('error' in value) return plainError(value);
  if (typeof value.method !== 'string') return undefined;
  let params: Json | undefined;
  if ('params' in value) {
    if (!isPlainLoose(value.params)) return undefined;
    params = value.params;
  }
  if ('id' in value) {
    if (!isRequestId(value.id) || !keysWithin(value, REQUEST_KEYS)) return undefined;
    return params === undefined ? { jsonrpc: '2.0', id: value.id, method: value.method } : { jsonrpc: '2.0', id: value.id, method: value.method, params };
  }
  if (!keysWithin(value, NOTIFICATION_KEYS)) return undefined;
  return params === undefined ? { jsonrpc: '2.0', method: value.method } : { jsonrpc: '2.0', method: value.method, params };
}

/**
 * An error response as the schema returns it: a strict envelope whose `id`
 * may be missing (an answer to a request the server could not read), and an
 * error object of which the schema keeps `code`, `message` and `data` only,
 * in that order. A server's "method not found" for the `server/discover`
 * probe is one of these (docs/performance.md, "The probe's answer without zod").
 */
function plainError(value: Json): JSONRPCMessage | undefined {
  const error = value.error;
  if (!isObject(error) || !Number.isSafeInteger(error.code) || typeof error.message !== 'string' || !keysWithin(value, ERROR_KEYS)) return undefined;
  const code = error.code as number;
  const e = 'data' in error ? { code, message: error.message, data: error.data } : { code, message: error.message };
  if (!('id' in value)) return { jsonrpc: '2.0', error: e };
  return isRequestId(value.id) ? { jsonrpc: '2.0', id: value.id, error: e } : undefined;
}
