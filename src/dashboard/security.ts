/**
 * The dashboard's request guards. It listens on loopback only, but a browser
 * can still be made to talk to it: by a page on another origin (CSRF) or by a
 * hostile domain re-pointed at 127.0.0.1 (DNS rebinding). So every request
 * must name a loopback Host, carry the per-run token, and — for requests that
 * change something — come from the dashboard's own origin.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** Header that carries the token on API calls (the query `?token=` works too, for EventSource and the page URL). */
export const TOKEN_HEADER = 'x-dashboard-token';

/** A fresh unguessable token for one dashboard run. */
export function newToken(): string {
  return randomBytes(24).toString('base64url');
}

/** Constant-time comparison, so the token cannot be guessed byte by byte from response times. */
export function tokenMatches(expected: string, given: string | undefined | null): boolean {
  if (typeof given !== 'string') return false;
  const a = Buffer.from(expected);
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The token a request carries, header first, then `?token=`. */
export function requestToken(req: IncomingMessage, url: URL): string | undefined {
  const header = req.headers[TOKEN_HEADER];
  if (typeof header === 'string') return header;
  return url.searchParams.get('token') ?? undefined;
}

const LOOPBACK_NAMES = new Set(['127.0.0.1', 'localhost', '[::1]']);

/**
 * Whether the Host header names this server on a loopback name
 * (`127.0.0.1`, `localhost`, `[::1]`) and our port. A rebinding attack sends
 * its own domain here, so anything else is refused.
 */
export function isLoopbackHost(host: string | undefined, port: number): boolean {
  if (!host) return false;
  const m = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(host.trim().toLowerCase());
  if (!m) return false;
  const name = m[1]!;
  const hostPort = m[2] === undefined ? 80 : Number(m[2]);
  return LOOPBACK_NAMES.has(name) && hostPort === port;
}

/**
 * Whether a state-changing request comes from the dashboard page itself.
 * Browsers send `Origin` (and `Sec-Fetch-Site`) on every POST; when present
 * they must name this server. A client that sends neither is not a browser,
 * so it cannot be a cross-site forgery; it still needs the token.
 */
export function isSameOrigin(req: IncomingMessage, port: number): boolean {
  const site = req.headers['sec-fetch-site'];
  if (typeof site === 'string' && site !== 'same-origin' && site !== 'none') return false;
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  return url.protocol === 'http:' && isLoopbackHost(url.host, port) && url.host === (req.headers.host ?? '').toLowerCase();
}
