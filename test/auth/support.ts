/** Shared bits of the auth tests: a controller for remote servers, waiting for a server's state by its events, the browser step of a sign-in. */
import { MemoryTokenStore, type McpController, type ServerStatus } from '../../src/index.js';
import { bareController } from '../helpers/bare-controller.js';

/**
 * A controller for OAuth tests: no config files, no watcher, decisions and
 * tokens in memory, no process records, one connect attempt (a 401 rests in
 * `needs_auth` at once). `opts` overrides any of these.
 */
export function authTestController(cwd: string, opts: Parameters<typeof bareController>[1] = {}): McpController {
  // `oauth` is merged, not replaced: a test's `oauth: {}` must not fall back to the
  // default file store, shared by every test process (a port reused by another
  // test's fixture would find that fixture's client registration there).
  const oauth = 'oauth' in opts ? opts.oauth : undefined;
  return bareController(cwd, { backoff: { attempts: 1 }, ...opts, oauth: { tokenStore: new MemoryTokenStore(), ...oauth } });
}

/**
 * What a browser does with an authorization URL: open it, follow the redirect
 * to the loopback receiver (the fixtures' `/authorize` consents at once). An
 * `onAuthorizationUrl` hook.
 */
export async function browser(_server: string, url: URL): Promise<void> {
  const authorize = await fetch(url, { redirect: 'manual' });
  const location = authorize.headers.get('location');
  if (!location) throw new Error(`no redirect from ${url.href} (${authorize.status})`);
  await (await fetch(location)).text();
}

/** The status row of `name`, if configured. */
export function stateOf(c: McpController, name = 'remote'): ServerStatus | undefined {
  return c.status().find((s) => s.name === name);
}

/** Resolves once `name` reaches `state` (event-driven, no polling clock). */
export function reach(c: McpController, state: string, name = 'remote'): Promise<void> {
  return new Promise((resolve) => {
    if (stateOf(c, name)?.state === state) return resolve();
    const off = c.on('server-state', (e) => {
      if (e.name === name && e.state === state) {
        off();
        resolve();
      }
    });
  });
}
