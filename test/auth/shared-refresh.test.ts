/**
 * Two hosts on one token store (two `serve --stdio` processes of the built
 * binary): when the access token dies, exactly one refresh reaches the
 * authorization server, which rotates refresh tokens (a second use of one is
 * `invalid_grant`); the other process picks the new tokens up from the store
 * and neither ends in `needs_auth`.
 */
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FileTokenStore } from '../../src/index.js';
import { startOAuthFixture, type OAuthFixture } from '../fixtures/oauth-fixture.js';
import { connectStdio, textOf, Workspace, type StdioConnected } from '../gateway/support.js';
import { waitFor } from '../helpers/processes.js';
import { authTestController, browser, stateOf } from './support.js';

/** A gateway workspace whose processes all use one OAuth token store file. */
class SharedStoreWorkspace extends Workspace {
  readonly tokenStore = join(this.dir, 'state', 'oauth.json');

  override env(): NodeJS.ProcessEnv {
    return { ...super.env(), MCP_RECONCILER_OAUTH_STORE: this.tokenStore };
  }
}

describe('a rotating refresh token shared by two processes', () => {
  let fixture: OAuthFixture;
  let ws: SharedStoreWorkspace;
  const clients: StdioConnected[] = [];

  beforeEach(async () => {
    fixture = await startOAuthFixture();
    ws = new SharedStoreWorkspace();
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.client.close().catch(() => undefined)));
    const left = await ws.cleanup();
    await fixture.close();
    expect(left, 'processes left behind').toBe(0);
  });

  it('is refreshed once; the other process uses the tokens from the store', async () => {
    // Sign in once, as `mcp-reconciler auth` would, into the shared file.
    const signIn = authTestController(ws.dir, { oauth: { tokenStore: new FileTokenStore(ws.tokenStore) }, onAuthorizationUrl: browser });
    await signIn.addRuntimeServer('remote', { type: 'http', url: fixture.url });
    await signIn.start();
    expect(stateOf(signIn)?.state).toBe('connected');
    await signIn.dispose();

    ws.writeUser({ remote: { type: 'http', url: fixture.url } });
    for (let i = 0; i < 2; i++) {
      const c = await connectStdio(ws);
      clients.push(c);
      await waitFor(async () => (await c.client.listTools()).tools.some((t) => t.name === 'mcp__remote__echo'), `process ${i + 1} to list mcp__remote__echo`, 60_000);
    }
    expect(fixture.counts.refresh_token).toBe(0);

    // Both processes hold the same access token when it dies, and both see the 401 together.
    fixture.expireAccessTokens();
    fixture.holdUnauthorized(2);
    const results = await Promise.all(clients.map((c, i) => c.client.callTool({ name: 'mcp__remote__echo', arguments: { text: `after expiry ${i}` } })));
    for (const [i, r] of results.entries()) {
      expect(r.isError, `process ${i + 1}: ${textOf(r)}\n${clients[i]!.stderr()}`).toBeFalsy();
      expect(textOf(r)).toBe(`after expiry ${i}`);
    }
    expect(fixture.counts.refresh_token).toBe(1);

    // Both stay connected on the new tokens.
    for (const [i, c] of clients.entries()) {
      const r = await c.client.callTool({ name: 'mcp__remote__echo', arguments: { text: `again ${i}` } });
      expect(r.isError, textOf(r)).toBeFalsy();
    }
    expect(fixture.counts.refresh_token).toBe(1);
    expect(fixture.counts.authorization_code).toBe(1);
  });
});
