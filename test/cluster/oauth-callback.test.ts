/**
 * docs/cluster-oauth.md: a managed server's OAuth sign-in started on one
 * replica completes through whichever replica the browser comes back to. The
 * flow's state, PKCE verifier and registration are sealed in Redis, single
 * use, for 10 minutes; the replica the callback reaches redeems the code into
 * the shared credential store and the starter connects. The "browser" here
 * is fetch: the authorization URL's redirect is sent to the other replica, as
 * a load balancer would.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOAuthFixture, type OAuthFixture } from '../fixtures/oauth-fixture.js';
import { textOf } from '../gateway/support.js';
import { waitFor } from '../helpers/processes.js';
import { authorizeAt, ClusterFixture, deliver, PUBLIC_URL, signInUrl, type Replica } from './support.js';

const SECRET = 'c'.repeat(48);
const CALLBACK = new URL('/oauth/callback', PUBLIC_URL).href;

describe('serve --cluster: a managed server\'s OAuth callback on any replica', () => {
  const fx = new ClusterFixture();
  let oauth: OAuthFixture;
  let other: OAuthFixture;
  let third: OAuthFixture;
  // The two replicas, started by the first test (or beforeAll) and used by the rest.
  let a: Replica, b: Replica;

  beforeAll(async () => {
    await fx.startRedis();
    oauth = await startOAuthFixture();
    other = await startOAuthFixture();
    third = await startOAuthFixture();
    fx.ws.writeUser({ remote: { type: 'http', url: oauth.url }, other: { type: 'http', url: other.url }, third: { type: 'http', url: third.url } });
    a = await fx.replica('a', [], { MCP_RECONCILER_CLUSTER_SECRET: SECRET });
    b = await fx.replica('b', [], { MCP_RECONCILER_CLUSTER_SECRET: SECRET });
  }, 120_000);

  afterAll(async () => {
    const left = await fx.stop();
    await oauth?.close();
    await other?.close();
    await third?.close();
    expect(left).toBe(0);
  });

  it('sign-in started on A, callback on B: B redeems the code, A connects; the same callback again is refused', async () => {
    const s = await a.open('?servers=remote');
    const authUrl = await signInUrl(a, 'remote');
    // The sign-in names the public callback, not a loopback receiver of A.
    expect(authUrl.searchParams.get('redirect_uri')).toBe(CALLBACK);
    const callback = await authorizeAt(authUrl);
    expect(callback.href.startsWith(`${CALLBACK}?`)).toBe(true);

    const page = await deliver(callback, b);
    expect(page.body).toContain('Signed in');
    expect(page.status).toBe(200);
    expect(oauth.counts.authorization_code).toBe(1);
    expect(b.serve.stderr).toContain('sign-in of "remote" completed here');

    // A re-reads the shared store and connects.
    await waitFor(async () => (await s.client.listTools()).tools.some((t) => t.name === 'mcp__remote__echo'), 'replica a to list mcp__remote__echo', 60_000);
    const r = await s.client.callTool({ name: 'mcp__remote__echo', arguments: { text: 'via a' } });
    expect(textOf(r)).toBe('via a');

    // Replayed (to either replica): refused, the code is not redeemed twice.
    for (const replica of [a, b]) {
      const again = await deliver(callback, replica);
      expect(again.status).toBe(400);
      expect(again.body).toContain('already used');
      expect(again.body).toContain('Start the sign-in again');
    }
    expect(oauth.counts.authorization_code).toBe(1);

    // Single use: the record is gone.
    expect(await fx.redis.command(['EXISTS', `mcpr:{${fx.workspaceId}}:oauth-state:${callback.searchParams.get('state')}`])).toBe(':0\r\n');
  }, 180_000);

  it('an expired or unknown state is refused with what to do, and its code is never redeemed', async () => {
    await a.open('?servers=other');
    const authUrl = await signInUrl(a, 'other');
    const callback = await authorizeAt(authUrl);
    const state = callback.searchParams.get('state')!;
    const key = `mcpr:{${fx.workspaceId}}:oauth-state:${state}`;
    // Sealed at rest: no JSON (no verifier, no registration) in what Redis holds.
    expect(await fx.redis.command(['GET', key])).toMatch(/^\$\d+\r\n[A-Za-z0-9+/=]+\r\n$/);
    // The record's TTL runs out (10 minutes, shortened here).
    expect(await fx.redis.command(['PEXPIRE', key, '1'])).toBe(':1\r\n');
    await waitFor(async () => (await fx.redis.command(['EXISTS', key])) === ':0\r\n', 'the sign-in record to expire');

    const page = await deliver(callback, b);
    expect(page.status).toBe(400);
    expect(page.body).toContain('Sign-in expired');
    expect(page.body).toContain('Start the sign-in again');
    expect(other.counts.authorization_code).toBe(0);

    const unknown = new URL(callback);
    unknown.searchParams.set('state', 'x'.repeat(22));
    const forged = await deliver(unknown, a);
    expect(forged.status).toBe(400);
    expect(forged.body).toContain('Sign-in expired');
    expect(other.counts.authorization_code).toBe(0);
  }, 180_000);

  it('a sign-in the user refused (error=access_denied) ends on the starter with the authorization server\'s words', async () => {
    await a.open('?servers=third');
    const authUrl = await signInUrl(a, 'third');
    // What the authorization server sends back when the user clicks "Deny".
    const denied = new URL(CALLBACK);
    denied.searchParams.set('error', 'access_denied');
    denied.searchParams.set('error_description', 'the user said no');
    denied.searchParams.set('state', authUrl.searchParams.get('state')!);
    const page = await deliver(denied, b);
    expect(page.status).toBe(400);
    expect(page.body).toContain('Authorization failed');
    expect(page.body).toContain('access_denied: the user said no');
    await a.serve.fromStderr(/(the sign-in of "third" started here failed: [^\n]*access_denied[^\n]*)/, 'replica a to report the refused sign-in');
    expect(third.counts.authorization_code).toBe(0);
    // Used once: the same answer again is refused as a replay.
    expect((await deliver(denied, a)).body).toContain('already used');
  }, 180_000);
});
