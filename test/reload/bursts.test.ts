/**
 * How bursts of saves fold (SPEC §3.2): a burst within the debounce is one
 * reconcile, and edits during a slow start or a slow reconcile converge on
 * the last one.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { pidAlive, waitFor } from '../helpers/processes.js';
import { basic, collect, Harness, quiet, reconciledAfter, row, slow, SLOW, toolsOf, waitReconciled, waitState } from './support.js';

const h = new Harness();
afterAll(() => h.cleanup());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('bursts and slow reconciles', () => {
  it('five saves within the 300 ms debounce make one reconcile that applies the last save', async () => {
    const { ws, c, rows: { a, b } } = await h.connected({ a: basic('1'), b: basic('1') });
    const reconciled = collect(c, 'reconciled');
    const before = c.reconciles;

    for (const v of ['2', '3', '4', '5', '6']) {
      ws.user({ a: basic(v), b: basic('1') });
      await sleep(10);
    }
    await waitReconciled(c, before, 'the burst to be reconciled');
    await waitFor(() => toolsOf(c, 'a').includes('mcp__a__v6_tool'), 'a to serve tools version 6', SLOW);
    await quiet();
    expect(c.reconciles).toBe(before + 1);
    expect(reconciled).toHaveLength(1);
    // One reconnect of a, straight to the last config; b untouched.
    expect(row(c, 'a')).toMatchObject({ state: 'connected', generation: a.generation + 1 });
    expect(row(c, 'b')).toMatchObject({ state: 'connected', pid: b.pid, generation: b.generation });
  });

  it('edits while a server is still starting converge on the last edit, with no stale process', async () => {
    const ws = h.workspace();
    ws.user({});
    const c = await h.start(ws);

    await reconciledAfter(c, 'the slow server to be reconciled', () => ws.user({ s: slow(10_000) }));
    await waitFor(() => row(c, 's')?.state === 'connecting', 's to be connecting', SLOW);
    await waitFor(() => c.pids().length === 1, 'the slow process to be spawned', SLOW);
    const firstPid = c.pids()[0]!;

    await reconciledAfter(c, 'the second edit to be reconciled', () => ws.user({ s: slow(10_000, { env: { START_DELAY_MS: '10000', EDIT: '2' } }) }));
    await reconciledAfter(c, 'the last edit to be reconciled', () => ws.user({ s: basic('9') }));

    const s = await waitState(c, 's', 'connected');
    expect(toolsOf(c, 's')).toContain('mcp__s__v9_tool');
    expect(toolsOf(c, 's')).not.toContain('mcp__s__ping');
    await waitFor(() => c.pids().length === 1 && !pidAlive(firstPid), 'the slow processes to be gone', SLOW);
    expect(c.pids()).toEqual([s.pid]);
  });

  it('saves that arrive during a slow reconcile are applied once more afterwards; the final state is the last save', async () => {
    const ws = h.workspace();
    ws.user({ a: basic('1') });
    let delayMs = 0;
    let inReconcile = false;
    const c = await h.start(ws, {
      // A slow trust check stands in for any slow part of a reconcile.
      isTrustedFolder: async () => {
        inReconcile = true;
        await sleep(delayMs);
        inReconcile = false;
        return true;
      },
    });
    await waitState(c, 'a', 'connected');
    delayMs = 1_000;
    const before = c.reconciles;

    ws.user({ a: basic('2') });
    await waitFor(() => inReconcile, 'the slow reconcile to start', SLOW);
    ws.user({ a: basic('3') });
    await sleep(50);
    ws.user({ a: basic('4') });
    expect(inReconcile).toBe(true);

    await waitFor(() => toolsOf(c, 'a').includes('mcp__a__v4_tool'), 'a to serve tools version 4', SLOW);
    delayMs = 0;
    await quiet();
    const tools = toolsOf(c, 'a');
    expect(tools).toContain('mcp__a__v4_tool');
    expect(tools.filter((t) => /v[123]_tool$/.test(t))).toEqual([]);
    expect(row(c, 'a')?.state).toBe('connected');
    // The run in progress applied the save it had read (v2), and one more run applied the rest.
    expect(c.reconciles).toBe(before + 2);
    expect(c.config().desired.a?.config.env).toEqual({ TOOLS_VERSION: '4' });
  });
});
