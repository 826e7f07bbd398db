/**
 * The loopback redirect of the OAuth authorization-code flow (RFC 8252 §7.3):
 * a tiny HTTP server on 127.0.0.1 that receives `?code=…&state=…` from the
 * user's browser (or, in tests and the conformance client, from a plain
 * fetch of the authorization URL's redirect). Only the exact callback path
 * is answered, and only a request carrying an expected `state` delivers a code.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** The path the authorization server redirects to. */
export const CALLBACK_PATH = '/callback';

/** Why a wait for the redirect ended without a code. */
export class AuthorizationRedirectError extends Error {
  constructor(
    message: string,
    /** The OAuth `error` the authorization server sent, when it sent one (`access_denied`, …). */
    readonly oauthError?: string,
  ) {
    super(message);
    this.name = 'AuthorizationRedirectError';
  }
}

/** What the redirect delivered: the code, and the `iss` the authorization server named (RFC 9207), if any. */
export interface AuthorizationRedirect {
  code: string;
  /** Form-urldecoded `iss` of the redirect; the SDK checks it against the recorded issuer before redeeming the code. */
  iss: string | undefined;
}

interface Pending {
  resolve(redirect: AuthorizationRedirect): void;
  reject(err: Error): void;
}

/** A listening loopback callback server. */
export interface LoopbackReceiver {
  /** `http://127.0.0.1:PORT/callback`. */
  readonly redirectUrl: string;
  readonly port: number;
  /**
   * Expect a redirect carrying `state`; call it before the URL is shown (a
   * redirect whose state nobody expects is refused). The promise settles when it arrives
   * (with its code, or rejected with the authorization server's error), or
   * rejects when `signal` aborts or the receiver closes.
   */
  expect(state: string, signal?: AbortSignal): Promise<AuthorizationRedirect>;
  close(): Promise<void>;
}

const PAGE = (title: string, text: string): string =>
  `<!doctype html><meta charset="utf-8"><title>${title}</title><body style="font-family:system-ui;margin:3em"><h1>${title}</h1><p>${text}</p></body>`;

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * Listen on 127.0.0.1 (`port` 0 picks a free one). Rejects with the listen
 * error (`EADDRINUSE` when a fixed port is taken) so the caller can pick
 * another port and register again. With `keepAlive` the listening server
 * holds the process open (someone awaits the sign-in, as `mcp-reconciler
 * auth` does); without it, it never keeps a host process alive on its own.
 */
export async function startLoopback(port = 0, options: { keepAlive?: boolean } = {}): Promise<LoopbackReceiver> {
  const pending = new Map<string, Pending>();

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (req.method !== 'GET' || url.pathname !== CALLBACK_PATH) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    const state = url.searchParams.get('state') ?? '';
    const code = url.searchParams.get('code');
    const oauthError = url.searchParams.get('error');
    const waiter = pending.get(state);
    if (!waiter) {
      // The state is what ties this redirect to the sign-in we started (CSRF protection): without a
      // match the code is not used, and the page must not look like a success.
      const why = state === '' ? 'The redirect carried no <code>state</code>' : 'The redirect\'s <code>state</code> does not match the sign-in in progress';
      res
        .writeHead(400, { 'content-type': 'text/html; charset=utf-8' })
        .end(
          PAGE(
            'Sign-in failed',
            `${why}, so mcp-reconciler did not use its code (state mismatch). It may come from an older or another sign-in, or from a page you did not start. Run <code>mcp-reconciler auth SERVER</code> again and open the new URL it prints.`,
          ),
        );
      return;
    }
    pending.delete(state);
    if (code) {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE('Authorized', 'mcp-reconciler received the authorization. You can close this window.'));
      waiter.resolve({ code, iss: url.searchParams.get('iss') ?? undefined });
    } else {
      const description = url.searchParams.get('error_description');
      const what = `${oauthError ?? 'no code in the redirect'}${description ? `: ${description}` : ''}`;
      res.writeHead(400, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE('Authorization failed', escapeHtml(what)));
      waiter.reject(new AuthorizationRedirectError(`the authorization server answered ${what}`, oauthError ?? undefined));
    }
  };

  const server: Server = createServer(handle);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  if (!options.keepAlive) server.unref();
  const actualPort = (server.address() as AddressInfo).port;

  return {
    redirectUrl: `http://127.0.0.1:${actualPort}${CALLBACK_PATH}`,
    port: actualPort,
    expect(state: string, signal?: AbortSignal): Promise<AuthorizationRedirect> {
      return new Promise<AuthorizationRedirect>((resolve, reject) => {
        if (signal?.aborted) {
          reject(signal.reason instanceof Error ? signal.reason : new AuthorizationRedirectError('the authorization was cancelled'));
          return;
        }
        const onAbort = (): void => {
          pending.delete(state);
          reject(signal?.reason instanceof Error ? signal.reason : new AuthorizationRedirectError('the authorization was cancelled'));
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        pending.set(state, {
          resolve: (redirect) => {
            signal?.removeEventListener('abort', onAbort);
            resolve(redirect);
          },
          reject: (err) => {
            signal?.removeEventListener('abort', onAbort);
            reject(err);
          },
        });
      });
    },
    async close(): Promise<void> {
      for (const [, waiter] of pending) waiter.reject(new AuthorizationRedirectError('the loopback receiver was closed before the browser came back'));
      pending.clear();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
