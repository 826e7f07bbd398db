/**
 * docs/cluster.md, OAuth credentials: two replicas keep one managed server's
 * tokens in Redis, sealed with AES-256-GCM under a key derived from the
 * cluster secret. When the access token dies under both at once, exactly one
 * refresh reaches the authorization server (which rotates refresh tokens: a
 * second use would be `invalid_grant`); the other replica takes the new
 * tokens from Redis after the lock.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOAuthFixture, type OAuthFixture } from '../fixtures/oauth-fixture.js';
import { textOf, type HttpConnected } from '../gateway/support.js';
import { waitFor } from '../helpers/processes.js';
import { authTestController, browser, stateOf } from '../auth/support.js';
import { connectRedis, RedisTokenStore, seal, sealingKey, unseal, workspaceKeys } from '../../src/cluster/index.js';
import { ClusterFixture } from './support.js';

const SECRET = 's'.repeat(48);

describe('serve --cluster: OAuth credentials in Redis', () => {
  const fx = new ClusterFixture();
  let oauth: OAuthFixture;

  beforeAll(async () => {
    await fx.startRedis();
    oauth = await startOAuthFixture();
  });

  afterAll(async () => {
    const left = await fx.stop();
    await oauth.close();
    expect(left).toBe(0);
  });

  it('seals: a record opens only with the secret and under its own key', () => {
    const key = sealingKey(SECRET);
    const sealed = seal(key, 'k1', '{"tokens":{"access_token":"abc"}}');
    expect(sealed).not.toMatch(/abc/);
    expect(unseal(key, 'k1', sealed)).toBe('{"tokens":{"access_token":"abc"}}');
    expect(() => unseal(key, 'k2', sealed)).toThrow();
    expect(() => unseal(sealingKey('t'.repeat(48)), 'k1', sealed)).toThrow();
    expect(() => sealingKey('short')).toThrow(/at least 32 bytes/);
  });

  it('two replicas refreshing one rotating token: one token-endpoint hit, both keep answering', async () => {
    // Sign in once into the cluster's store, as an operator would.
    const redis = await connectRedis(fx.redis.socket);
    let accessToken = '';
    try {
      const store = new RedisTokenStore({ redis, keys: workspaceKeys(fx.workspaceId), secret: SECRET, principal: 'gateway' });
      const signIn = authTestController(fx.ws.dir, { oauth: { tokenStore: store }, onAuthorizationUrl: browser });
      await signIn.addRuntimeServer('remote', { type: 'http', url: oauth.url });
      await signIn.start();
      expect(stateOf(signIn)?.state).toBe('connected');
      await signIn.dispose();
      accessToken = (await store.get(oauth.url))?.tokens?.access_token ?? '';
      expect(accessToken).not.toBe('');
    } finally {
      redis.destroy();
    }
    // Sealed at rest: no token in what Redis holds.
    const names = (await fx.redis.command(['KEYS', '*cred:gateway:*'])).split('\r\n').filter((l) => l.startsWith('mcpr:'));
    expect(names.length).toBeGreaterThan(0);
    for (const k of names) expect(await fx.redis.command(['HGETALL', k]).catch(() => '')).not.toContain(accessToken);
    const record = names.find((k) => !k.endsWith(':index'))!;
    expect(await fx.redis.command(['HGET', record, 'data'])).toMatch(/^\$\d+\r\n[A-Za-z0-9+/=]+\r\n$/);

    fx.ws.writeUser({ remote: { type: 'http', url: oauth.url } });
    const sessions: HttpConnected[] = [];
    for (const name of ['a', 'b']) {
      const r = await fx.replica(name, [], { MCP_RECONCILER_CLUSTER_SECRET: SECRET });
      const s = await r.open('?servers=remote');
      sessions.push(s);
      await waitFor(async () => (await s.client.listTools()).tools.some((t) => t.name === 'mcp__remote__echo'), `replica ${name} to list mcp__remote__echo`, 60_000);
    }
    expect(oauth.counts.refresh_token).toBe(0);

    oauth.expireAccessTokens();
    oauth.holdUnauthorized(2);
    const results = await Promise.all(sessions.map((s, i) => s.client.callTool({ name: 'mcp__remote__echo', arguments: { text: `after expiry ${i}` } })));
    for (const [i, r] of results.entries()) {
      expect(r.isError, `replica ${i}: ${textOf(r)}\n${fx.replicas[i]!.serve.stderr}`).toBeFalsy();
      expect(textOf(r)).toBe(`after expiry ${i}`);
    }
    expect(oauth.counts.refresh_token).toBe(1);
    for (const s of sessions) expect((await s.client.callTool({ name: 'mcp__remote__echo', arguments: { text: 'again' } })).isError).toBeFalsy();
    expect(oauth.counts.refresh_token).toBe(1);
    expect(oauth.counts.authorization_code).toBe(1);
  }, 180_000);
});
