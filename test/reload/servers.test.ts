/**
 * Hot reload of the server map (SPEC §3.1, §3.2) with a real watcher, real
 * file writes and real fixture servers: add, remove, edit one server without
 * touching the others, and 0 → 1 → 0 servers.
 */
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { pidAlive, waitFor } from '../helpers/processes.js';
import { basic, collect, Harness, promptsOf, quiet, reconciledAfter, row, slow, SLOW, toolsOf, waitReconciled, waitState } from './support.js';

const h = new Harness();
afterAll(() => h.cleanup());

describe('hot reload of servers', () => {
  it('connects an added server; a removed one disconnects, loses its tools and prompts, and reads `removed`', async () => {
    const { ws, c, rows: { keep } } = await h.connected({ keep: basic('1') });

    await reconciledAfter(c, 'the add to be reconciled', () => ws.user({ keep: basic('1'), added: basic('7') }));
    const added = await waitState(c, 'added', 'connected');
    expect(toolsOf(c, 'added')).toContain('mcp__added__v7_tool');
    expect(promptsOf(c, 'added')).toEqual(['mcp__added__greet']);
    expect(pidAlive(added.pid!)).toBe(true);

    ws.user({ keep: basic('1') });
    await waitFor(() => c.unavailableReason('added') === 'removed', 'added to be removed', SLOW);
    await waitFor(() => !pidAlive(added.pid!), `the removed server's process ${added.pid} to exit`, SLOW);
    expect(toolsOf(c, 'added')).toEqual([]);
    expect(promptsOf(c, 'added')).toEqual([]);
    expect(row(c, 'added')).toMatchObject({ state: 'removed', reason: 'removed', tools: [], prompts: [], pid: undefined });
    expect(c.toolUnavailableMessage('mcp__added__echo')).toContain('added');
    // The other server was never touched.
    expect(row(c, 'keep')).toMatchObject({ state: 'connected', pid: keep.pid, generation: keep.generation });
  });

  it('an args edit reconnects only that server; the others keep their process and never lose a tool', async () => {
    const { ws, c, rows } = await h.connected({ a: basic('1'), b: basic('2'), c: basic('3') });
    const stable = { a: toolsOf(c, 'a'), c: toolsOf(c, 'c') };
    const changes = collect(c, 'tools-changed');

    // Sample the registry every few ms through the whole reload: the untouched servers' tools must always be there.
    const gaps: string[] = [];
    const sampler = setInterval(() => {
      const names = new Set(c.tools().map((t) => t.name));
      for (const t of [...stable.a, ...stable.c]) if (!names.has(t)) gaps.push(t);
    }, 3);
    try {
      await reconciledAfter(c, 'the args edit to be reconciled', () => ws.user({ a: basic('1'), b: basic('2', { args: [...(basic('2').args as string[]), '--edited'] }), c: basic('3') }));
      await waitFor(() => (row(c, 'b')?.generation ?? 0) > rows.b.generation && row(c, 'b')?.state === 'connected', 'b to reconnect', SLOW);
      await waitFor(() => toolsOf(c, 'b').length > 0, 'b to have tools again', SLOW);
    } finally {
      clearInterval(sampler);
    }

    const b = row(c, 'b')!;
    expect(b.pid).not.toBe(rows.b.pid);
    await waitFor(() => !pidAlive(rows.b.pid!), "b's old process to exit", SLOW);
    expect(gaps).toEqual([]);
    expect(row(c, 'a')).toMatchObject({ state: 'connected', pid: rows.a.pid, generation: rows.a.generation });
    expect(row(c, 'c')).toMatchObject({ state: 'connected', pid: rows.c.pid, generation: rows.c.generation });
    expect(pidAlive(rows.a.pid!)).toBe(true);
    expect(pidAlive(rows.c.pid!)).toBe(true);
    expect(toolsOf(c, 'a')).toEqual(stable.a);
    expect(toolsOf(c, 'c')).toEqual(stable.c);
    // Only b's tools ever moved.
    expect(changes.map((e) => e.server).filter((s) => s !== 'b')).toEqual([]);
    expect(changes.some((e) => e.server === 'b')).toBe(true);
  });

  it('0 → 1 → 0 servers leaves no process and no tool behind', async () => {
    const ws = h.workspace();
    ws.user({});
    const c = await h.start(ws);
    expect(c.status()).toEqual([]);
    expect(c.tools()).toEqual([]);

    await reconciledAfter(c, 'the first server to be reconciled', () => ws.user({ only: basic('4') }));
    const only = await waitState(c, 'only', 'connected');
    expect(c.pids()).toEqual([only.pid]);

    await reconciledAfter(c, 'the removal to be reconciled', () => ws.user({}));
    await waitFor(() => c.pids().length === 0 && !pidAlive(only.pid!), 'the last server process to exit', SLOW);
    expect(c.tools()).toEqual([]);
    expect(c.prompts()).toEqual([]);
    expect(c.status().filter((r) => r.state !== 'removed')).toEqual([]);
    expect(c.unavailableReason('only')).toBe('removed');
  });

  it('deleting the only config file and creating it again counts as a change', async () => {
    const { ws, c, rows: { x } } = await h.connected({ x: basic('5') });

    rmSync(ws.userFile);
    await waitFor(() => c.unavailableReason('x') === 'removed', 'x to be removed after the file was deleted', SLOW);
    await waitFor(() => !pidAlive(x.pid!), "x's process to exit", SLOW);
    expect(c.tools()).toEqual([]);

    ws.user({ x: basic('5') });
    const again = await waitState(c, 'x', 'connected');
    expect(again.pid).not.toBe(x.pid);
    expect(toolsOf(c, 'x')).toContain('mcp__x__v5_tool');
  });

  it('an editor-style atomic save (write a temp file, rename it over) is picked up', async () => {
    const { ws, c } = await h.connected({ x: basic('1') });

    const before = c.reconciles;
    const tmp = `${ws.userFile}.tmp-${process.pid}`;
    writeFileSync(tmp, JSON.stringify({ mcpServers: { x: basic('2') } }));
    renameSync(tmp, ws.userFile);
    await waitReconciled(c, before, 'the atomic save to be reconciled');
    await waitFor(() => toolsOf(c, 'x').includes('mcp__x__v2_tool'), 'x to serve tools version 2', SLOW);
    expect(row(c, 'x')?.state).toBe('connected');
  });

  it('a save that lands during the first read, before the watches are in place, is applied by start() itself', async () => {
    const ws = h.workspace();
    ws.user({ a: basic('1') });
    // A debounce no test waits out: only start()'s own second read can apply the save in time.
    const c = h.create(ws, { debounceMs: 600_000 });
    let saved = false;
    c.on('reconciled', () => {
      if (saved) return;
      saved = true;
      ws.user({ a: basic('1'), b: basic('2') });
    });
    await c.start();
    expect(saved).toBe(true);
    await waitState(c, 'b', 'connected');
    expect(toolsOf(c, 'b')).toContain('mcp__b__v2_tool');
    expect(c.reconciles).toBe(2);
  });

  it('dispose stops watching: after it, even during start, an edit starts nothing', async () => {
    const { ws, c: running, rows: { x } } = await h.connected({ x: basic('1') });
    const early = h.create(ws);
    const starting = early.start();
    await Promise.all([early.dispose(), running.dispose()]);
    await starting;
    await waitFor(() => !pidAlive(x.pid!), "x's process to exit", SLOW);

    const counts = [running.reconciles, early.reconciles];
    ws.user({ x: basic('2'), y: basic('3') });
    await quiet();
    expect([running.reconciles, early.reconciles]).toEqual(counts);
    expect([...running.pids(), ...early.pids()]).toEqual([]);
    expect([...running.status(), ...early.status()].filter((r) => r.pid !== undefined)).toEqual([]);
  });

  it('dispose while start() waits for a slow server releases start() and kills the server', async () => {
    const ws = h.workspace();
    ws.user({ sloth: slow(60_000) });
    // Far beyond the test timeout: only dispose can end this start().
    const c = h.create(ws, { readyTimeoutMs: 600_000 });
    const starting = c.start();
    await waitFor(() => c.pids().length === 1, 'the slow server to be spawned', SLOW);
    const [pid] = c.pids();
    await c.dispose();
    await starting;
    await waitFor(() => !pidAlive(pid!), 'the slow server to exit', SLOW);
    expect(c.pids()).toEqual([]);
  });
});

