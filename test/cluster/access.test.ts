/**
 * docs/cluster.md, access: a clustered gateway is an OAuth 2.1 resource
 * server. Access tokens of the identity provider (JWTs checked against its
 * JWKS: signature, issuer, audience, expiry) replace the shared token; the
 * RFC 9728 metadata says where to get one; a token's scopes bound the
 * servers a session sees; a session belongs to its principal; Host and
 * Origin are checked against the allow-list.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { runCliCaptured } from '../helpers/cli.js';
import { rawRequest as raw } from '../helpers/http.js';
import { textOf } from '../gateway/support.js';
import { ClusterFixture, PUBLIC_URL, type Replica } from './support.js';

const INIT = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } });
const POST_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

describe('serve --cluster: principals', () => {
  const fx = new ClusterFixture();
  let r: Replica;

  beforeAll(async () => {
    await fx.startRedis();
    fx.ws.writeUser({ a: fx.ws.server('1'), b: fx.ws.server('2') });
    r = await fx.replica('a', ['--bind', '127.0.0.1', '--allowed-host', 'tools.internal:8443', '--allowed-origin', 'https://app.example']);
  }, 120_000);

  afterAll(async () => {
    expect(await fx.stop()).toBe(0);
  });

  it('without a token: 401 naming the RFC 9728 metadata, which names the issuer', async () => {
    const none = await raw(r.url, { method: 'POST', headers: POST_HEADERS, body: INIT });
    expect(none.status).toBe(401);
    expect(none.headers['www-authenticate']).toBe('Bearer resource_metadata="http://gateway.test/.well-known/oauth-protected-resource/mcp"');
    const port = new URL(r.url).port;
    const meta = await raw(`http://127.0.0.1:${port}/.well-known/oauth-protected-resource/mcp`);
    expect(meta.status).toBe(200);
    expect(JSON.parse(meta.body)).toMatchObject({ resource: PUBLIC_URL, authorization_servers: [fx.idp.issuer], bearer_methods_supported: ['header'] });
  });

  it('refuses a shared token, a token for another audience or issuer, an expired one, and one signed by another key', async () => {
    const other = await generateKeyPair('ES256');
    const forged = await new SignJWT({ scope: 'mcp:servers' })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setSubject('mallory')
      .setIssuer(fx.idp.issuer)
      .setAudience(PUBLIC_URL)
      .setExpirationTime('1h')
      .sign(other.privateKey);
    expect(await exportJWK(other.publicKey)).toHaveProperty('x');
    const tokens: [string, RegExp][] = [
      ['c'.repeat(64), /not valid/],
      [await fx.idp.token('alice', 'mcp:servers', { audience: 'http://elsewhere.test/mcp' }), /"aud" claim/],
      [await fx.idp.token('alice', 'mcp:servers', { issuer: 'http://127.0.0.1:1' }), /"iss" claim/],
      [await fx.idp.token('alice', 'mcp:servers', { expiresIn: Math.floor(Date.now() / 1000) - 60 }), /expired/],
      [forged, /not valid/],
    ];
    for (const [token, why] of tokens) {
      const res = await raw(r.url, { method: 'POST', headers: { ...POST_HEADERS, authorization: `Bearer ${token}` }, body: INIT });
      expect(res.status, token).toBe(401);
      expect(res.headers['www-authenticate']).toMatch(/error="invalid_token"/);
      expect(JSON.parse(res.body).error.message).toMatch(why);
    }
    const noServer = await raw(r.url, { method: 'POST', headers: { ...POST_HEADERS, authorization: `Bearer ${await fx.idp.token('alice', 'openid')}` }, body: INIT });
    expect(noServer.status).toBe(403);
    expect(noServer.headers['www-authenticate']).toMatch(/error="insufficient_scope"/);
  });

  it("a session's servers are what it asks for within what its token grants", { timeout: 120_000 }, async () => {
    const onlyA = await fx.idp.token('bob', 'openid mcp:server:a');
    const asked = await r.open('?servers=a,b', onlyA);
    expect((await asked.client.listTools()).tools.map((t) => t.name).filter((n) => n.startsWith('mcp__b__'))).toEqual([]);
    expect((await asked.client.listTools()).tools.map((t) => t.name)).toContain('mcp__a__echo');
    const outside = await asked.client.callTool({ name: 'mcp__b__echo', arguments: { text: 'x' } });
    expect(outside.isError).toBe(true);
    const unscoped = await r.open('', onlyA);
    expect((await unscoped.client.listTools()).tools.map((t) => t.name).some((n) => n.startsWith('mcp__b__'))).toBe(false);
    const all = await r.open('');
    expect(textOf(await all.client.callTool({ name: 'mcp__b__echo', arguments: { text: 'b' } }))).toBe('b');
  });

  it('a session belongs to its principal: another principal with its id gets 404', async () => {
    const alice = await r.open('?servers=a');
    const id = alice.transport.sessionId!;
    const bob = await fx.idp.token('bob');
    const res = await raw(r.url, {
      method: 'POST',
      headers: { ...POST_HEADERS, authorization: `Bearer ${bob}`, 'mcp-session-id': id, 'mcp-protocol-version': '2025-06-18' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
    });
    expect(res.status).toBe(404);
    expect(res.body).toMatch(/another principal/);
  });

  it('Host and Origin: loopback and the allow-list pass, anything else is 403', async () => {
    const port = new URL(r.url).port;
    const auth = `Bearer ${await fx.idp.token('alice')}`;
    const post = (headers: Record<string, string>) => raw(r.url, { method: 'POST', headers: { ...POST_HEADERS, authorization: auth, ...headers }, body: INIT });
    expect((await post({ host: 'evil.example' })).status).toBe(403);
    expect((await post({ host: 'gateway.test' })).status).toBe(200); // --public-url's host
    expect((await post({ host: 'tools.internal:8443' })).status).toBe(200);
    expect((await post({ host: `127.0.0.1:${port}`, origin: 'https://evil.example' })).status).toBe(403);
    expect((await post({ host: `127.0.0.1:${port}`, origin: 'https://app.example' })).status).toBe(200);
  });

  it('usage: --cluster needs the identity provider; --bind beyond loopback needs --cluster', async () => {
    const noAuth = await runCliCaptured(['serve', '--http', ...fx.clusterArgs(), ...fx.ws.args()], fx.ws.env(), fx.ws.root);
    expect(noAuth.code).toBe(2);
    expect(noAuth.stderr).toMatch(/--cluster needs --auth-issuer and --auth-jwks/);
    const wide = await runCliCaptured(['serve', '--http', '--bind', '0.0.0.0', ...fx.ws.args()], fx.ws.env(), fx.ws.root);
    expect(wide.code).toBe(2);
    expect(wide.stderr).toMatch(/--bind 0.0.0.0 reaches beyond this machine, which needs --cluster/);
  });
});
