/**
 * The HTTP shell every dashboard page shares: a `node:http` server on
 * 127.0.0.1 only, the per-run token and loopback-Host guards of security.ts
 * on every request, and the small response helpers (security headers on
 * every answer, JSON bodies, Server-Sent Events).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ErrorCode, McpReconcilerError, describeError } from '../errors.js';
import { isLoopbackHost, isSameOrigin, newToken, requestToken, tokenMatches } from './security.js';

/** Options of a dashboard's listener. */
export interface DashboardOptions {
  /** TCP port; default 0 (a free one). */
  port?: number;
  /** Only loopback is served. */
  host?: '127.0.0.1';
}

/** A running dashboard. */
export interface Dashboard {
  /** The page's URL, token included (`http://127.0.0.1:PORT/?token=…`). */
  url: string;
  /** The per-run token every request must carry. */
  token: string;
  /** Stop serving: ends live connections and closes the port. Idempotent. */
  close(): Promise<void>;
}

const MAX_BODY = 16 * 1024;

export const SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
  'x-frame-options': 'DENY',
};

export function send(res: ServerResponse, status: number, body: string, type = 'text/plain; charset=utf-8', headers: Record<string, string> = {}): void {
  res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': type, 'content-length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  send(res, status, JSON.stringify(value), 'application/json; charset=utf-8');
}

/** One Server-Sent Event. */
export function sse(res: ServerResponse, event: string, data: unknown): void {
  res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

/** Open an SSE stream on `res` (the caller writes its events). */
export function openSse(res: ServerResponse): void {
  res.writeHead(200, { ...SECURITY_HEADERS, 'content-type': 'text/event-stream; charset=utf-8', connection: 'keep-alive' });
  res.write('retry: 1000\n\n');
}

/** A request's JSON object body (at most 16 KiB). */
export async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY) throw new McpReconcilerError(ErrorCode.Usage, 'request body too large');
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return {};
  try {
    const value: unknown = JSON.parse(text);
    if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // reported below
  }
  throw new McpReconcilerError(ErrorCode.Usage, 'the request body must be a JSON object like {"server":"docs"}');
}

/** The HTTP status of a user-facing error. */
export function statusOf(err: unknown): number {
  if (err instanceof McpReconcilerError) {
    if (err.code === ErrorCode.UnknownServer) return 404;
    if (err.code === ErrorCode.Usage) return 400;
    if (err.code === ErrorCode.Disposed) return 503;
  }
  return 500;
}

/** Answer `err` as `{error, hint}` with its status. */
export function sendError(res: ServerResponse, err: unknown): void {
  const hint = err instanceof McpReconcilerError ? err.hint : undefined;
  sendJson(res, statusOf(err), { error: describeError(err), ...(hint ? { hint } : {}) });
}

/** Whether a state-changing request may go on; answers 403 when not. */
export function allowPost(req: IncomingMessage, res: ServerResponse, port: number): boolean {
  if (isSameOrigin(req, port)) return true;
  send(res, 403, 'Forbidden: cross-origin request refused.\n');
  return false;
}

/** A request that passed the guards: its URL, and the port being served. */
export type GuardedHandler = (req: IncomingMessage, res: ServerResponse, url: URL, port: number) => Promise<void>;

/**
 * Listen on 127.0.0.1:`opts.port` and pass every request that names a
 * loopback Host and carries the run's token to `handle`. `onClose` runs
 * first when the dashboard closes (to end live streams).
 */
export async function serveGuarded(opts: DashboardOptions, handle: GuardedHandler, onClose: () => void = () => {}): Promise<Dashboard> {
  const host = opts.host ?? '127.0.0.1';
  if (host !== '127.0.0.1') {
    throw new McpReconcilerError(ErrorCode.Usage, `the dashboard only listens on 127.0.0.1, not "${String(host)}"`, {
      hint: 'reach it from another machine through an SSH tunnel instead',
    });
  }
  const port = opts.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new McpReconcilerError(ErrorCode.Usage, `invalid dashboard port "${String(opts.port)}"`, { hint: 'use 0 for a free port, or 1-65535' });
  }
  const token = newToken();
  let boundPort = 0;

  const guarded = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (!isLoopbackHost(req.headers.host, boundPort)) {
      send(res, 403, 'Forbidden: this dashboard answers only to 127.0.0.1 / localhost (Host header refused).\n');
      return;
    }
    const url = new URL(req.url ?? '/', `http://${req.headers.host}`);
    if (!tokenMatches(token, requestToken(req, url))) {
      send(res, 403, 'Forbidden: missing or wrong token. Open the full URL the dashboard printed (it ends with ?token=…).\n');
      return;
    }
    await handle(req, res, url, boundPort);
  };

  const server = createServer((req, res) => {
    guarded(req, res).catch((err: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: describeError(err) });
      else res.destroy();
    });
  });

  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error): void => {
      onClose();
      reject(
        new McpReconcilerError(ErrorCode.Usage, `cannot serve the dashboard on ${host}:${port}: ${err.message}`, {
          hint: 'pick another --port, or 0 for a free one',
          cause: err,
        }),
      );
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  boundPort = (server.address() as AddressInfo).port;

  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${boundPort}/?token=${token}`,
    token,
    close() {
      closing ??= new Promise<void>((resolve) => {
        onClose();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
