/**
 * The pool's reference counts, in-process with SDK clients (so server states
 * can be read from the controller): a server starts when the first session
 * whose scope includes it attaches, runs once however many sessions use it,
 * goes `dormant` after the idle timeout once the last of them left unless a
 * session takes it again first, and the approval gate and gating stand
 * before any of it. States and process counts are polled; nothing is timed.
 */
import { writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMcpController, type McpController } from '../../src/controller/controller.js';
import { GatewayPool } from '../../src/gateway/pool.js';
import { waitFor } from '../helpers/processes.js';
import { inProcessClient, textOf, Workspace } from './support.js';

type Connected = Awaited<ReturnType<typeof inProcessClient>>;

describe('gateway pool: one process per server, reference counted by sessions', () => {
  const ws = new Workspace();
  let controller: McpController;
  let pool: GatewayPool;
  const open: Connected[] = [];
  const stateOf = (name: string) => controller.status().find((r) => r.name === name)?.state;
  const pidOf = (name: string) => controller.status().find((r) => r.name === name)?.pid;
  const connect = async (...servers: string[]): Promise<Connected> => {
    const c = await inProcessClient(pool, new Set(servers));
    open.push(c);
    return c;
  };
  const serversListed = async (c: Connected) => [...new Set((await c.client.listTools()).tools.map((t) => t.name.split('__')[1]))].sort();

  beforeAll(async () => {
    writeFileSync(
      ws.userConfig,
      JSON.stringify({ mcpServers: { a: ws.server(), b: ws.server(), c: ws.server(), d: ws.server(), x: ws.server() }, mcp: { excluded: ['x'] } }),
    );
    // Project servers are gated: p stays pending, q gets rejected.
    ws.writeProject({ p: ws.server(), q: ws.server() });
    controller = createMcpController({
      cwd: ws.root,
      userConfigPath: ws.userConfig,
      approvals: ws.approvals,
      env: ws.env(),
      watch: false,
      listingCache: false,
      processStateFile: false,
      // What `serve` does, with a short idle timeout.
      onDemand: true,
      idleTimeoutMs: 200,
    });
    pool = new GatewayPool(controller);
    await pool.start();
    await controller.reject('q');
  });

  afterAll(async () => {
    for (const c of open) await c.close().catch(() => undefined);
    pool?.close();
    await controller?.dispose();
    expect(await ws.cleanup(), 'processes left behind').toBe(0);
  });

  it('starts no server before a session names it', () => {
    for (const name of ['a', 'b', 'c', 'd']) expect(stateOf(name)).toBe('dormant');
    expect([stateOf('p'), stateOf('q'), stateOf('x')]).toEqual(['pending_approval', 'rejected', 'excluded']);
    expect(ws.serverPids()).toEqual([]);
  });

  it('sessions {a,b} and {b,c} start three processes, one per server; d, which no session names, never starts', async () => {
    const s1 = await connect('a', 'b');
    const s2 = await connect('b', 'c');
    // A session's first list waits for the servers its attach started.
    expect(await serversListed(s1)).toEqual(['a', 'b']);
    expect(await serversListed(s2)).toEqual(['b', 'c']);
    expect([stateOf('a'), stateOf('b'), stateOf('c'), stateOf('d')]).toEqual(['connected', 'connected', 'connected', 'dormant']);
    expect(ws.serverPids().sort()).toEqual([pidOf('a'), pidOf('b'), pidOf('c')].sort());
    expect(pool.usage()).toMatchObject({ a: 1, b: 2, c: 1, d: 0 });
    // Both sessions reach b's one process.
    const [p1, p2] = await Promise.all([s1.client.callTool({ name: 'mcp__b__pid' }), s2.client.callTool({ name: 'mcp__b__pid' })]);
    expect(textOf(p1)).toBe(String(pidOf('b')));
    expect(textOf(p2)).toBe(textOf(p1));
  });

  it('when the last session using a leaves, a goes dormant after the idle timeout (tools kept); b and c stay', async () => {
    const [s1] = open;
    const [b, c] = [pidOf('b'), pidOf('c')];
    await s1!.close();
    await waitFor(() => stateOf('a') === 'dormant', 'a to go dormant');
    // Dormant at once; its process exits a moment later.
    await waitFor(() => ws.serverPids().length === 2, "a's process to exit");
    expect(ws.serverPids().sort()).toEqual([b, c].sort());
    expect([stateOf('b'), stateOf('c'), pidOf('b'), pidOf('c')]).toEqual(['connected', 'connected', b, c]);
    expect(controller.tools().some((t) => t.name === 'mcp__a__echo')).toBe(true);
    expect(pool.usage()).toMatchObject({ a: 0, b: 1, c: 1 });
  });

  it('a session that takes a server before its idle timeout ran out cancels the stop', async () => {
    const s3 = await connect('a');
    expect(await serversListed(s3)).toEqual(['a']);
    const a = pidOf('a');
    expect(a).toBeDefined();
    const aStates: string[] = [];
    const off = controller.on('server-state', (e) => e.name === 'a' && aStates.push(e.state));
    try {
      // In one tick: a is released, then b and c (the clock), then a is taken again.
      const s2 = open[1]!;
      s3.session.session.release();
      s2.session.session.release();
      const s4 = await connect('a');
      await Promise.all([s3.close(), s2.close()]);
      // b and c were released after a: once they are dormant, a's idle timeout has run out too.
      await waitFor(() => stateOf('b') === 'dormant' && stateOf('c') === 'dormant', 'b and c to go dormant');
      expect([stateOf('a'), pidOf('a')]).toEqual(['connected', a]);
      expect(aStates).toEqual([]);
      expect(textOf(await s4.client.callTool({ name: 'mcp__a__pid' }))).toBe(String(a));
      await waitFor(() => ws.serverPids().length === 1, "b's and c's processes to exit");
      expect(ws.serverPids()).toEqual([a]);
    } finally {
      off();
    }
  });

  it('pending, rejected and excluded servers a session takes never start; approving the pending one starts it for that session', async () => {
    const gated = await connect('p', 'q', 'x');
    const before = ws.serverPids();
    expect((await gated.client.listTools()).tools).toEqual([]);
    expect([stateOf('p'), stateOf('q'), stateOf('x')]).toEqual(['pending_approval', 'rejected', 'excluded']);
    const call = await gated.client.callTool({ name: 'mcp__p__echo', arguments: { text: 'x' } });
    expect(call.isError).toBe(true);
    expect(textOf(call)).toMatch(/"p" is waiting for your approval/);
    expect(ws.serverPids()).toEqual(before);
    expect([pidOf('p'), pidOf('q'), pidOf('x')]).toEqual([undefined, undefined, undefined]);

    await controller.approve('p');
    await waitFor(() => stateOf('p') === 'connected', 'the approved, held p to start');
    expect(textOf(await gated.client.callTool({ name: 'mcp__p__echo', arguments: { text: 'approved' } }))).toBe('approved');
    expect([stateOf('q'), stateOf('x')]).toEqual(['rejected', 'excluded']);
  });
});
