/**
 * docs/cluster-singletons.md: what a replica that does not hold a singleton's
 * lease forwards to the holder besides tool calls (prompts/get,
 * resources/read of listed URIs and templates, the lists from the listing
 * cache), on one session per caller that later requests reuse; replica
 * announcements signed with the cluster secret, so a forged one in Redis
 * redirects nothing; and what `status --cluster` says of them. Real
 * redis-server, real gateway processes.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createClient } from '@redis/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixturePath } from '../helpers/fixtures.js';
import { waitFor } from '../helpers/processes.js';
import { MARKER, textOf, type HttpConnected } from '../gateway/support.js';
import { leaseKey, leaseValue } from '../../src/cluster/lease.js';
import { ClusterFixture, type Replica } from './support.js';

const SECRET = 'clmisc-test-secret-0123456789abcdef-0123456789abcdef';
const env = { MCP_RECONCILER_CLUSTER_SECRET: SECRET };

interface StatusJson {
  replicas: { id: string; pid: number; url: string; reachUrl?: string; sessions: number; principals: Record<string, number>; announcement?: string }[];
  leases: { server: string; replica: string; token: number; pid?: number }[];
}

const median = (xs: number[]): number => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;

describe('serve --cluster: prompts and resources of a singleton, sessions to the holder, signed announcements', () => {
  const fx = new ClusterFixture();
  // The two replicas, started by the first test (or beforeAll) and used by the rest.
  let a: Replica, b: Replica;
  let onA: HttpConnected, onB: HttpConnected;
  let pidA = 0;
  let redis: ReturnType<typeof createClient>;
  const decoy = { server: undefined as Server | undefined, url: '', hits: 0 };

  const status = (extraEnv: NodeJS.ProcessEnv = env): Promise<StatusJson> => fx.statusJson<StatusJson>(extraEnv);
  const commandCount = async (): Promise<number> => {
    const info = await redis.info('commandstats');
    // The INFO command itself counts once per read: the same in every difference taken here.
    return [...info.matchAll(/calls=(\d+)/g)].reduce((n, m) => n + Number(m[1]), 0);
  };

  beforeAll(async () => {
    await fx.startRedis();
    fx.ws.writeUser({
      s: { ...fx.ws.server('1'), singleton: true },
      r: { command: process.execPath, args: [fixturePath('resource-server')], env: { [MARKER]: fx.ws.mark }, singleton: true },
    });
    redis = createClient({ socket: { path: fx.redis.socket, tls: false } });
    await redis.connect();
    decoy.server = createServer((req, res) => {
      decoy.hits++;
      res.writeHead(500).end();
    });
    await new Promise<void>((resolve) => decoy.server!.listen(0, '127.0.0.1', resolve));
    decoy.url = `http://127.0.0.1:${(decoy.server.address() as AddressInfo).port}/mcp`;
  }, 60_000);

  afterAll(async () => {
    await redis?.quit().catch(() => undefined);
    decoy.server?.closeAllConnections();
    await new Promise<void>((resolve) => (decoy.server ? decoy.server.close(() => resolve()) : resolve()));
    expect(await fx.stop()).toBe(0);
  });

  it('a non-holder lists the prompts and resources of a singleton and forwards prompts/get and resources/read to the holder', async () => {
    a = await fx.replica('a', [], env);
    b = await fx.replica('b', [], env);
    onA = await a.open('?servers=s,r');
    pidA = Number(textOf(await onA.client.callTool({ name: 'mcp__s__pid', arguments: {} })));
    const hello = (await onA.client.readResource({ uri: 'note://static/hello' })).contents[0] as { text: string };
    const instance = /^hello from (\d+)$/.exec(hello.text)?.[1];
    expect(instance, hello.text).toBeDefined();
    await a.serve.fromStderr(/(singleton "r": this replica holds the lease \(token \d+\))/, "A's lease of r", 60_000);
    await waitFor(async () => (await redis.keys(`mcpr:{${fx.workspaceId}}:listing:*`)).length >= 2, 'both listings in Redis', 60_000, 200);

    onB = await b.open('?servers=s,r');
    // The lists come from the listing cache's second level: nothing starts on B for them.
    const prompt = (await onB.client.listPrompts()).prompts.find((p) => p.name.endsWith('greet'));
    expect(prompt, 'the greet prompt listed on B').toBeDefined();
    expect((await onB.client.listResources()).resources.map((x) => x.uri)).toContain('note://static/hello');
    expect((await onB.client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate)).toContain('note://notes/{id}');
    // prompts/get and resources/read on B are answered by A's processes.
    const got = await onB.client.getPrompt({ name: prompt!.name, arguments: { who: 'B' } });
    expect((got.messages[0]!.content as { text: string }).text).toBe('Hello, B!');
    const viaB = (await onB.client.readResource({ uri: 'note://static/hello' })).contents[0] as { text: string };
    expect(viaB.text).toBe(`hello from ${instance}`);
    const note = (await onB.client.readResource({ uri: 'note://notes/7' })).contents[0] as { text: string };
    expect(note.text).toBe(`note 7 from ${instance}`);
    // A prompt the holder does not have is the holder's error, passed on (not a retry loop).
    await expect(onB.client.getPrompt({ name: prompt!.name.replace(/greet$/, 'nope'), arguments: {} })).rejects.toThrow(/nope/);
    expect(fx.ws.serverPids()).toEqual([pidA]);
    expect(b.serve.stderr).not.toMatch(/singleton "[rs]": this replica holds the lease/);
  }, 240_000);

  it('forwarded calls of one caller reuse one session to the holder and cost no Redis command each', async () => {
    // Warm up the forwarding session, then measure against calls straight to the holder, interleaved.
    expect(Number(textOf(await onB.client.callTool({ name: 'mcp__s__pid', arguments: {} })))).toBe(pidA);
    const took = { direct: [] as number[], forwarded: [] as number[] };
    for (let i = 0; i < 30; i++) {
      for (const [kind, via] of [['direct', onA], ['forwarded', onB]] as const) {
        const t0 = performance.now();
        await via.client.callTool({ name: 'mcp__s__echo', arguments: { text: 't' } });
        took[kind].push(performance.now() - t0);
      }
    }
    const N = 30;
    const before = await commandCount();
    const t0 = performance.now();
    for (let i = 0; i < N; i++) expect(textOf(await onB.client.callTool({ name: 'mcp__s__echo', arguments: { text: `n${i}` } }))).toBe(`n${i}`);
    const seconds = (performance.now() - t0) / 1000;
    const ops = (await commandCount()) - before - 1;
    console.log(
      `singleton forwarded call: p50 direct on the holder ${median(took.direct).toFixed(1)} ms, p50 forwarded ${median(took.forwarded).toFixed(1)} ms ` +
        `(ratio ${(median(took.forwarded) / median(took.direct)).toFixed(2)}, 30 each interleaved); Redis commands during ${N} forwarded calls: ${ops} ` +
        `(${(ops / N).toFixed(2)} per call, heartbeats and lease renewals of both replicas included, over ${seconds.toFixed(1)} s)`,
    );
    // The holder sees B's requests on one session of alice's per server: A announces its own session and
    // B's two (s's calls and prompt, r's reads), not one per request (those were closed after each).
    await waitFor(async () => (await status()).replicas.find((r) => r.pid === a.serve.child.pid)?.sessions === 3, "A's three sessions (its own and B's forwarding ones)", 30_000, 500);
    expect((await status()).replicas.find((r) => r.pid === a.serve.child.pid)!.principals).toEqual({ alice: 3 });
    // Per call a fresh session cost several commands (lease, announcement reads, the holder's gate and session announcements).
    expect(ops / N).toBeLessThan(3);
  }, 240_000);

  it('status --cluster: reach URLs, signed announcements checked with the secret, unsigned ones named', async () => {
    const st = await status();
    expect(st.replicas.map((r) => r.announcement)).toEqual(['verified', 'verified']);
    expect((await status({ MCP_RECONCILER_CLUSTER_SECRET: '' })).replicas.map((r) => r.announcement)).toEqual(['unchecked', 'unchecked']);
    const human = await fx.status([], env);
    expect(human.stdout).toMatch(/REPLICA +URL +REACH URL +HOST/);
    const idA = st.replicas.find((r) => r.pid === a.serve.child.pid)!.id;
    expect(human.stdout).toMatch(new RegExp(`${idA} +\\S+ +${a.url.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} `));
    expect(human.stdout).not.toMatch(/unsigned/);
    // A replica without the secret announces itself unsigned: it says so, and status names it.
    const c = await fx.replica('c', []);
    await c.serve.fromStderr(/(replica announcements are unsigned)/, "C's note", 60_000);
    let idC: string | undefined;
    await waitFor(async () => (idC = (await status()).replicas.find((r) => r.pid === c.serve.child.pid)?.id) !== undefined, "C's announcement", 30_000, 500);
    const again = await fx.status([], env);
    expect(again.stdout).toContain(`announcements: unsigned (${idC}: started without $MCP_RECONCILER_CLUSTER_SECRET)`);
    await c.serve.stop();
  }, 240_000);

  it('a forged announcement in Redis redirects nothing: the replicas ignore it, say so, and the calls are served once the forged leases expire', async () => {
    // Whoever can write to Redis but lacks the secret: a lease naming a replica of theirs, announced at their address.
    const fake = 'fa11fa11fa11';
    const bad = 'badbadbadbad';
    const announce = (id: string, extra: Record<string, unknown>) =>
      redis.set(`mcpr:{${fx.workspaceId}}:replica:${id}`, JSON.stringify({ id, url: decoy.url, reachUrl: decoy.url, host: 'x', pid: 1, sessions: 0, principals: {}, startedAt: new Date().toISOString(), at: new Date().toISOString(), ...extra }), { PX: 60_000 });
    await announce(fake, {});
    await announce(bad, { sig: 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' });
    await redis.sAdd(`mcpr:{${fx.workspaceId}}:replicas`, [fake, bad]);
    // A loses s and r at its next renewal (refused: another token holds them) and parks them; the leases last 12 s.
    // Signed with the secret, as a genuine holder's are (an unsigned lease is taken over at once: signed-leases.test.ts):
    // what is forged here is the announcement of the replica they name.
    const lease = (server: string, holder: string) => leaseValue(leaseKey(SECRET), `mcpr:{${fx.workspaceId}}:lease:${server}`, holder, 999);
    await redis.set(`mcpr:{${fx.workspaceId}}:lease:s`, lease('s', fake), { PX: 12_000 });
    await redis.set(`mcpr:{${fx.workspaceId}}:lease:r`, lease('r', bad), { PX: 12_000 });
    await a.serve.fromStderr(/(singleton "s": lease lost \(token \d+: another replica holds it now\))/, "A's lost lease of s", 30_000);
    await a.serve.fromStderr(/(singleton "r": lease lost \(token \d+: another replica holds it now\))/, "A's lost lease of r", 30_000);
    const pid = Number(textOf(await onB.client.callTool({ name: 'mcp__s__pid', arguments: {} })));
    expect(pid).toBeGreaterThan(0);
    const read = (await onB.client.readResource({ uri: 'note://static/hello' })).contents[0] as { text: string };
    expect(read.text).toMatch(/^hello from \d+$/);
    expect(decoy.hits).toBe(0);
    expect(b.serve.stderr).toContain(`ignoring replica ${fake}'s announcement in Redis: it is not signed`);
    expect(`${a.serve.stderr}${b.serve.stderr}`).toContain(`ignoring replica ${bad}'s announcement in Redis: its signature does not match the cluster secret`);
    const st = await status();
    expect(st.replicas.find((r) => r.id === fake)?.announcement).toBe('unsigned');
    expect(st.replicas.find((r) => r.id === bad)?.announcement).toBe('forged');
  }, 240_000);
});
