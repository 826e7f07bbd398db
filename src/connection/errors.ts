/**
 * What a failed connect means, and how it is reported: the SDK's and the
 * transports' errors classified (needs auth, permanent, timeout) and turned
 * into one `McpReconcilerError` naming the server, the cause and the fix.
 */
import { ErrorCode as McpErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { describeError, ErrorCode, McpReconcilerError } from '../errors.js';
import type { transportOf } from '../config/identity.js';
import { httpSdkIfLoaded } from './http-sdk.js';

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

/** The SDK's ways of saying HTTP 401. */
export function isUnauthorized(err: unknown): boolean {
  const sdk = httpSdkIfLoaded();
  if (!sdk) return false; // only the HTTP transports throw these
  if (err instanceof sdk.UnauthorizedError) return true;
  return httpStatusOf(err) === 401;
}

/** An error of the SDK's SSE transport (its event stream failed). */
export function isSseError(err: unknown): boolean {
  const sdk = httpSdkIfLoaded();
  return sdk !== undefined && err instanceof sdk.SseError;
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
  const sdk = httpSdkIfLoaded();
  if (sdk && (err instanceof sdk.StreamableHTTPError || err instanceof sdk.SseError) && typeof err.code === 'number') return err.code;
  return undefined;
}

/** Spawn errors that mean the command itself is wrong, not that it failed this time. */
const PERMANENT_SPAWN_ERRNOS = new Set(['ENOENT', 'EACCES', 'ENOTDIR']);

/** The SDK's request timeout (the connect or a listing ran out of time). */
export function isTimeout(err: unknown): boolean {
  return err instanceof McpError && err.code === McpErrorCode.RequestTimeout;
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

/** What a connect attempt saw besides the error it ended with. */
export interface ConnectFailure {
  server: string;
  /** The transport configured (`kind`) and the one last tried (`used`, `sse` after a fallback). */
  kind: TransportKind;
  used: TransportKind;
  timeoutMs: number;
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
 * 401, `timeout`, a permanent `connect_failed` for a config mistake, a
 * command that cannot run or a 4xx no retry changes, else a plain
 * `connect_failed` (retried with backoff).
 */
export function connectError(err: unknown, f: ConnectFailure): McpReconcilerError {
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
