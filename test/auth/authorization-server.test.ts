/**
 * Which authorization server OAuth may talk to: plain http only on loopback
 * (for the authorization server the MCP server names and for every endpoint
 * its metadata names), and pre-registered secrets only to the pinned
 * (`oauth.issuer`) or first-seen authorization server. Each refusal happens
 * before anything is sent: a net under `fetch` records (and never sends) any
 * request to a non-loopback address, and the authorization servers record
 * every request they get.
 */
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { isAllowedAuthorizationEndpoint } from '../../src/auth/authorization-server.js';
import { FileTokenStore, type McpController, type ServerConfig } from '../../src/index.js';
import { startAuthorizationServer, startResourceServer, type AuthorizationServerFixture, type ResourceServerFixture } from '../fixtures/oauth-servers.js';
import { tempDirEach } from '../helpers/temp-dir.js';
import { authTestController, browser, reach, stateOf } from './support.js';

/** TEST-NET-1 (RFC 5737): never routed; nothing may ever be sent there. */
const OFF_LOOPBACK = 'http://192.0.2.2:8443';

/** Resolves with the first resting state `name` reaches: connected, needs_auth or failed. */
function settled(c: McpController, name = 'remote'): Promise<string> {
  const resting = ['connected', 'needs_auth', 'failed'];
  return new Promise((resolve) => {
    const off = c.on('server-state', (e) => {
      if (e.name === name && resting.includes(e.state)) {
        off();
        resolve(e.state);
      }
    });
  });
}

describe('OAuth authorization-server checks', () => {
  const tmp = tempDirEach('mcp-oauth-as-');
  /** Requests that were about to leave loopback (refused by the net, never sent). */
  let offLoopback: string[];
  const cleanups: Array<() => Promise<unknown>> = [];

  beforeEach(() => {
    offLoopback = [];
    const real = globalThis.fetch;
    vi.spyOn(globalThis, 'fetch').mockImplementation((input, init) => {
      const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
      if (!['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname)) {
        offLoopback.push(url.href);
        return Promise.reject(new Error(`test net: refused to send to ${url.href}`));
      }
      return real(input, init);
    });
  });
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
    vi.restoreAllMocks();
  });

  async function as(options: Parameters<typeof startAuthorizationServer>[0] = {}): Promise<AuthorizationServerFixture> {
    const s = await startAuthorizationServer(options);
    cleanups.push(() => s.close());
    return s;
  }
  async function resource(authorizationServer: string, issuers: () => AuthorizationServerFixture[]): Promise<ResourceServerFixture> {
    const s = await startResourceServer(authorizationServer, issuers);
    cleanups.push(() => s.close());
    return s;
  }
  function controller(opts: Parameters<typeof authTestController>[1] = {}): McpController {
    const c = authTestController(tmp.path, opts);
    cleanups.push(() => c.dispose());
    return c;
  }

  it('allows plain http only on loopback hosts', () => {
    const allowed = (u: string): boolean => isAllowedAuthorizationEndpoint(new URL(u));
    for (const u of ['https://auth.example.com/', 'http://127.0.0.1:9/', 'http://127.200.3.4/', 'http://localhost:8080/t', 'http://[::1]:9/']) expect(allowed(u), u).toBe(true);
    for (const u of ['http://192.0.2.2:8443/', 'http://128.0.0.1/', 'http://127.0.0.1.nip.io/', 'http://localhost.example.com/', 'http://[::2]/', 'ftp://127.0.0.1/']) {
      expect(allowed(u), u).toBe(false);
    }
  });

  it('refuses an authorization server on plain http off loopback before sending it anything', async () => {
    const mcp = await resource(`${OFF_LOOPBACK}/`, () => []);
    const urls: string[] = [];
    const c = controller({ onAuthorizationUrl: (_s, url) => void urls.push(url.href) });
    await c.addRuntimeServer('remote', { type: 'http', url: mcp.url });
    const resting = settled(c);
    await c.start();
    expect(await resting).toBe('needs_auth');
    expect(stateOf(c)?.lastError).toContain('refusing the authorization server http://192.0.2.2:8443/');
    expect(stateOf(c)?.lastError).toContain('must use https (plain http only on loopback');

    // The explicit sign-in says the same, with what to do.
    const err = await c.authenticate('remote', { onAuthorizationUrl: browser }).then(
      () => undefined,
      (e: unknown) => e as Error & { hint?: string },
    );
    expect(err?.message).toContain('http://192.0.2.2:8443/');
    expect(err?.message).toContain('Nothing was sent to it');
    expect(err?.hint).toContain('https');
    expect(urls).toEqual([]);
    expect(offLoopback).toEqual([]);
  });

  it('refuses a token or registration endpoint on plain http off loopback named by a loopback authorization server', async () => {
    const loopbackAs = await as({ metadata: () => ({ token_endpoint: `${OFF_LOOPBACK}/token`, registration_endpoint: `${OFF_LOOPBACK}/register` }) });
    const mcp = await resource(loopbackAs.base, () => [loopbackAs]);
    const c = controller();
    await c.addRuntimeServer('remote', { type: 'http', url: mcp.url });
    await c.start();
    expect(stateOf(c)?.state).toBe('needs_auth');
    const err = await c.authenticate('remote', { onAuthorizationUrl: browser }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err?.message).toMatch(/refusing the (token|registration)_endpoint of http:\/\/127\.0\.0\.1:\d+\/? http:\/\/192\.0\.2\.2:8443\/(token|register)/);
    expect(offLoopback).toEqual([]);
    // Its metadata was read; nothing else was asked of it.
    expect(loopbackAs.requests.filter((r) => !r.includes('/.well-known/'))).toEqual([]);
  });

  it('sends a pre-registered secret only to the authorization server it was first used with', async () => {
    const first = await as({ clients: { pre: 's3cret' } });
    const second = await as({ clients: { pre: 's3cret' } });
    const mcp = await resource(first.base, () => [first, second]);
    const store = new FileTokenStore(join(tmp.path, 'oauth.json'));
    const config: ServerConfig = { type: 'http', url: mcp.url, oauth: { grantType: 'client_credentials', clientId: 'pre', clientSecret: 's3cret' } };

    const one = controller({ oauth: { tokenStore: store } });
    await one.addRuntimeServer('remote', config);
    await one.start();
    expect(stateOf(one)?.state).toBe('connected');
    expect(first.requests).toContain('POST /token');
    await one.dispose();

    // The MCP server now names another authorization server: a later run refuses it.
    mcp.authorizationServer = second.base;
    const two = controller({ oauth: { tokenStore: store } });
    await two.addRuntimeServer('remote', config);
    const resting = settled(two);
    await two.start();
    expect(await resting).toBe('needs_auth');
    const why = stateOf(two)?.lastError ?? '';
    expect(why).toContain(`names the authorization server ${second.base}`);
    expect(why).toContain(`first used with ${first.base}`);
    const err = await two.authenticate('remote').then(
      () => undefined,
      (e: unknown) => e as Error & { hint?: string },
    );
    expect(err?.hint).toContain('"oauth.issuer"');
    expect(err?.hint).toContain('mcp-reconciler logout remote');
    expect(second.requests).toEqual([]);
    expect(offLoopback).toEqual([]);
  });

  it('sends pre-registered credentials only to the authorization server "oauth.issuer" pins', async () => {
    const pinned = await as({ clients: { pre: 's3cret' } });
    const other = await as({ clients: { pre: 's3cret' } });
    const mcp = await resource(other.base, () => [pinned, other]);
    const c = controller({ onAuthorizationUrl: browser });
    await c.addRuntimeServer('remote', { type: 'http', url: mcp.url, oauth: { clientId: 'pre', clientSecret: 's3cret', issuer: pinned.base } });
    const resting = settled(c);
    await c.start();
    expect(await resting).toBe('needs_auth');
    expect(stateOf(c)?.lastError).toContain(`names the authorization server ${other.base}, but its config pins "oauth.issuer": ${pinned.base}`);
    expect(other.requests).toEqual([]);

    // The pin matches once the MCP server names it: the sign-in goes through there.
    mcp.authorizationServer = pinned.base;
    const connected = reach(c, 'connected');
    await c.authenticate('remote', { onAuthorizationUrl: browser });
    await connected;
    expect(pinned.requests).toContain('POST /token');
    expect(pinned.requests).not.toContain('POST /register');
    expect(other.requests).toEqual([]);
    expect(offLoopback).toEqual([]);
  });
});
