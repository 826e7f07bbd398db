/**
 * A dashboard page fed by polling: for sources that answer one request at a
 * time (the daemon's status request, the cluster's replica list in Redis).
 * While a page is open the source is read every `pollMs`, and a new reading
 * goes over Server-Sent Events only when something changed; with no page
 * open, nothing is read.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import { describeError, McpReconcilerError } from '../errors.js';
import { openSse, send, sendJson, serveGuarded, sse, type Dashboard, type DashboardOptions } from './http.js';

/** One reading: the source's value, or why there is none (nothing running there, unreachable). */
export interface Reading<T> {
  status?: T;
  error?: string;
  hint?: string;
  /** When it was read (ISO time). */
  at: string;
}

/** Options of a polled dashboard. */
export interface PolledDashboardOptions extends DashboardOptions {
  /** How often the source is read while a page is open; default 1000 ms. */
  pollMs?: number;
}

/**
 * Serve `page(nonce)` on 127.0.0.1 with the guards of http.ts. Routes:
 * `GET /` the page, `GET /events` the SSE stream (`name` events carrying a
 * {@link Reading}), `GET /api/<name>` one reading.
 */
export async function startPolledDashboard<T>(name: string, read: () => Promise<T>, page: (nonce: string) => string, opts: PolledDashboardOptions = {}): Promise<Dashboard> {
  const pollMs = opts.pollMs ?? 1000;
  const streams = new Set<ServerResponse>();
  let last: Reading<T> | undefined;
  let lastText = '';
  let looping = false;
  let closed = false;
  let wake: (() => void) | undefined;
  let timer: NodeJS.Timeout | undefined;

  const readOnce = async (): Promise<Reading<T>> => {
    try {
      return { status: await read(), at: new Date().toISOString() };
    } catch (err) {
      return { error: describeError(err), ...(err instanceof McpReconcilerError && err.hint ? { hint: err.hint } : {}), at: new Date().toISOString() };
    }
  };

  /** While a page is open: read, and tell every page when the reading changed (its time aside). */
  const loop = async (): Promise<void> => {
    looping = true;
    try {
      while (!closed && streams.size > 0) {
        const reading = await readOnce();
        if (closed) return;
        last = reading;
        const text = JSON.stringify({ ...reading, at: undefined });
        if (text !== lastText) {
          lastText = text;
          for (const res of streams) sse(res, name, reading);
        }
        await new Promise<void>((resolve) => {
          wake = resolve;
          timer = setTimeout(resolve, pollMs);
        });
      }
    } finally {
      looping = false;
    }
  };

  const handle = async (req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> => {
    const route = `${req.method ?? 'GET'} ${url.pathname}`;
    switch (route) {
      case 'GET /': {
        const nonce = randomBytes(16).toString('base64');
        send(res, 200, page(nonce), 'text/html; charset=utf-8', {
          'content-security-policy': `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
        });
        return;
      }
      case `GET /api/${name}`:
        sendJson(res, 200, await readOnce());
        return;
      case 'GET /events': {
        openSse(res);
        streams.add(res);
        res.on('close', () => streams.delete(res));
        if (looping) {
          // The loop's next change reaches this page too; until then, the last reading.
          if (last) sse(res, name, last);
        } else {
          lastText = '';
          void loop();
        }
        return;
      }
      default:
        if (url.pathname === '/' || url.pathname === '/events' || url.pathname.startsWith('/api/')) {
          send(res, 405, `Method ${req.method} not allowed on ${url.pathname}\n`);
        } else {
          send(res, 404, `Not found: ${url.pathname}\n`);
        }
    }
  };

  return serveGuarded(opts, handle, () => {
    closed = true;
    clearTimeout(timer);
    wake?.();
    for (const res of streams) res.end();
    streams.clear();
  });
}
