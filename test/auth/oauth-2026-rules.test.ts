/**
 * The OAuth rules of protocol revision 2026-07-28 against the loopback
 * authorization server (test/fixtures/oauth-fixture.ts): the registration
 * names the client's `application_type` (SEP-837), and the redirect's `iss`
 * is checked against the recorded issuer before the code is redeemed
 * (RFC 9207, SEP-2468); a step-up asks for the granted scopes and the
 * challenged one (SEP-2350); a protected resource that names another
 * authorization server gets a new registration there, and nothing of the old
 * one's is shown to it (SEP-2352). docs/oauth.md.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { McpController } from '../../src/index.js';
import { startOAuthFixture, type OAuthFixture, type OAuthFixtureOptions } from '../fixtures/oauth-fixture.js';
import { startAuthorizationServer, startResourceServer, type AuthorizationServerFixture } from '../fixtures/oauth-servers.js';
import { disposedAfterEach } from '../helpers/bare-controller.js';
import { tempDirEach } from '../helpers/temp-dir.js';
import { authTestController, browser, stateOf } from './support.js';

describe('OAuth, 2026-07-28 rules', () => {
  const tmp = tempDirEach('mcp-oauth26-');
  let fixture: OAuthFixture | undefined;
  afterEach(async () => {
    await fixture?.close();
    fixture = undefined;
  });
  const controllers = disposedAfterEach();

  async function signIn(options: OAuthFixtureOptions): Promise<{ c: McpController; f: OAuthFixture; warnings: string[] }> {
    const f = (fixture = await startOAuthFixture(options));
    const warnings: string[] = [];
    const c = authTestController(tmp.path, { oauth: {}, onAuthorizationUrl: browser, logger: { warn: (m) => warnings.push(m), error: () => {} } });
    controllers.push(c);
    await c.addRuntimeServer('remote', { type: 'http', url: f.url });
    await c.start();
    return { c, f, warnings };
  }

  it('registers as a native application (loopback redirect) and accepts the matching iss', async () => {
    const { c, f } = await signIn({ responseIss: 'issuer' });
    expect(stateOf(c)?.state).toBe('connected');
    expect(f.registrations).toHaveLength(1);
    expect(f.registrations[0]).toMatchObject({ application_type: 'native' });
    expect(f.counts.authorization_code).toBe(1);
  });

  it('does not redeem a code whose redirect names another issuer', async () => {
    const { c, f, warnings } = await signIn({ responseIss: 'https://evil.example' });
    expect(f.counts.authorize).toBe(1);
    // The mix-up defence: the code is never sent to the token endpoint.
    expect(f.counts.authorization_code).toBe(0);
    expect(stateOf(c)?.state).toBe('needs_auth');
    // Status and why say so, naming both issuers: the one the browser came back from and the one the sign-in started at.
    const mixUp = `the browser came back from the authorization server "https://evil.example" (its "iss"), but this sign-in was started at "${f.base}"`;
    expect(stateOf(c)?.lastError).toContain(mixUp);
    expect(c.toolUnavailableMessage('mcp__remote__echo')).toContain(mixUp);
    expect(warnings.join('\n')).toContain(mixUp);

    // An explicit sign-in fails the same way, saying what to do.
    const err = await c.authenticate('remote', { onAuthorizationUrl: browser }).then(
      () => undefined,
      (e: unknown) => e as Error & { hint?: string },
    );
    expect(err?.message).toContain('"https://evil.example"');
    expect(err?.message).toContain(`"${f.base}"`);
    expect(err?.message).toContain('code was not redeemed');
    expect(err?.hint).toContain('mcp-reconciler auth remote');
    expect(err?.hint).toContain('mix-up');
    expect(f.counts.authorize).toBe(2);
    expect(f.counts.authorization_code).toBe(0);
  });

  it('steps up on 403 insufficient_scope asking for the granted scope and the challenged one, then the call succeeds', async () => {
    const { c, f } = await signIn({ toolScopes: { echo: 'files:write' } });
    expect(stateOf(c)?.state).toBe('connected');
    expect(f.authorizeScopes).toEqual(['mcp']);

    const result = await c.callTool('mcp__remote__echo', { text: 'after step-up' });
    expect(result.isError).toBeFalsy();
    expect(result.content).toEqual([{ type: 'text', text: 'after step-up' }]);
    // A new authorization (a refresh cannot widen a grant), for the union of both scopes (SEP-2350).
    expect(f.authorizeScopes).toHaveLength(2);
    expect(f.authorizeScopes[1]?.split(' ').sort()).toEqual(['files:write', 'mcp']);
    // The scope held before is kept: a tool that needs only it still works.
    const add = await c.callTool('mcp__remote__add', { a: 2, b: 3 });
    expect(add.structuredContent).toEqual({ sum: 5 });
  });

  it('does not redeem a code whose redirect lacks iss when the server advertises it', async () => {
    const { c, f } = await signIn({ responseIss: 'omit' });
    expect(f.counts.authorization_code).toBe(0);
    expect(stateOf(c)?.state).toBe('needs_auth');
  });
});

describe('OAuth, 2026-07-28 rules: the protected resource moves to another authorization server', () => {
  const tmp = tempDirEach('mcp-oauth26-move-');
  const cleanups: Array<() => Promise<unknown>> = [];

  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  async function as(): Promise<AuthorizationServerFixture> {
    const s = await startAuthorizationServer({ refreshTokens: true });
    cleanups.push(() => s.close());
    return s;
  }

  it('registers again at the new authorization server, signs in there and shows it nothing of the old one', async () => {
    const first = await as();
    const second = await as();
    // The MCP server accepts tokens of the authorization server it names now.
    let accepted = [first];
    const mcp = await startResourceServer(first.base, () => accepted);
    cleanups.push(() => mcp.close());
    const c = authTestController(tmp.path, { oauth: {}, onAuthorizationUrl: browser });
    cleanups.push(() => c.dispose());
    await c.addRuntimeServer('remote', { type: 'http', url: mcp.url });
    await c.start();
    expect(stateOf(c)?.state).toBe('connected');
    expect(first.registered).toHaveLength(1);
    expect(first.requests).toContain('POST /token');
    const old = [...first.registered, ...first.issued];
    expect(old.length).toBeGreaterThan(2); // the client ID, an access token and a refresh token

    mcp.authorizationServer = second.base;
    accepted = [second];
    const result = await c.callTool('mcp__remote__echo', { text: 'moved' });
    expect(result.content).toEqual([{ type: 'text', text: 'moved' }]);

    // Dynamic registration again, at the new one, and the sign-in with the client it registered.
    expect(second.registered).toHaveLength(1);
    const authorize = second.log.find((r) => r.request === 'GET /authorize');
    expect(new URLSearchParams(authorize?.query).get('client_id')).toBe(second.registered[0]);
    expect(second.requests).toContain('POST /token');
    // Neither the old client ID nor any old token (access or refresh) reached it.
    for (const r of second.log) for (const secret of old) expect(`${r.query} ${r.authorization} ${r.body}`).not.toContain(secret);
    expect(first.requests.filter((r) => !r.includes('/.well-known/'))).toEqual(['POST /register', 'GET /authorize', 'POST /token']);
  });

  it('the same authorization server named with a trailing slash is no move: the token is refreshed, nothing registered again', async () => {
    const only = await as();
    const mcp = await startResourceServer(only.base, () => [only]);
    cleanups.push(() => mcp.close());
    let asked = 0;
    const c = authTestController(tmp.path, { oauth: {}, onAuthorizationUrl: (server, url) => (asked++, browser(server, url)) });
    cleanups.push(() => c.dispose());
    await c.addRuntimeServer('remote', { type: 'http', url: mcp.url });
    await c.start();
    expect(stateOf(c)?.state).toBe('connected');
    expect(asked).toBe(1);

    mcp.authorizationServer = `${only.base}/`;
    only.access.clear(); // the access token expired
    const result = await c.callTool('mcp__remote__echo', { text: 'same server' });
    expect(result.content).toEqual([{ type: 'text', text: 'same server' }]);
    expect(asked).toBe(1);
    expect(only.registered).toHaveLength(1);
    expect(only.requests.filter((r) => !r.includes('/.well-known/'))).toEqual(['POST /register', 'GET /authorize', 'POST /token', 'POST /token']);
  });
});
