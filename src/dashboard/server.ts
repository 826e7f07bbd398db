/**
 * The live dashboard: a plain `node:http` server on 127.0.0.1 that serves one
 * self-contained page (every server drawn as its state chart, current state
 * highlighted), pushes changes over Server-Sent Events, and accepts approve /
 * reject / reconnect from that page. See security.ts for the request guards.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { McpController } from '../controller/controller.js';
import { ErrorCode, McpReconcilerError, describeError } from '../errors.js';
import { DashboardHub, type HubMessage } from './hub.js';
import { dashboardPage, chartSvg } from './page.js';
import { isLoopbackHost, isSameOrigin, newToken, requestToken, tokenMatches } from './security.js';
import { dashboardView } from './view.js';

/** Options of {@link startDashboard}. */
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

const SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
  'x-frame-options': 'DENY',
};

function send(res: ServerResponse, status: number, body: string, type = 'text/plain; charset=utf-8', headers: Record<string, string> = {}): void {
  res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': type, 'content-length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  send(res, status, JSON.stringify(value), 'application/json; charset=utf-8');
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
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

function statusOf(err: unknown): number {
  if (err instanceof McpReconcilerError) {
    if (err.code === ErrorCode.UnknownServer) return 404;
    if (err.code === ErrorCode.Usage) return 400;
    if (err.code === ErrorCode.Disposed) return 503;
  }
  return 500;
}

function sse(res: ServerResponse, event: string, data: unknown): void {
  res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

/**
 * Serve the live dashboard for `controller` on 127.0.0.1 (port 0 = a free
 * one). Resolves once listening. Every request must carry the returned token
 * (`?token=` or the `x-dashboard-token` header) and a loopback Host header;
 * POSTs must also be same-origin. Routes: `GET /` the page, `GET /events`
 * the SSE stream, `GET /api/status`, `POST /api/approve {server, persist?}`,
 * `POST /api/reject {server}`, `POST /api/reconnect {server}`, `POST /api/auth
 * {server}` (starts an OAuth sign-in and answers with the URL to open).
 */
export async function startDashboard(controller: McpController, opts: DashboardOptions = {}): Promise<Dashboard> {
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
  const svg = await chartSvg();
  const hub = new DashboardHub(controller);
  const streams = new Set<ServerResponse>();
  let boundPort = 0;

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (!isLoopbackHost(req.headers.host, boundPort)) {
      send(res, 403, 'Forbidden: this dashboard answers only to 127.0.0.1 / localhost (Host header refused).\n');
      return;
    }
    const url = new URL(req.url ?? '/', `http://${req.headers.host}`);
    if (!tokenMatches(token, requestToken(req, url))) {
      send(res, 403, 'Forbidden: missing or wrong token. Open the full URL the dashboard printed (it ends with ?token=…).\n');
      return;
    }
    const route = `${req.method ?? 'GET'} ${url.pathname}`;
    switch (route) {
      case 'GET /': {
        const nonce = randomBytes(16).toString('base64');
        send(res, 200, dashboardPage({ svg, nonce }), 'text/html; charset=utf-8', {
          'content-security-policy': `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
        });
        return;
      }
      case 'GET /api/status':
        sendJson(res, 200, dashboardView(controller));
        return;
      case 'GET /events':
        openStream(res);
        return;
      case 'POST /api/approve':
      case 'POST /api/reject':
      case 'POST /api/reconnect':
        await act(req, res, url.pathname.slice('/api/'.length) as 'approve' | 'reject' | 'reconnect');
        return;
      case 'POST /api/auth':
        await signIn(req, res);
        return;
      default:
        if (url.pathname === '/' || url.pathname === '/events' || url.pathname.startsWith('/api/')) {
          send(res, 405, `Method ${req.method} not allowed on ${url.pathname}\n`);
        } else {
          send(res, 404, `Not found: ${url.pathname}\n`);
        }
    }
  };

  const openStream = (res: ServerResponse): void => {
    res.writeHead(200, { ...SECURITY_HEADERS, 'content-type': 'text/event-stream; charset=utf-8', connection: 'keep-alive' });
    res.write('retry: 1000\n\n');
    sse(res, 'hello', { view: dashboardView(controller), feed: hub.recent() });
    streams.add(res);
    const off = hub.subscribe((msg: HubMessage) => sse(res, msg.type, msg.type === 'status' ? msg.view : msg.entry));
    res.on('close', () => {
      off();
      streams.delete(res);
    });
  };

  /**
   * A guarded POST about one server: same-origin only, a JSON body naming
   * `server`; `handle` returns the JSON answer, and a user-facing error
   * becomes `{error, hint}` with its status.
   */
  const postAbout = async (
    req: IncomingMessage,
    res: ServerResponse,
    handle: (server: string, body: Record<string, unknown>) => Promise<Record<string, unknown>>,
  ): Promise<void> => {
    if (!isSameOrigin(req, boundPort)) {
      send(res, 403, 'Forbidden: cross-origin request refused.\n');
      return;
    }
    try {
      const body = await readJson(req);
      const server = body.server;
      if (typeof server !== 'string' || server === '') {
        throw new McpReconcilerError(ErrorCode.Usage, 'missing "server" in the request body', { hint: 'send {"server":"<name>"}' });
      }
      sendJson(res, 200, { ok: true, ...(await handle(server, body)) });
    } catch (err) {
      const hint = err instanceof McpReconcilerError ? err.hint : undefined;
      sendJson(res, statusOf(err), { error: describeError(err), ...(hint ? { hint } : {}) });
    }
  };

  const act = (req: IncomingMessage, res: ServerResponse, action: 'approve' | 'reject' | 'reconnect'): Promise<void> =>
    postAbout(req, res, async (server, body) => {
      if (action === 'approve') {
        const persist = body.persist !== false;
        hub.add({ kind: 'action', server, text: persist ? 'approved from the dashboard' : 'approved for this session from the dashboard' });
        await controller.approve(server, { persist });
      } else if (action === 'reject') {
        hub.add({ kind: 'action', server, text: 'rejected from the dashboard' });
        await controller.reject(server);
      } else {
        hub.add({ kind: 'action', server, text: 'reconnect requested from the dashboard' });
        await controller.reconnect(server);
      }
      return {};
    });

  /**
   * Start an OAuth sign-in for a remote server and answer with the URL the
   * user must open (or none, when the flow needed no browser: client
   * credentials, a refresh). The flow goes on after the answer: the browser
   * comes back to the loopback receiver, the server leaves `needs_auth`, and
   * the page hears it over the event stream like any other change.
   */
  const signIn = (req: IncomingMessage, res: ServerResponse): Promise<void> =>
    postAbout(req, res, async (name) => {
      hub.add({ kind: 'action', server: name, text: 'sign-in started from the dashboard' });
      const url = await new Promise<string | undefined>((resolve, reject) => {
        let answered = false;
        controller
          .authenticate(name, {
            // Not awaited by the flow: the page opens the URL, the redirect completes it.
            onAuthorizationUrl: (_server, authUrl) => {
              answered = true;
              resolve(authUrl.href);
            },
          })
          .then(
            () => {
              hub.add({ kind: 'action', server: name, text: 'signed in from the dashboard' });
              if (!answered) resolve(undefined);
            },
            (err: unknown) => {
              if (!answered) reject(err);
              else hub.add({ kind: 'action', server: name, text: `sign-in did not complete: ${describeError(err)}` });
            },
          );
      });
      return url ? { url } : {};
    });

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: describeError(err) });
      else res.destroy();
    });
  });

  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error): void => {
      hub.close();
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
        hub.close();
        for (const res of streams) res.end();
        streams.clear();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
