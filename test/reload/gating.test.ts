/**
 * Hot reload of the gating settings (SPEC §2.3, §3.1): editing only
 * `mcp.excluded` / `mcp.allowed` re-runs admission without touching the
 * servers it does not concern, and the host's CLI bound holds through every
 * settings edit.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { McpController } from '../../src/controller/controller.js';
import { pidAlive, waitFor } from '../helpers/processes.js';
import { basic, collect, Harness, reconciledAfter, row, SLOW, toolsOf, waitState, type Workspace } from './support.js';

const h = new Harness();
afterAll(() => h.cleanup());

/** Write the workspace settings file with only these `mcp` settings (no servers), and wait for the reconcile. */
async function settings(c: McpController, ws: Workspace, mcp: Record<string, unknown> | undefined): Promise<void> {
  await reconciledAfter(c, `the settings edit ${JSON.stringify(mcp)} to be reconciled`, () =>
    ws.write(ws.settingsFile, mcp === undefined ? { theme: 'dark' } : { theme: 'dark', mcp }),
  );
}

/** Wait until `name` is stopped for `reason`, its process is gone and it has no tool. */
async function waitGated(c: McpController, name: string, reason: 'excluded' | 'not_allowed', pid?: number): Promise<void> {
  await waitFor(() => row(c, name)?.state === reason && c.unavailableReason(name) === reason, `${name} to be ${reason}`, SLOW);
  if (pid !== undefined) await waitFor(() => !pidAlive(pid), `${name}'s process ${pid} to exit`, SLOW);
  expect(toolsOf(c, name)).toEqual([]);
  expect(row(c, name)?.pid).toBeUndefined();
}

describe('hot reload of gating settings', () => {
  it('excluding a server disconnects it and drops its tools; un-excluding reconnects it; the other server is untouched', async () => {
    const { ws, c, rows: { a, b } } = await h.connected({ a: basic('1'), b: basic('2') });
    const bTools = toolsOf(c, 'b');

    await settings(c, ws, { excluded: ['a'] });
    await waitGated(c, 'a', 'excluded', a.pid);
    expect(c.toolUnavailableMessage('mcp__a__echo')).toContain('mcp.excluded');

    await settings(c, ws, { excluded: [] });
    const again = await waitState(c, 'a', 'connected');
    expect(again.pid).not.toBe(a.pid);
    expect(toolsOf(c, 'a')).toContain('mcp__a__v1_tool');

    expect(row(c, 'b')).toMatchObject({ state: 'connected', pid: b.pid, generation: b.generation });
    expect(toolsOf(c, 'b')).toEqual(bTools);
  });

  it('narrowing `mcp.allowed` stops the others, `[]` denies all, and removing the key lets everything back', async () => {
    const { ws, c, rows: first } = await h.connected({ a: basic('1'), b: basic('2'), c: basic('3') });

    await settings(c, ws, { allowed: ['a'] });
    await waitGated(c, 'b', 'not_allowed', first.b.pid);
    await waitGated(c, 'c', 'not_allowed', first.c.pid);
    expect(row(c, 'a')).toMatchObject({ state: 'connected', pid: first.a.pid });

    await settings(c, ws, { allowed: [] });
    await waitGated(c, 'a', 'not_allowed', first.a.pid);
    expect(c.tools()).toEqual([]);
    await waitFor(() => c.pids().length === 0, 'the tracker to see no child left', SLOW);

    await settings(c, ws, undefined);
    for (const name of ['a', 'b', 'c']) await waitState(c, name, 'connected');
    expect(c.pids()).toHaveLength(3);
  });

  it('the CLI bound holds after any settings edit: settings narrow it but never widen it', async () => {
    const ws = h.workspace();
    ws.user({ a: basic('1'), b: basic('2'), c: basic('3') });
    const c = await h.start(ws, { cliAllowedServerNames: ['a', 'b'] });
    const a = await waitState(c, 'a', 'connected');
    const b = await waitState(c, 'b', 'connected');
    expect(row(c, 'c')?.state).toBe('not_allowed');
    const cStates = collect(c, 'server-state');

    // Settings name c: the bound keeps it out, and narrows b away.
    await settings(c, ws, { allowed: ['a', 'c'] });
    await waitGated(c, 'b', 'not_allowed', b.pid);
    expect(row(c, 'c')?.state).toBe('not_allowed');
    expect(row(c, 'a')).toMatchObject({ state: 'connected', pid: a.pid });

    // Settings allow everything explicitly: still only the bound.
    await settings(c, ws, { allowed: ['a', 'b', 'c'] });
    await waitState(c, 'b', 'connected');
    expect(row(c, 'c')?.state).toBe('not_allowed');

    // An unrelated gating edit (exclude a) and dropping `allowed`: c stays out.
    await settings(c, ws, { excluded: ['a'] });
    await waitGated(c, 'a', 'excluded', a.pid);
    expect(row(c, 'b')?.state).toBe('connected');
    expect(row(c, 'c')?.state).toBe('not_allowed');

    await settings(c, ws, undefined);
    await waitState(c, 'a', 'connected');
    expect(row(c, 'c')).toMatchObject({ state: 'not_allowed', tools: [], pid: undefined });
    // c never got as far as starting through all of it.
    expect(cStates.filter((e) => e.name === 'c' && (e.state === 'connecting' || e.state === 'connected'))).toEqual([]);
    expect(toolsOf(c, 'c')).toEqual([]);
  });
});
