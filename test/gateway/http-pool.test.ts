/**
 * `serve --http --idle-timeout 200` with SDK clients: the shared pool's
 * reference counts seen from outside, as server processes. A server starts
 * with the first session whose scope includes it, one process serves every
 * session, and it stops after the idle timeout once its last session closed
 * while the servers other sessions use keep theirs. Processes are polled.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/processes.js';
import { HttpServe, textOf, type HttpConnected } from './support.js';

describe('serve --http: servers reference counted by sessions', () => {
  const gw = new HttpServe();
  const { ws } = gw;
  const pids = new Map<string, number>();
  /** The sessions of the first test: {a, b} and {b, c}. */
  let ab: HttpConnected;
  let bc: HttpConnected;
  const pidVia = async (s: HttpConnected, server: string) => Number(textOf(await s.client.callTool({ name: `mcp__${server}__pid` })));

  beforeAll(async () => {
    ws.writeUser({ a: ws.server('1'), b: ws.server('1'), c: ws.server('1'), d: ws.server('1') });
    await gw.start(['--idle-timeout', '200']);
  });

  afterAll(async () => {
    const { code, stderr, left } = await gw.stop();
    expect(left, 'processes left behind').toBe(0);
    expect(code, stderr).toBe(0);
  });

  it('starts nothing before a session; sessions {a,b} and {b,c} start three processes; d never starts', async () => {
    await gw.serve!.fromStderr(/(not running until a session uses them: a, b, c, d)/, 'the ready line');
    expect(ws.serverPids()).toEqual([]);
    [ab, bc] = await Promise.all([gw.open('?servers=a,b'), gw.open('?servers=b,c')]);
    for (const [s, server] of [[ab, 'a'], [ab, 'b'], [bc, 'c']] as const) pids.set(server, await pidVia(s, server));
    expect(await pidVia(bc, 'b')).toBe(pids.get('b'));
    expect(ws.serverPids().sort()).toEqual([...pids.values()].sort());
  });

  it('closing {a,b} stops a after the idle timeout; b and c keep their processes', async () => {
    await ab.transport.terminateSession();
    await ab.client.close();
    await waitFor(() => !ws.serverPids().includes(pids.get('a')!), 'a to stop');
    expect(ws.serverPids().sort()).toEqual([pids.get('b'), pids.get('c')].sort());
    expect(await pidVia(bc, 'b')).toBe(pids.get('b'));
  });

  it('a new session for a starts it again, as a new process', async () => {
    const again = await gw.open('?servers=a');
    const a = await pidVia(again, 'a');
    expect(a).not.toBe(pids.get('a'));
    expect(ws.serverPids().sort()).toEqual([a, pids.get('b'), pids.get('c')].sort());
  });
});
