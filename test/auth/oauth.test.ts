/**
 * OAuth through the public API against a loopback authorization server
 * (test/fixtures/oauth-fixture.ts): the authorization-code flow with PKCE
 * and dynamic registration, the `needs_auth` → AUTHENTICATED path, refresh
 * and revocation, and the file token store. The browser step is a plain
 * fetch of the authorization URL and of its redirect.
 */
import { chmodSync, statSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FileTokenStore, MemoryTokenStore, type McpController, type McpReconcilerError } from '../../src/index.js';
import { startOAuthFixture, type OAuthFixture } from '../fixtures/oauth-fixture.js';
import { disposedAfterEach } from '../helpers/bare-controller.js';
import { tempDirEach } from '../helpers/temp-dir.js';
import { authTestController, browser, reach, stateOf } from './support.js';
import { redactServerConfig } from '../../src/config/redact.js';

/** For `.then(...rejection)`: what a promise rejected with, or undefined when it resolved. */
const rejection = [() => undefined, (e: unknown) => e as McpReconcilerError] as const;

describe('OAuth (authorization code + PKCE, loopback redirect)', () => {
  const tmp = tempDirEach('mcp-oauth-');
  let fixture: OAuthFixture;
  beforeEach(async () => {
    fixture = await startOAuthFixture();
  });
  afterEach(async () => {
    await fixture.close();
  });
  const controllers = disposedAfterEach();

  function controller(opts: Parameters<typeof authTestController>[1] = {}): McpController {
    // Tokens in memory unless a test names a store.
    const c = authTestController(tmp.path, { oauth: {}, ...opts });
    controllers.push(c);
    return c;
  }

  /** A started controller with the fixture as its one runtime server, `remote`. */
  async function startedWithRemote(opts: Parameters<typeof authTestController>[1] = {}): Promise<McpController> {
    const c = controller(opts);
    await c.addRuntimeServer('remote', { type: 'http', url: fixture.url });
    await c.start();
    return c;
  }

  /** Signed in once into a fresh store; then `reset` at the authorization server, and a second controller over that store waits in needs_auth. */
  async function signedInThenReset(reset: () => void): Promise<{ store: MemoryTokenStore; second: McpController }> {
    const store = new MemoryTokenStore();
    const first = await startedWithRemote({ oauth: { tokenStore: store }, onAuthorizationUrl: browser });
    await first.dispose();
    reset();
    const second = await startedWithRemote({ oauth: { tokenStore: store } });
    expect(stateOf(second)?.state).toBe('needs_auth');
    return { store, second };
  }

  it('signs in during the connect when the host hook drives the browser, and stores tokens in a 0600 file', async () => {
    const storePath = join(tmp.path, 'state', 'oauth.json');
    const urls: string[] = [];
    const c = controller({
      oauth: { tokenStore: storePath },
      onAuthorizationUrl: async (server, url) => {
        urls.push(url.href);
        await browser(server, url);
      },
    });
    await c.addRuntimeServer('remote', { type: 'http', url: fixture.url });
    await c.start();
    expect(stateOf(c)?.state).toBe('connected');
    expect(urls).toHaveLength(1);
    const auth = new URL(urls[0]!);
    expect(auth.searchParams.get('code_challenge_method')).toBe('S256');
    expect(auth.searchParams.get('redirect_uri')).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/);
    expect(fixture.counts).toMatchObject({ register: 1, authorization_code: 1 });
    const result = await c.callTool('mcp__remote__echo', { text: 'hi' });
    expect(result.isError).toBeFalsy();
    expect(statSync(storePath).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(readFileSync(storePath, 'utf8')) as { servers: Record<string, { tokens?: { access_token?: string } }> };
    expect(stored.servers[fixture.url]?.tokens?.access_token).toBeTruthy();
  });

  it.runIf(process.platform !== 'win32').each([
    ['0666', 0o666],
    ['0620', 0o620],
  ])('does not use a token file that group or others can write (mode %s): needs_auth with the reason and the fix', async (_octal, mode) => {
    const storePath = join(tmp.path, 'state', 'oauth.json');
    const first = await startedWithRemote({ oauth: { tokenStore: storePath }, onAuthorizationUrl: browser });
    expect(stateOf(first)?.state).toBe('connected');
    await first.dispose();
    const grants = { ...fixture.counts };

    // Valid tokens, but anyone could have put them (or the endpoints they go to) there.
    chmodSync(storePath, mode);
    const second = await startedWithRemote({ oauth: { tokenStore: storePath } });
    const row = stateOf(second)!;
    expect(row.state).toBe('needs_auth');
    expect(row.lastError).toContain(storePath);
    expect(row.lastError).toMatch(/writable by (group|others)/);
    expect(row.lastError).toContain(`chmod 600 ${storePath}`);
    expect(second.toolUnavailableMessage('mcp__remote__echo')).toContain(`chmod 600 ${storePath}`);
    // Nothing in the file was used: no refresh, no new grant.
    expect(fixture.counts).toEqual(grants);
    // `auth` does not write over it either (that would launder its content into a trusted file).
    const refused = await second.authenticate('remote', { onAuthorizationUrl: browser }).then(() => undefined, (e: unknown) => e as Error);
    expect(refused?.message).toContain(storePath);
    expect(statSync(storePath).mode & 0o777).toBe(mode);

    // Once the user vouches for it, it is used again.
    chmodSync(storePath, 0o600);
    const third = await startedWithRemote({ oauth: { tokenStore: storePath } });
    expect(stateOf(third)?.state).toBe('connected');
  });

  it('rests in needs_auth without a hook, says which command fixes it, and leaves it with authenticate()', async () => {
    const c = await startedWithRemote({ oauth: { tokenStore: new MemoryTokenStore() } });
    expect(stateOf(c)?.state).toBe('needs_auth');
    expect(fixture.counts.register).toBe(0); // nobody to sign in: nothing was started
    expect(c.toolUnavailableMessage('mcp__remote__echo')).toContain('mcp-reconciler auth remote');
    const connected = reach(c, 'connected');
    const generation = stateOf(c)!.generation;
    await c.authenticate('remote', { onAuthorizationUrl: browser });
    await connected;
    expect(stateOf(c)!.generation).toBe(generation + 1);
    expect((await c.callTool('mcp__remote__echo', { text: 'x' })).isError).toBeFalsy();
  });

  it('refreshes an expired access token without a user, and needs a new sign-in once everything is revoked', async () => {
    const store = new MemoryTokenStore();
    const first = await startedWithRemote({ oauth: { tokenStore: store }, onAuthorizationUrl: browser });
    expect(stateOf(first)?.state).toBe('connected');
    await first.dispose();

    // A later run: no hook, the access token is dead, the refresh token works.
    fixture.expireAccessTokens();
    const second = await startedWithRemote({ oauth: { tokenStore: store } });
    expect(stateOf(second)?.state).toBe('connected');
    expect(fixture.counts.refresh_token).toBe(1);
    expect(fixture.counts.authorization_code).toBe(1);
    await second.dispose();

    // Revoked: the refresh fails, so the server waits for a sign-in.
    fixture.revokeAll();
    const third = await startedWithRemote({ oauth: { tokenStore: store } });
    expect(stateOf(third)?.state).toBe('needs_auth');
    expect(fixture.counts.refresh_token).toBe(2);
    const connected = reach(third, 'connected');
    await third.authenticate('remote', { onAuthorizationUrl: browser });
    await connected;
    expect(fixture.counts.authorization_code).toBe(2);
  });

  it('forgets a dynamic registration the authorization server dropped once a sign-in with it gets no redirect back; the next sign-in registers again', async () => {
    const store = new MemoryTokenStore();
    const first = await startedWithRemote({ oauth: { tokenStore: store }, onAuthorizationUrl: browser });
    expect(stateOf(first)?.state).toBe('connected');
    await first.dispose();
    expect(fixture.counts.register).toBe(1);

    // The authorization server was reset: our client id means nothing to it, and the refresh fails.
    fixture.forgetClients();
    const second = await startedWithRemote({ oauth: { tokenStore: store } });
    expect(stateOf(second)?.state).toBe('needs_auth');

    // The sign-in page answers 400 and never redirects; the user gives up (no timer in the test).
    const giveUp = new AbortController();
    const pages: number[] = [];
    const failed = await second
      .authenticate('remote', {
        signal: giveUp.signal,
        onAuthorizationUrl: async (_server, url) => {
          pages.push((await fetch(url, { redirect: 'manual' })).status);
          giveUp.abort(new Error('the user closed the sign-in'));
        },
      })
      .then(...rejection);
    expect(pages).toEqual([400]);
    expect(failed?.hint).toContain('no longer knows');
    expect(failed?.hint).toContain('mcp-reconciler auth remote');
    expect(fixture.counts.register).toBe(1);

    const connected = reach(second, 'connected');
    await second.authenticate('remote', { onAuthorizationUrl: browser });
    await connected;
    expect(fixture.counts.register).toBe(2);
    expect((await second.callTool('mcp__remote__echo', { text: 'x' })).isError).toBeFalsy();
  });

  it('a sign-in given up after another process signed in leaves that sign-in\'s registration and tokens in the store', async () => {
    const { store, second } = await signedInThenReset(() => fixture.forgetClients());
    const [key] = await store.keys();
    const mine = (await store.get(key!))!.clientInformation!.client_id;
    // While this sign-in waits, a terminal (or another replica) signs in with a registration of its own.
    const elsewhere = { clientInformation: { client_id: 'registered-elsewhere' }, tokens: { access_token: 'from-elsewhere', token_type: 'Bearer' } };
    const giveUp = new AbortController();
    const failed = await second
      .authenticate('remote', {
        signal: giveUp.signal,
        onAuthorizationUrl: async () => {
          await store.update(key!, () => elsewhere);
          giveUp.abort(new Error('the user closed the sign-in'));
        },
      })
      .then(...rejection);
    expect(failed).toBeDefined();
    expect(mine).not.toBe('registered-elsewhere');
    // Its own registration is what it gives up on; the one stored since is not its to drop.
    expect(await store.get(key!)).toEqual(elsewhere);
  });

  it('keeps a dynamic registration when the browser came back (a refused consent is not a forgotten client)', async () => {
    const { second } = await signedInThenReset(() => fixture.revokeAll());
    // The user declines: the authorization server redirects back with an error.
    const refused = await second
      .authenticate('remote', {
        onAuthorizationUrl: async (_server, url) => {
          const back = new URL(url.searchParams.get('redirect_uri')!);
          back.searchParams.set('error', 'access_denied');
          back.searchParams.set('state', url.searchParams.get('state')!);
          await (await fetch(back)).text();
        },
      })
      .then(...rejection);
    expect(refused?.message).toContain('access_denied');
    const connected = reach(second, 'connected');
    await second.authenticate('remote', { onAuthorizationUrl: browser });
    await connected;
    expect(fixture.counts.register).toBe(1);
  });

  it('logout forgets the stored credentials', async () => {
    const store = new MemoryTokenStore();
    const c = await startedWithRemote({ oauth: { tokenStore: store }, onAuthorizationUrl: browser });
    expect(await store.keys()).toEqual([fixture.url]);
    expect(await c.logout('remote')).toBe(true);
    expect(await store.keys()).toEqual([]);
    expect(await c.logout('remote')).toBe(false);
  });

  it('answers a redirect with a state it did not issue with 400 "Sign-in failed", and the real one still completes', async () => {
    const c = await startedWithRemote({ oauth: { tokenStore: new MemoryTokenStore() } });
    expect(stateOf(c)?.state).toBe('needs_auth');
    const pages: Array<{ status: number; text: string }> = [];
    const connected = reach(c, 'connected');
    await c.authenticate('remote', {
      onAuthorizationUrl: async (server, url) => {
        const forged = new URL(url.searchParams.get('redirect_uri')!);
        forged.searchParams.set('code', 'forged');
        forged.searchParams.set('state', 'someone-elses-state');
        const res = await fetch(forged);
        pages.push({ status: res.status, text: await res.text() });
        await browser(server, url);
      },
    });
    await connected;
    expect(pages[0]?.status).toBe(400);
    expect(pages[0]?.text).toContain('Sign-in failed');
    expect(pages[0]?.text).toContain('state mismatch');
    expect(pages[0]?.text).not.toContain('Authorized');
    expect(fixture.counts.authorization_code).toBe(1);
  });

  it('keeps a pre-registered client secret out of printed config and the token store', async () => {
    const config = { type: 'http' as const, url: fixture.url, oauth: { clientId: 'pre', clientSecret: 's3cr3t-value', privateKey: '-----BEGIN PRIVATE KEY-----x' } };
    const shown = JSON.stringify(redactServerConfig(config));
    expect(shown).toContain('"clientId":"pre"');
    expect(shown).not.toContain('s3cr3t-value');
    expect(shown).not.toContain('BEGIN PRIVATE KEY');
    const store = new FileTokenStore(join(tmp.path, 'oauth.json'));
    await store.update('k', () => ({ clientInformation: { client_id: 'pre' }, configClientId: 'pre' }));
    expect(readFileSync(store.path, 'utf8')).not.toContain('s3cr3t-value');
  });
});
