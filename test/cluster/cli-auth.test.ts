/**
 * `auth SERVER --cluster` / `logout SERVER --cluster` (docs/cluster-gaps.md):
 * a terminal sign-in whose tokens go to the cluster's sealed credential
 * store in Redis, under the gateway's identity, so a replica connects the
 * server without a sign-in of its own; `logout --cluster` removes them.
 * The built binary against the local OAuth fixture, the "browser" being
 * fetches of the printed URL; a real redis-server and a real replica.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOAuthFixture, type OAuthFixture } from '../fixtures/oauth-fixture.js';
import { runCliCaptured } from '../helpers/cli.js';
import { waitFor } from '../helpers/processes.js';
import { textOf } from '../gateway/support.js';
import { ClusterFixture, signInFromTerminal } from './support.js';

const SECRET = 'c'.repeat(64);
const withSecret = { MCP_RECONCILER_CLUSTER_SECRET: SECRET };

describe('auth / logout SERVER --cluster: sign in once for every replica', () => {
  const fx = new ClusterFixture();
  let oauth: OAuthFixture;

  const credentialKeys = async (): Promise<string[]> => (await fx.redis.command(['KEYS', `mcpr:{${fx.workspaceId}}:cred:gateway:*`])).split('\r\n').filter((l) => l.startsWith('mcpr:'));
  const cli = (argv: string[], env: NodeJS.ProcessEnv = withSecret) => runCliCaptured([...argv, ...fx.ws.args()], { ...fx.ws.env(), ...env }, fx.ws.root);

  const signIn = (): Promise<string> => signInFromTerminal(fx, 'remote', withSecret);

  beforeAll(async () => {
    await fx.startRedis();
    oauth = await startOAuthFixture();
    fx.ws.writeUser({ remote: { type: 'http', url: oauth.url } });
  });

  afterAll(async () => {
    const left = await fx.stop();
    await oauth.close();
    expect(left).toBe(0);
  });

  it('says what is wrong: no secret, an unknown server, Redis unreachable, a half-given cluster', async () => {
    const noSecret = await cli(['auth', 'remote', ...fx.clusterArgs()], {});
    expect(noSecret.code, noSecret.stderr).toBe(2);
    expect(noSecret.stderr).toMatch(/--cluster needs \$MCP_RECONCILER_CLUSTER_SECRET: a cluster keeps OAuth credentials in Redis sealed with it/);
    const unknown = await cli(['auth', 'nope', ...fx.clusterArgs()]);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toMatch(/no MCP server named "nope" is configured/);
    expect(unknown.stderr).toMatch(/configured servers: remote/);
    const unreachable = await cli(['logout', 'remote', '--cluster', `${fx.redis.socket}.missing`, '--workspace-id', fx.workspaceId]);
    expect(unreachable.code).not.toBe(0);
    expect(unreachable.stderr).toMatch(/cannot reach Redis at .*\.missing/);
    const half = await cli(['auth', 'remote', '--cluster', fx.redis.socket]);
    expect(half.code).toBe(2);
    expect(half.stderr).toMatch(/--cluster needs --workspace-id/);
    const both = await cli(['logout', 'remote', ...fx.clusterArgs(), '--token-store', '/tmp/x.json']);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/--token-store and --cluster exclude each other/);
  }, 120_000);

  it('auth --cluster stores sealed tokens in Redis; a replica then connects the server without a sign-in; logout --cluster removes them', async () => {
    const out = await signIn();
    expect(out).toContain(`Authorised "remote"; tokens stored in cluster workspace ${fx.workspaceId} (Redis at ${fx.redis.socket}, sealed)`);
    expect(oauth.counts.authorization_code).toBe(1);
    const stored = await credentialKeys();
    expect(stored.length).toBeGreaterThan(0);

    // A replica started afterwards: the session's call reaches the server with the stored tokens, nobody signs in.
    const a = await fx.replica('a', [], withSecret);
    const s = await a.open('?servers=remote');
    await waitFor(async () => (await s.client.listTools()).tools.some((t) => t.name === 'mcp__remote__echo'), 'the replica to list mcp__remote__echo', 60_000);
    const r = await s.client.callTool({ name: 'mcp__remote__echo', arguments: { text: 'signed in from a terminal' } });
    expect(r.isError, `${textOf(r)}\n${a.serve.stderr}`).toBeFalsy();
    expect(textOf(r)).toBe('signed in from a terminal');
    expect(a.serve.stderr).not.toMatch(/needs a sign-in/);
    expect(oauth.counts.authorization_code).toBe(1);

    const out2 = await cli(['logout', 'remote', ...fx.clusterArgs()]);
    expect(out2.code, out2.stderr).toBe(0);
    expect(out2.stdout).toContain(`Removed the stored OAuth credentials of "remote" from cluster workspace ${fx.workspaceId}`);
    expect(await credentialKeys()).toEqual([]);
    const again = await cli(['logout', 'remote', ...fx.clusterArgs(), '--json']);
    expect(JSON.parse(again.stdout)).toEqual({ server: 'remote', removed: false, workspaceId: fx.workspaceId });
  }, 240_000);
  it('a replica whose server already waits in needs_auth connects it as soon as auth --cluster stores tokens, with no session asking again', async () => {
    const b = await fx.replica('b', [], withSecret);
    const s = await b.open('?servers=remote');
    // No tokens (the test above logged out): the server rests in needs_auth, as its log says.
    const logs = join(fx.env('b').XDG_STATE_HOME!, 'mcp-reconciler', 'logs');
    const logged = (): string =>
      (readdirSync(logs, { recursive: true }) as string[])
        .filter((f) => f.endsWith('remote.log'))
        .map((f) => readFileSync(join(logs, f), 'utf8'))
        .join('');
    await waitFor(() => existsSync(logs) && /"text":"needs_auth"/.test(logged()), 'replica b to log "remote" in needs_auth', 90_000);
    const listsEcho = async (): Promise<boolean> => (await s.client.listTools()).tools.some((t) => t.name === 'mcp__remote__echo');
    expect(await listsEcho()).toBe(false);

    const grants = oauth.counts.authorization_code;
    expect(await signIn()).toContain('Authorised "remote"');
    await waitFor(listsEcho, 'replica b to list mcp__remote__echo once the terminal stored tokens', 60_000);
    const r = await s.client.callTool({ name: 'mcp__remote__echo', arguments: { text: 'woken by auth --cluster' } });
    expect(r.isError, `${textOf(r)}\n${b.serve.stderr}`).toBeFalsy();
    expect(textOf(r)).toBe('woken by auth --cluster');
    expect(oauth.counts.authorization_code).toBe(grants + 1);
  }, 240_000);
});
