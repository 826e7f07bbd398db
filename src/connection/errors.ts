/**
 * What a failed connect means, and how it is reported: the SDK's and the
 * transports' errors classified (needs auth, permanent, timeout) and turned
 * into one `McpReconcilerError` naming the server, the cause and the fix.
 */
import { ProtocolError, SdkError, SdkErrorCode, SdkHttpError, SseError, UnauthorizedError, UnsupportedProtocolVersionError } from '@modelcontextprotocol/client';
import { describeError, ErrorCode, McpReconcilerError } from '../errors.js';
import type { transportOf } from '../config/identity.js';

type TransportKind = ReturnType<typeof transportOf>;

/** "fetch failed (connect ECONNREFUSED 127.0.0.1:9)": the causes undici hides. */
export function causeChain(err: unknown): string {
  let text = describeError(err);
  let cause = err instanceof Error ? err.cause : undefined;
  for (let depth = 0; cause !== undefined && depth < 3; depth++) {
    const more = describeError(cause);
    if (more && !text.includes(more)) text += ` (${more})`;
    cause = cause instanceof Error ? cause.cause : undefined;
  }
  return text;
}

/** The SDK's ways of saying HTTP 401 (v2's, and v1's from the OAuth layer, which still runs on v1's `auth()`). */
export function isUnauthorized(err: unknown): boolean {
  if (err instanceof UnauthorizedError || (err instanceof Error && err.name === 'UnauthorizedError')) return true;
  if (err instanceof SdkError && err.code === SdkErrorCode.ClientHttpAuthentication) return true;
  return httpStatusOf(err) === 401;
}

/** An error of the SDK's SSE transport (its event stream failed). */
export function isSseError(err: unknown): boolean {
  return err instanceof SseError;
}

/**
 * An HTTP status that no retry will change: a 4xx other than 401 (needs_auth),
 * 404 (a session the server forgot, or a server still starting behind a
 * proxy), 408 and 429 (the server asks us to come back later).
 */
export function isPermanentStatus(status: number | undefined): boolean {
  return status !== undefined && status >= 400 && status < 500 && ![401, 404, 408, 429].includes(status);
}

/** The HTTP status an SDK transport error carries, when it carries one. */
export function httpStatusOf(err: unknown): number | undefined {
  if (err instanceof SdkHttpError && typeof err.data?.status === 'number') return err.data.status;
  if (err instanceof SseError && typeof err.code === 'number') return err.code;
  return undefined;
}

/** The body text of an SDK HTTP error, when it kept one. */
function httpBodyOf(err: unknown): string | undefined {
  if (err instanceof SdkHttpError && typeof err.data?.text === 'string') return err.data.text;
  return undefined;
}

/** The SDK gave up on a request that got no answer in time. */
export function isRequestTimeout(err: unknown): boolean {
  if (err instanceof SdkError) return err.code === SdkErrorCode.RequestTimeout;
  // SDK v1's McpError(-32001), for errors of code still on v1.
  return err instanceof Error && (err as { code?: unknown }).code === -32001;
}

/** The connection closed under a pending request (not the server's answer). */
export function isConnectionClosed(err: unknown): boolean {
  if (err instanceof SdkError) return err.code === SdkErrorCode.ConnectionClosed || err.code === SdkErrorCode.NotConnected;
  return err instanceof Error && (err as { code?: unknown }).code === -32000 && /connection closed/i.test(err.message);
}

/** The connection closed while the SDK's `server/discover` probe waited (probed in place, so no fallback was tried). */
export function isProbeClosed(err: unknown): boolean {
  return err instanceof SdkError && err.code === SdkErrorCode.EraNegotiationFailed && /closed during the server\/discover probe/.test(err.message);
}

/** JSON-RPC "method not found" from the server. */
export function isMethodNotFound(err: unknown): boolean {
  return err instanceof ProtocolError && err.code === -32601;
}

/** An error answer of the server itself (a JSON-RPC error), not one the SDK made up. */
export function isServerError(err: unknown): boolean {
  return err instanceof ProtocolError;
}

/**
 * JSON-RPC codes of a protocol-revision rejection (2026-07-28): -32022 the
 * server does not speak the revision asked for, -32020 the revision header
 * and the request disagree. Neither changes on a retry.
 */
const UNSUPPORTED_VERSION = -32022;
const PROTOCOL_REJECTION_CODES = new Set([UNSUPPORTED_VERSION, -32020]);

/**
 * Whether an answer to the `server/discover` probe is a 2025-era server's
 * refusal: any JSON-RPC error but -32022 (whose list of revisions may name a
 * newer one to ask for). The SDK's negotiation decides the same way under
 * `auto`; reading it off the wire lets the era be known one round trip
 * before the `initialize` that follows.
 */
export function isLegacyProbeAnswer(message: object): boolean {
  if (!('error' in message)) return false;
  const error = message.error as { code?: unknown } | null;
  return typeof error === 'object' && error !== null && error.code !== UNSUPPORTED_VERSION;
}

/** The newest protocol revision this build speaks (the SDK v2 client's modern wire). */
export const NEWEST_SPOKEN = '2026-07-28';

/** The newest 2025-era revision (the `initialize` handshake). */
export const NEWEST_LEGACY = '2025-11-25';

/** The protocol revisions this build speaks. */
export const SPOKEN_REVISIONS = `${NEWEST_SPOKEN}, and ${NEWEST_LEGACY} and older`;

/**
 * The revisions a protocol rejection names as supported (`data.supported`,
 * or the list in its message), or undefined when it names none.
 */
function supportedIn(data: unknown, text: string): string[] | undefined {
  const listed = (data as { supported?: unknown } | undefined)?.supported;
  if (Array.isArray(listed) && listed.every((v) => typeof v === 'string')) return listed as string[];
  // Free text names the revision we asked for too ("unsupported protocol version X"): leave that one out.
  const refused = /unsupported protocol version:?\s*(\d{4}-\d{2}-\d{2})/i.exec(text)?.[1];
  const found = (text.match(/\d{4}-\d{2}-\d{2}/g) ?? []).filter((v) => v !== refused);
  return found.length ? [...new Set(found)] : undefined;
}

/** The JSON-RPC error an HTTP error body carries (the SDK puts the body text in the message). */
function jsonRpcErrorIn(text: string): { code: number; message: string; data?: unknown } | undefined {
  const start = text.indexOf('{');
  if (start < 0) return undefined;
  try {
    const body = JSON.parse(text.slice(start)) as { error?: { code?: unknown; message?: unknown; data?: unknown } };
    const e = body.error;
    if (e && typeof e.code === 'number') return { code: e.code, message: typeof e.message === 'string' ? e.message : '', data: e.data };
  } catch {
    // not a JSON body
  }
  return undefined;
}

/** What a protocol rejection said: the server's words and the revisions it named. */
export interface ProtocolRejection {
  said: string;
  supported: string[] | undefined;
}

/**
 * The server refused the protocol revision we speak: a JSON-RPC error
 * -32022/-32020 (over stdio, or the body of an HTTP 400), an "unsupported
 * protocol version" answer, or an initialize result naming a revision the
 * SDK does not know. Undefined for anything else.
 */
export function protocolRejectionOf(err: unknown): ProtocolRejection | undefined {
  if (!(err instanceof Error)) return undefined;
  const text = err.message;
  if (err instanceof UnsupportedProtocolVersionError) return { said: text, supported: err.supported.length ? err.supported : supportedIn(err.data, text) };
  if (err instanceof ProtocolError && PROTOCOL_REJECTION_CODES.has(err.code)) return { said: text, supported: supportedIn(err.data, text) };
  // A pin the server's `server/discover` does not offer: no retry changes what it offers.
  if (err instanceof SdkError && err.code === SdkErrorCode.EraNegotiationFailed && /did not offer pinned protocol version/.test(text)) return { said: text, supported: undefined };
  const status = httpStatusOf(err);
  const body = status !== undefined && status >= 400 && status < 500 ? jsonRpcErrorIn(httpBodyOf(err) ?? text) : undefined;
  if (body && PROTOCOL_REJECTION_CODES.has(body.code)) return { said: `HTTP ${status} ${body.code} ${body.message}`, supported: supportedIn(body.data, body.message) };
  // The SDK v1 client's own words when the server's initialize result names a revision it does not know.
  if (PROTOCOL_WORDS.test(text)) return { said: text, supported: supportedIn(undefined, text.replace(/^.*?:/, '')) };
  return undefined;
}

/** How servers and SDKs word a refused protocol revision. */
const PROTOCOL_WORDS = /unsupported protocol version|protocol version is not supported/i;

/**
 * A stdio child that exited saying, on stderr, that it refuses our protocol
 * revision (servers on SDKs that exit on an opening they do not serve).
 */
export function exitedOnProtocol(exited: string | undefined): ProtocolRejection | undefined {
  if (exited === undefined) return undefined;
  const stderr = exited.replace(/^.*?; stderr: /s, '');
  return PROTOCOL_WORDS.test(stderr) ? { said: exited, supported: supportedIn(undefined, stderr) } : undefined;
}

/** A protocol rejection as the permanent error: the reason, and the fix. */
export function protocolError(server: string, rejection: ProtocolRejection, cause: unknown, details: Record<string, unknown>): McpReconcilerError {
  const pinned = details.protocol;
  // A pin to the new wire that the server's answer did not offer: it speaks the 2025 one (or nothing we know).
  const pinMissed = rejection.supported === undefined && pinned === NEWEST_SPOKEN;
  const theirs = rejection.supported?.length ? `only MCP protocol revision ${rejection.supported.join(', ')}` : pinMissed ? `no ${NEWEST_SPOKEN} (it did not offer it to server/discover)` : 'a protocol revision we do not';
  const spoken = pinMissed ? NEWEST_LEGACY : rejection.supported?.find((v) => v === NEWEST_SPOKEN || v === NEWEST_LEGACY);
  const fix = spoken
    ? `Pin the revision it speaks with "protocol": "${spoken}" in its config (or "protocol": "auto"${typeof pinned === 'string' ? `, instead of "${pinned}"` : ''}), or upgrade the server`
    : `Upgrade mcp-reconciler to a release that speaks the server's revision, or run a server version that accepts ${NEWEST_SPOKEN} or ${NEWEST_LEGACY} (and pin it with "protocol" if it misbehaves under "auto")`;
  return new McpReconcilerError(
    ErrorCode.ConnectFailed,
    `Server "${server}" rejected our protocol revision: it speaks ${theirs}, this build speaks ${SPOKEN_REVISIONS} (${rejection.said}). Retrying cannot help; fix: ${fix.charAt(0).toLowerCase()}${fix.slice(1)}.`,
    { hint: `${fix}.`, details: { ...details, protocolRejected: true, ...(rejection.supported ? { supported: rejection.supported } : {}) }, cause, permanent: true },
  );
}

/** Spawn errors that mean the command itself is wrong, not that it failed this time. */
const PERMANENT_SPAWN_ERRNOS = new Set(['ENOENT', 'EACCES', 'ENOTDIR']);

/** The SDK's request timeout (the connect or a listing ran out of time). */
export function isTimeout(err: unknown): boolean {
  return isRequestTimeout(err);
}

/** A config mistake fails the same way every time: permanent, so no retries, straight to `failed`. */
export function configError(server: string, what: string, hint: string): McpReconcilerError {
  return new McpReconcilerError(ErrorCode.ConnectFailed, `Server "${server}" ${what}`, { hint, details: { server }, permanent: true });
}

/** `message` with what a stdio child left behind: its exit, else the tail of its stderr. */
export type WithStderr = (message: string) => string;

/** The connect of `server` ran out of `timeoutMs`. */
export function timeoutError(server: string, timeoutMs: number, cause: unknown, withStderr: WithStderr): McpReconcilerError {
  return new McpReconcilerError(ErrorCode.Timeout, withStderr(`Server "${server}" did not connect within ${timeoutMs} ms`), {
    hint: 'Check why the server starts slowly, or raise "timeout" (ms) in its config.',
    details: { server, timeoutMs },
    cause,
  });
}

/**
 * The start of `server` ran past its start bound (`startTimeoutMs`) while
 * `request` (`initialize`, `tools/list`, …) still had no answer. Not
 * permanent: the supervisor retries it like any failed start.
 */
export function startTimeoutError(server: string, startTimeoutMs: number, request: string, cause: unknown, withStderr: WithStderr): McpReconcilerError {
  const message = `Server "${server}" did not answer ${request} within ${startTimeoutMs} ms (its start bound, "startTimeoutMs"); its process was stopped`;
  return new McpReconcilerError(ErrorCode.Timeout, withStderr(message), {
    hint: 'Run its command by hand to see where it hangs; if it only needs longer to start (a first npx download), raise "startTimeoutMs" (ms) in its config.',
    details: { server, startTimeoutMs, request },
    cause,
  });
}

/** The caller aborted the connect of `server`. */
export function abortedError(server: string, reason: unknown): McpReconcilerError {
  return new McpReconcilerError(ErrorCode.ConnectFailed, `Connecting to server "${server}" was aborted`, {
    details: { server, aborted: true },
    cause: reason,
  });
}

/**
 * What made the SDK's `server/discover` probe fail below HTTP: the SDK wraps
 * it (`EraNegotiationFailed`), but an error of our own fetch layers (OAuth
 * refusing an authorization server, a headers helper) is the real story.
 */
function probeCause(err: unknown): unknown {
  if (err instanceof SdkError && err.code === SdkErrorCode.EraNegotiationFailed && err.cause instanceof McpReconcilerError) return err.cause;
  return err;
}

/** What a connect attempt saw besides the error it ended with. */
export interface ConnectFailure {
  server: string;
  /** The transport configured (`kind`) and the one last tried (`used`, `sse` after a fallback). */
  kind: TransportKind;
  used: TransportKind;
  timeoutMs: number;
  /** The protocol choice the connect ran under (`auto` or a pinned revision). */
  protocol?: string;
  /** Some response was HTTP 401. */
  sawUnauthorized: boolean;
  /** The first status no retry will change, if one was seen. */
  permanentStatus: number | undefined;
  /** How the stdio child exited, if it did. */
  exited: string | undefined;
  withStderr: WithStderr;
}

/**
 * A failed connect as the error the supervisor acts on: `needs_auth` for a
 * 401, `timeout`, a permanent `connect_failed` for a protocol revision the
 * server refuses, a config mistake, a command that cannot run or a 4xx no
 * retry changes, else a plain
 * `connect_failed` (retried with backoff).
 */
export function connectError(failure: unknown, f: ConnectFailure): McpReconcilerError {
  const err = probeCause(failure);
  const name = f.server;
  const details = { server: name, transport: f.used };
  if (f.sawUnauthorized || isUnauthorized(err)) {
    return new McpReconcilerError(ErrorCode.NeedsAuth, `Server "${name}" requires authorization (HTTP 401)`, {
      hint: `Sign in with \`mcp-reconciler auth ${name}\` (OAuth), or add credentials to the server config (for example an "Authorization" header) and reconnect.`,
      details,
      cause: err,
    });
  }
  if (isTimeout(err)) return timeoutError(name, f.timeoutMs, err, f.withStderr);
  const rejection = protocolRejectionOf(err) ?? exitedOnProtocol(f.exited);
  if (rejection) return protocolError(name, rejection, err, { ...details, ...(f.protocol && f.protocol !== 'auto' ? { protocol: f.protocol } : {}) });
  if (err instanceof McpReconcilerError) {
    const message = err.message.startsWith(`Server "${name}"`) ? err.message : `Server "${name}": ${err.message}`;
    const permanent = err.permanent || PERMANENT_SPAWN_ERRNOS.has(String(err.details.errno));
    return new McpReconcilerError(err.code, message, { hint: err.hint, details: { ...details, ...err.details }, cause: err, permanent });
  }
  const status = httpStatusOf(err) ?? f.permanentStatus;
  if (isPermanentStatus(status)) {
    return new McpReconcilerError(ErrorCode.ConnectFailed, `Server "${name}" refused the connection with HTTP ${status}: ${causeChain(err)}`, {
      hint: 'Check the URL, headers and transport type in the server config; the server will not accept it as it is. Edit the config or run `mcp-reconciler reconnect` once fixed.',
      details: { ...details, status },
      cause: err,
      permanent: true,
    });
  }
  const message = f.exited ? `Server "${name}" failed to start: ${f.exited}` : f.withStderr(`Server "${name}" failed to connect: ${causeChain(err)}`);
  return new McpReconcilerError(ErrorCode.ConnectFailed, message, {
    hint: f.kind === 'stdio' ? 'Run the command by hand to see why it fails.' : 'Check that the server is running and the URL is right.',
    details,
    cause: err,
  });
}
