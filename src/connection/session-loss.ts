/**
 * Session-loss detection for streamable HTTP (SPEC §5). When a server restarts
 * or evicts a session it answers the old session id with HTTP 404 ("Session not
 * found") — or 400, as some servers do. The SDK transport then neither clears
 * its session id nor closes, so every later request fails the same way; this
 * wrapper notices the first such answer so the caller can start a new
 * generation.
 */
import { randomUUID } from 'node:crypto';
import type { FetchLike } from '@modelcontextprotocol/client';

/** What the wrapper saw when it decided the connection is gone. */
export interface SessionLoss {
  /** True: the server answered that it does not know the session. False: the server could not be reached. */
  sessionLost: boolean;
  /** HTTP status of the answer that showed the loss, when there was one. */
  status: number | undefined;
  method: string;
  url: string;
  sessionId: string;
  /** One line for status and logs. */
  reason: string;
}

const SESSION_HEADER = 'mcp-session-id';
const PROBE_TIMEOUT_MS = 5_000;
/**
 * A restarted server leaves every pooled keep-alive socket stale, and fetch
 * finds out only by using one; each failed try discards one of them.
 */
const PROBE_TRIES = 3;

/** Whether an answer with `status` to a request that carried a session id means the session is gone. */
export function isSessionLossStatus(status: number, hadSessionId: boolean): boolean {
  return hadSessionId && (status === 404 || status === 400);
}

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error ? ` (${err.cause.message})` : '';
  return `${err.message}${cause}`;
}

/**
 * After a request failed below HTTP (a reset or stale pooled socket, a refused
 * connection), ask the server about the session with a side-effect-free `ping`.
 * Retrying the failed request itself could run a tool twice.
 */
async function probeSession(url: string | URL, init: RequestInit | undefined, baseFetch: FetchLike): Promise<number | Error> {
  const headers = new Headers(init?.headers);
  headers.set('content-type', 'application/json');
  headers.set('accept', 'application/json, text/event-stream');
  headers.delete('last-event-id');
  let failure: Error = new Error('no probe was sent');
  for (let i = 0; i < PROBE_TRIES; i++) {
    try {
      const response = await baseFetch(url, {
        method: 'POST',
        headers,
        body: JSON.stringify({ jsonrpc: '2.0', id: `session-probe-${randomUUID()}`, method: 'ping' }),
        signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
      });
      await response.body?.cancel().catch(() => {});
      return response.status;
    } catch (err) {
      failure = err instanceof Error ? err : new Error(String(err));
    }
  }
  return failure;
}

/**
 * Wrap `baseFetch` (default: global `fetch`) for `StreamableHTTPClientTransport`'s
 * `fetch` option. For every request that carries an `mcp-session-id` — POST,
 * the GET event stream and its reconnects, DELETE:
 * - an answer of 404 or 400 is reported as `sessionLost: true`;
 * - a failure below HTTP is followed by a `ping` probe on the same session: a
 *   404/400 answer is a lost session, a failing probe an unreachable server
 *   (`sessionLost: false`), a good answer a passing blip (nothing reported).
 * Responses and errors are passed on unchanged, so the SDK still fails the
 * request itself. Requests aborted by their own signal are never reported.
 */
export function sessionLossFetch(onLost: (loss: SessionLoss) => void, baseFetch: FetchLike = fetch): FetchLike {
  return async (url, init) => {
    const sessionId = new Headers(init?.headers).get(SESSION_HEADER);
    const method = init?.method ?? 'GET';
    let response: Response;
    try {
      response = await baseFetch(url, init);
    } catch (err) {
      if (sessionId !== null && !init?.signal?.aborted) {
        const probe = await probeSession(url, init, baseFetch);
        const base = { method, url: String(url), sessionId };
        if (typeof probe === 'number' && isSessionLossStatus(probe, true)) {
          onLost({ ...base, sessionLost: true, status: probe, reason: `session ${sessionId} is gone: HTTP ${probe} (the server restarted or evicted it)` });
        } else if (probe instanceof Error) {
          onLost({ ...base, sessionLost: false, status: undefined, reason: `server unreachable: ${describe(err)}` });
        }
      }
      throw err;
    }
    if (sessionId !== null && isSessionLossStatus(response.status, true)) {
      onLost({
        sessionLost: true,
        status: response.status,
        method,
        url: String(url),
        sessionId,
        reason: `session ${sessionId} is gone: HTTP ${response.status} on ${method} (the server restarted or evicted it)`,
      });
    }
    return response;
  };
}
