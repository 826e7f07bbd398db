/**
 * Hot reload meets the approval gate (SPEC §4): prompts come from the store's
 * strict `pending` after each reconcile, decisions are bound to the config
 * hash and survive removal and re-adding, and nothing reload does starts a
 * gated server that is not approved or sits in an untrusted folder.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { McpController } from '../../src/controller/controller.js';
import { pidAlive, waitFor } from '../helpers/processes.js';
import { basic, collect, Harness, quiet, reconciledAfter, row, SLOW, toolsOf, waitState } from './support.js';

const h = new Harness();
afterAll(() => h.cleanup());

const STARTED = new Set(['connecting', 'connected']);

/** Wait until `name` waits for approval and its earlier process `pid` has exited. */
async function waitPendingStopped(c: McpController, name: string, pid: number): Promise<void> {
  await waitFor(() => row(c, name)?.state === 'pending_approval', `${name} to wait for approval`, SLOW);
  await waitFor(() => !pidAlive(pid), `${name}'s process ${pid} to exit`, SLOW);
}

describe('approvals through hot reload', () => {
  it('a rejected server is not prompted on an unrelated edit, and is prompted again once its config is edited', async () => {
    const ws = h.workspace();
    ws.project({ p: basic('1') });
    ws.user({});
    const c = await h.start(ws);
    expect(row(c, 'p')?.state).toBe('pending_approval');
    await c.reject('p');
    await waitFor(() => row(c, 'p')?.state === 'rejected', 'p to be rejected', SLOW);
    const prompts = collect(c, 'pending-approval');
    const states = collect(c, 'server-state');

    // Unrelated edit: a user server is added.
    await reconciledAfter(c, 'the unrelated edit to be reconciled', () => ws.user({ u: basic('2') }));
    await waitState(c, 'u', 'connected');
    await quiet();
    expect(prompts.filter((e) => e.servers.includes('p'))).toEqual([]);
    expect(row(c, 'p')?.state).toBe('rejected');

    // p's own config changes: a new hash, so the old rejection no longer applies.
    await reconciledAfter(c, "the edit of p's config to be reconciled", () => ws.project({ p: basic('3') }));
    await waitFor(() => prompts.some((e) => e.servers.includes('p')), 'a pending-approval naming p', SLOW);
    expect(row(c, 'p')).toMatchObject({ state: 'pending_approval', reason: 'pending_approval', pid: undefined, tools: [] });
    expect(states.filter((e) => e.name === 'p' && STARTED.has(e.state))).toEqual([]);
  });

  it('an approved server whose config is edited goes back to pending: its process stops and its tools go', async () => {
    const ws = h.workspace();
    ws.project({ p: basic('1') });
    ws.user({});
    const c = await h.start(ws);
    await c.approve('p');
    const p = await waitState(c, 'p', 'connected');
    const prompts = collect(c, 'pending-approval');

    await reconciledAfter(c, 'the edit to be reconciled', () => ws.project({ p: basic('2') }));
    await waitPendingStopped(c, 'p', p.pid!);
    expect(toolsOf(c, 'p')).toEqual([]);
    expect(prompts.some((e) => e.servers.includes('p'))).toBe(true);
  });

  it("an approved server's identical re-add reconnects silently", async () => {
    const ws = h.workspace();
    ws.project({ p: basic('1'), q: basic('2') });
    ws.user({});
    const c = await h.start(ws);
    await c.approve('p');
    const first = await waitState(c, 'p', 'connected');
    expect(row(c, 'q')?.state).toBe('pending_approval');
    const prompts = collect(c, 'pending-approval');
    const states = collect(c, 'server-state');

    await reconciledAfter(c, 'the removal of p to be reconciled', () => ws.project({ q: basic('2') }));
    await waitFor(() => c.unavailableReason('p') === 'removed' && !pidAlive(first.pid!), 'p to be removed and its process gone', SLOW);
    expect(toolsOf(c, 'p')).toEqual([]);

    await reconciledAfter(c, 'the re-add of p to be reconciled', () => ws.project({ p: basic('1'), q: basic('2') }));
    const again = await waitState(c, 'p', 'connected');
    expect(again.pid).not.toBe(first.pid);
    expect(toolsOf(c, 'p')).toContain('mcp__p__v1_tool');
    // Never asked about p, never waited for approval; q (still pending) may be asked about.
    expect(prompts.filter((e) => e.servers.includes('p'))).toEqual([]);
    expect(states.filter((e) => e.name === 'p' && e.state === 'pending_approval')).toEqual([]);
    expect(row(c, 'q')?.state).toBe('pending_approval');
  });

  it('a session-only approval also survives an identical re-add for the controller’s life', async () => {
    const ws = h.workspace();
    ws.project({ p: basic('1') });
    ws.user({});
    const c = await h.start(ws);
    await c.approve('p', { persist: false });
    const first = await waitState(c, 'p', 'connected');
    const prompts = collect(c, 'pending-approval');

    await reconciledAfter(c, 'the removal of p to be reconciled', () => ws.project({}));
    await waitFor(() => !pidAlive(first.pid!), "p's process to exit", SLOW);
    await reconciledAfter(c, 'the re-add of p to be reconciled', () => ws.project({ p: basic('1') }));
    await waitState(c, 'p', 'connected');
    expect(prompts).toEqual([]);
  });

  it('an untrusted folder connects nothing gated, approved or not, through any edit', async () => {
    const ws = h.workspace();
    ws.project({ p: basic('1') });
    ws.user({ u: basic('2') });
    const c = await h.start(ws, { isTrustedFolder: () => false });
    await waitState(c, 'u', 'connected');
    expect(row(c, 'p')?.state).toBe('untrusted');
    const states = collect(c, 'server-state');
    const prompts = collect(c, 'pending-approval');

    await c.approve('p');
    await reconciledAfter(c, 'the new gated server to be reconciled', () => ws.project({ p: basic('1'), w: basic('3') }));
    await reconciledAfter(c, 'the workspace file to be reconciled', () => ws.write(ws.settingsFile, { mcpServers: { y: basic('4') } }));
    await quiet();

    for (const name of ['p', 'w', 'y']) expect(row(c, name)).toMatchObject({ state: 'untrusted', reason: 'untrusted', pid: undefined, tools: [] });
    expect(states.filter((e) => e.name !== 'u' && STARTED.has(e.state))).toEqual([]);
    expect(prompts).toEqual([]);
    expect(c.pids()).toEqual([row(c, 'u')!.pid]);
    expect(c.tools().every((t) => t.server === 'u')).toBe(true);
  });

  it('a user server shadowed by an identical project entry needs approval before it runs again', async () => {
    const ws = h.workspace();
    ws.user({ a: basic('1') });
    ws.project({});
    const c = await h.start(ws);
    const a = await waitState(c, 'a', 'connected');
    const prompts = collect(c, 'pending-approval');

    // Same name, same config, but now from the checked-in (gated) file: the project entry wins whole.
    await reconciledAfter(c, 'the project entry to be reconciled', () => ws.project({ a: basic('1') }));
    await waitPendingStopped(c, 'a', a.pid!);
    expect(row(c, 'a')).toMatchObject({ scope: 'project', source: ws.projectFile, tools: [], pid: undefined });
    expect(prompts.some((e) => e.servers.includes('a'))).toBe(true);

    await c.approve('a');
    const again = await waitState(c, 'a', 'connected');
    expect(again.scope).toBe('project');
  });

  it('a corrupt approvals file fails closed and is reported once, not on every save', async () => {
    const ws = h.workspace();
    ws.project({ p: basic('1') });
    ws.user({ u: basic('2') }, { theme: 'dark' });
    ws.write(ws.approvalsFile, '{ not json');
    const c = h.create(ws);
    const errors = collect(c, 'config-error');
    await c.start();
    await waitState(c, 'u', 'connected');
    expect(row(c, 'p')?.state).toBe('pending_approval');
    expect(errors).toHaveLength(1);
    expect(errors[0]!.issues[0]!.file).toBe(ws.approvalsFile);

    // Saves that reload the config (one changes nothing, one adds a server) do not repeat the report.
    ws.user({ u: basic('2') }, { theme: 'light' });
    await quiet();
    await reconciledAfter(c, 'the added server to be reconciled', () => ws.user({ u: basic('2'), v: basic('3') }, { theme: 'light' }));
    await waitState(c, 'v', 'connected');
    expect(errors).toHaveLength(1);
    expect(row(c, 'p')).toMatchObject({ state: 'pending_approval', pid: undefined });
  });
});

