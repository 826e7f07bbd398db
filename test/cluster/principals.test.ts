/**
 * docs/cluster-principals.md: a managed server marked
 * `"oauth": { "perPrincipal": true }` is signed in to by each principal of a
 * clustered gateway as itself. Its credentials live under that principal's
 * own sealed key, its connection is that principal's controller's, and a
 * session of another principal (on the same replica) never sees or uses
 * them; a server without the mark still uses the gateway's one sign-in. The
 * "browser" is fetch, and it tells the loopback authorization server who
 * signs in (`user=`), so the protected server reports whose token each call
 * carried.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitationCompleteNotificationSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { startOAuthFixture, type OAuthFixture } from '../fixtures/oauth-fixture.js';
import { textOf, type HttpConnected } from '../gateway/support.js';
import { waitFor } from '../helpers/processes.js';
import { runCliCaptured } from '../helpers/cli.js';
import { authorizeAt, ClusterFixture, deliver, signInFromTerminal, signInUrl, type Replica } from './support.js';

const SECRET = 'p'.repeat(48);

/** Keys of Redis matching `pattern`, from the raw RESP answer. */
async function keys(fx: ClusterFixture, pattern: string): Promise<string[]> {
  const raw = await fx.redis.command(['KEYS', pattern]);
  return [...raw.matchAll(/\$\d+\r\n([^\r]*)\r\n/g)].map((m) => m[1]!).sort();
}

const hash = (text: string): string => createHash('sha256').update(text).digest('hex').slice(0, 32);

describe('serve --cluster: oauth.perPrincipal, each principal signs in as itself', () => {
  const fx = new ClusterFixture();
  let personal: OAuthFixture;
  let team: OAuthFixture;
  // The two replicas, started by the first test (or beforeAll) and used by the rest.
  let a: Replica, b: Replica;
  const clients: Array<Client | ClientV2> = [];

  /** A session of `sub` on `replica` whose client takes URL elicitations; the URLs it was sent. */
  async function openWithUrlElicitation(replica: Replica, sub: string, query: string): Promise<{ client: Client; urls: string[]; ids: string[]; completed: string[] }> {
    const transport = new StreamableHTTPClientTransport(new URL(`${replica.url}${query}`), { requestInit: { headers: { authorization: `Bearer ${await fx.idp.token(sub)}` } } });
    const client = new Client({ name: 'principal-test', version: '1.0.0' }, { capabilities: { elicitation: { url: {} } } });
    const urls: string[] = [];
    const ids: string[] = [];
    const completed: string[] = [];
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      if (request.params.mode === 'url') {
        urls.push(request.params.url);
        ids.push(request.params.elicitationId);
      }
      return { action: 'accept' };
    });
    client.setNotificationHandler(ElicitationCompleteNotificationSchema, (n) => void completed.push(n.params.elicitationId));
    await client.connect(transport);
    clients.push(client);
    return { client, urls, ids, completed };
  }

  beforeAll(async () => {
    await fx.startRedis();
    personal = await startOAuthFixture();
    team = await startOAuthFixture();
    fx.ws.writeUser({ personal: { type: 'http', url: personal.url, oauth: { perPrincipal: true } }, team: { type: 'http', url: team.url } });
    a = await fx.replica('a', [], { MCP_RECONCILER_CLUSTER_SECRET: SECRET });
    b = await fx.replica('b', [], { MCP_RECONCILER_CLUSTER_SECRET: SECRET });
  }, 180_000);

  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    const left = await fx.stop();
    await personal?.close();
    await team?.close();
    expect(left).toBe(0);
  });

  it('alice signs in (callback on the other replica) and calls with her token; bob, on the same replica, needs his own sign-in and never gets hers', async () => {
    const alice = `p-${hash(`${fx.idp.issuer} alice`)}`;
    const bob = `p-${hash(`${fx.idp.issuer} bob`)}`;

    // Alice's client takes URL elicitations: the sign-in URL is sent to her session (and logged).
    const s = await openWithUrlElicitation(a, 'alice', '?servers=personal');
    const logged = await signInUrl(a, 'personal', { principal: alice });
    await waitFor(() => s.urls.length > 0, 'alice\'s session to be sent the sign-in URL', 90_000);
    expect(s.urls[0]).toBe(logged.href);

    // She signs in; the browser comes back to B, which has no session of hers.
    const page = await deliver(await authorizeAt(logged, 'alice'), b);
    expect(page.body).toContain('Signed in');
    expect(page.status).toBe(200);
    await waitFor(async () => (await s.client.listTools()).tools.some((t) => t.name === 'mcp__personal__echo'), 'alice to list mcp__personal__echo', 90_000);
    expect(textOf(await s.client.callTool({ name: 'mcp__personal__echo', arguments: { text: 'from alice' } }))).toBe('from alice');
    expect(personal.calls.map((c) => c.user)).toEqual(['alice']);
    // The client that was sent the URL is told the sign-in is complete.
    await waitFor(() => s.completed.length > 0, 'alice\'s session to be told the sign-in is complete', 60_000);
    expect(s.completed).toEqual(s.ids);

    // Her credentials are hers: under her key only, sealed.
    const credKeys = await keys(fx, `mcpr:{${fx.workspaceId}}:cred:*`);
    expect(credKeys).toContain(`mcpr:{${fx.workspaceId}}:cred:${alice}:${hash(personal.url)}`);
    expect(credKeys.some((k) => k.includes(`:cred:gateway:${hash(personal.url)}`))).toBe(false);

    // Bob on the same replica: the server needs his own sign-in; its tools are not his, his calls do not reach it.
    const bobSession: HttpConnected = await a.open('?servers=personal', await fx.idp.token('bob'));
    const bobUrl = await signInUrl(a, 'personal', { principal: bob });
    expect(bobUrl.searchParams.get('state')).not.toBe(logged.searchParams.get('state'));
    expect((await bobSession.client.listTools()).tools.map((t) => t.name)).not.toContain('mcp__personal__echo');
    const refused = await bobSession.client.callTool({ name: 'mcp__personal__echo', arguments: { text: 'from bob' } });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toContain('"personal"');
    expect(personal.calls.map((c) => c.user)).toEqual(['alice']);

    // `status --cluster` lists each principal's controller on replica A by key (never the sub), with its servers' states.
    type Listed = { replicas: Array<{ url: string; controllers?: Record<string, { sessions: number; servers: Record<string, string> }> }> };
    const controllersOnA = async () => (await fx.statusJson<Listed>()).replicas.find((r) => r.url === a.url)?.controllers ?? {};
    await waitFor(async () => (await controllersOnA())[bob]?.servers.personal === 'needs_auth', 'status --cluster to show bob\'s personal server needing his sign-in', 30_000);
    expect((await controllersOnA())[alice]).toEqual({ sessions: 1, servers: { personal: 'connected' } });
    const human = await fx.status();
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(new RegExp(`${alice}\\s+\\S+\\s+1\\s+personal\\s+connected`));
    expect(human.stdout).toMatch(new RegExp(`${bob}\\s+\\S+\\s+1\\s+personal\\s+needs_auth`));

    // Bob signs in (the callback on A this time): his calls carry his token, alice's still hers.
    expect((await deliver(await authorizeAt(bobUrl, 'bob'), a)).status).toBe(200);
    await waitFor(async () => (await bobSession.client.listTools()).tools.some((t) => t.name === 'mcp__personal__echo'), 'bob to list mcp__personal__echo', 90_000);
    expect(textOf(await bobSession.client.callTool({ name: 'mcp__personal__echo', arguments: { text: 'from bob' } }))).toBe('from bob');
    expect(textOf(await s.client.callTool({ name: 'mcp__personal__echo', arguments: { text: 'alice again' } }))).toBe('alice again');
    expect(personal.calls.map((c) => c.user)).toEqual(['alice', 'bob', 'alice']);
    expect(personal.calls[1]!.token).not.toBe(personal.calls[0]!.token);
    expect(personal.calls[2]!.token).toBe(personal.calls[0]!.token);

    // Two principals, two keys (and no gateway credentials for this server).
    const after = (await keys(fx, `mcpr:{${fx.workspaceId}}:cred:*:${hash(personal.url)}`)).filter((k) => !k.endsWith(':index'));
    expect(after).toEqual([`mcpr:{${fx.workspaceId}}:cred:${alice}:${hash(personal.url)}`, `mcpr:{${fx.workspaceId}}:cred:${bob}:${hash(personal.url)}`].sort());
  }, 400_000);

  it('a server without perPrincipal still uses the gateway\'s one sign-in for every principal, beside a per-principal one', async () => {
    const carol = `p-${hash(`${fx.idp.issuer} carol`)}`;
    const s = await a.open('?servers=team,personal', await fx.idp.token('carol'));
    const url = await signInUrl(a, 'team');
    // The per-principal server in the same session waits for carol's own sign-in.
    await signInUrl(a, 'personal', { principal: carol });
    expect((await deliver(await authorizeAt(url, 'the-gateway'), b)).status).toBe(200);
    await waitFor(async () => (await s.client.listTools()).tools.some((t) => t.name === 'mcp__team__echo'), 'carol to list mcp__team__echo', 90_000);
    expect(textOf(await s.client.callTool({ name: 'mcp__team__echo', arguments: { text: 'carol' } }))).toBe('carol');
    expect((await s.client.listTools()).tools.map((t) => t.name)).not.toContain('mcp__personal__echo');
    const dave = await b.open('?servers=team', await fx.idp.token('dave'));
    await waitFor(async () => (await dave.client.listTools()).tools.some((t) => t.name === 'mcp__team__echo'), 'dave to list mcp__team__echo', 90_000);
    expect(textOf(await dave.client.callTool({ name: 'mcp__team__echo', arguments: { text: 'dave' } }))).toBe('dave');
    expect(team.calls.map((c) => c.user)).toEqual(['the-gateway', 'the-gateway']);
    expect(await keys(fx, `mcpr:{${fx.workspaceId}}:cred:*:${hash(team.url)}`)).toEqual([`mcpr:{${fx.workspaceId}}:cred:gateway:${hash(team.url)}`]);
  }, 400_000);

  it('on the stateless 2026-07-28 lane too, each principal calls through its own credentials, on the same replica and scope', async () => {
    const before = personal.calls.length;
    /** A 2026-07-28 client of `sub` on B, scoped to the per-principal server. */
    const open = async (sub: string): Promise<ClientV2> => {
      const client = new ClientV2({ name: 'principal-test-2026', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
      clients.push(client);
      await client.connect(new HttpV2(new URL(`${b.url}?servers=personal`), { requestInit: { headers: { authorization: `Bearer ${await fx.idp.token(sub)}` } } }), { timeout: 60_000 });
      return client;
    };
    for (const sub of ['bob', 'alice']) {
      const client = await open(sub);
      await waitFor(async () => (await client.listTools()).tools.some((t) => t.name === 'mcp__personal__echo'), `${sub} to list mcp__personal__echo on the 2026-07-28 lane`, 90_000);
      expect(textOf(await client.callTool({ name: 'mcp__personal__echo', arguments: { text: sub } }))).toBe(sub);
    }
    expect(personal.calls.slice(before).map((c) => c.user)).toEqual(['bob', 'alice']);
    // Carol never signed in to it: her lane of the same scope lists none of its tools, and her call reaches nothing.
    const carol = await open('carol');
    expect((await carol.listTools()).tools.map((t) => t.name)).not.toContain('mcp__personal__echo');
    const refused = await carol.callTool({ name: 'mcp__personal__echo', arguments: { text: 'carol' } });
    expect(refused.isError).toBe(true);
    expect(personal.calls.slice(before).map((c) => c.user)).toEqual(['bob', 'alice']);
  }, 400_000);

  it('search_tools (serve --tools search) ranks the principal\'s own tools with the pool\'s, and call_tool reaches hers with her credentials', async () => {
    // A third replica that offers only the search pair; alice's and the gateway's sign-ins are in Redis already.
    const c = await fx.replica('c', ['--tools', 'search'], { MCP_RECONCILER_CLUSTER_SECRET: SECRET });
    const s = await c.open('?servers=team,personal', await fx.idp.token('alice'));
    const search = async (): Promise<string[]> => {
      const r = await s.client.callTool({ name: 'search_tools', arguments: { query: 'echoes text back', limit: 10 } });
      return ((r.structuredContent as { tools?: { name: string }[] } | undefined)?.tools ?? []).map((t) => t.name);
    };
    // Both servers come up on C without a browser; until then a search finds what is connected.
    const both = (names: string[]): boolean => names.includes('mcp__personal__echo') && names.includes('mcp__team__echo');
    await waitFor(async () => both(await search()), 'alice\'s search to find both echo tools', 90_000);
    const found = await search();
    expect(found).toEqual(expect.arrayContaining(['mcp__personal__echo', 'mcp__team__echo']));
    expect(found.length).toBeLessThanOrEqual(10);
    // What a search found joins her list, the per-principal server's tool included.
    expect((await s.client.listTools()).tools.map((t) => t.name)).toEqual(expect.arrayContaining(['search_tools', 'call_tool', 'mcp__personal__echo', 'mcp__team__echo']));
    const before = personal.calls.length;
    expect(textOf(await s.client.callTool({ name: 'call_tool', arguments: { name: 'mcp__personal__echo', arguments: { text: 'found it' } } }))).toBe('found it');
    expect(personal.calls.slice(before).map((x) => x.user)).toEqual(['alice']);
  }, 400_000);

  it('auth --principal signs a principal in from a terminal; logout --principal removes that principal\'s credentials only; the errors', async () => {
    const carol = `p-${hash(`${fx.idp.issuer} carol`)}`;
    const alice = `p-${hash(`${fx.idp.issuer} alice`)}`;
    const withSecret = { MCP_RECONCILER_CLUSTER_SECRET: SECRET };
    const cli = (argv: string[], env: NodeJS.ProcessEnv = withSecret) => runCliCaptured([...argv, ...fx.ws.args()], { ...fx.ws.env(), ...env }, fx.ws.root);

    const noCluster = await cli(['logout', 'personal', '--principal', carol]);
    expect(noCluster.code).toBe(2);
    expect(noCluster.stderr).toContain('--principal applies to --cluster only');
    const notAKey = await cli(['auth', 'personal', ...fx.clusterArgs(), '--principal', 'carol']);
    expect(notAKey.code).toBe(2);
    expect(notAKey.stderr).toContain('--principal takes a principal\'s key (p- and 32 hex digits), got "carol"');
    expect(notAKey.stderr).toContain('status --cluster');
    const shared = await cli(['auth', 'team', ...fx.clusterArgs(), '--principal', carol]);
    expect(shared.code).toBe(2);
    expect(shared.stderr).toContain('"team" is not signed in to per principal');

    // Carol never signed in to her per-principal server (the tests above); a terminal does it for her key.
    const s = await a.open('?servers=personal', await fx.idp.token('carol'));
    expect((await s.client.listTools()).tools.map((t) => t.name)).not.toContain('mcp__personal__echo');
    const out = await signInFromTerminal(fx, 'personal', withSecret, ['--principal', carol], 'carol');
    expect(out).toContain(`tokens stored in cluster workspace ${fx.workspaceId} (Redis at ${fx.redis.socket}, sealed) for principal ${carol}`);
    expect(await keys(fx, `mcpr:{${fx.workspaceId}}:cred:${carol}:${hash(personal.url)}`)).toHaveLength(1);
    // Her controller on A picks the tokens up: the sign-in it was waiting for is moot, and ending it leaves the new tokens alone.
    await waitFor(async () => (await s.client.listTools()).tools.some((t) => t.name === 'mcp__personal__echo'), 'carol to list mcp__personal__echo', 90_000);
    const before = personal.calls.length;
    expect(textOf(await s.client.callTool({ name: 'mcp__personal__echo', arguments: { text: 'carol at last' } }))).toBe('carol at last');
    expect(personal.calls.slice(before).map((c) => c.user)).toEqual(['carol']);

    const gone = await cli(['logout', 'personal', ...fx.clusterArgs(), '--principal', carol, '--json']);
    expect(gone.code, gone.stderr).toBe(0);
    expect(JSON.parse(gone.stdout)).toEqual({ server: 'personal', removed: true, workspaceId: fx.workspaceId, principal: carol });
    expect(await keys(fx, `mcpr:{${fx.workspaceId}}:cred:${carol}:${hash(personal.url)}`)).toEqual([]);
    expect(await keys(fx, `mcpr:{${fx.workspaceId}}:cred:${alice}:${hash(personal.url)}`)).toHaveLength(1);
  }, 400_000);
});
