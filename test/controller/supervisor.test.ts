/**
 * The supervisor wired to real failures (SPEC §5): a child killed with
 * SIGKILL, a crash loop, a connect that times out.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { McpReconcilerError } from '../../src/errors.js';
import { stdioFixtureConfig } from '../helpers/fixtures.js';
import { pidAlive, waitFor } from '../helpers/processes.js';
import { firstText, Harness, markerSwitched, rejection, row, toolNames, waitState } from './support.js';

const h = new Harness();
afterAll(() => h.cleanup());

describe('a stdio child killed with SIGKILL', () => {
  it('is reconnected by the supervisor; its tools stay registered; a call during the gap fails with "reconnecting"', async () => {
    // A server that was not up for healthyMs waits initialMs before its first reconnect: the gap.
    const { c } = await h.running({ basic: stdioFixtureConfig('basic-server') }, { backoff: { initialMs: 2_500, maxMs: 5_000, attempts: 5 } });
    const before = row(c, 'basic');
    expect(before.state).toBe('connected');
    const pid = before.pid!;
    const toolsBefore = toolNames(c);
    expect(toolsBefore).toContain('mcp__basic__echo');

    const removals: string[] = [];
    c.on('tools-changed', (e) => removals.push(...e.removed));
    // Act the moment the machine reports the loss: deterministic, no race with the retry.
    let gap: { call: Promise<unknown>; tools: string[]; reason: string | undefined; message: string } | undefined;
    c.on('server-state', (e) => {
      if (e.name !== 'basic' || e.state !== 'reconnecting' || gap) return;
      const call = c.callTool('mcp__basic__echo', { text: 'anyone?' });
      call.catch(() => {});
      gap = { call, tools: toolNames(c), reason: c.unavailableReason('basic'), message: c.toolUnavailableMessage('mcp__basic__echo') };
    });

    process.kill(pid, 'SIGKILL');
    await waitState(c, 'basic', 'reconnecting');
    // Polled, not only from the listener: the gap is long enough to see from outside.
    const polled = await rejection(c.callTool('mcp__basic__echo', { text: 'still there?' }));
    expect(polled.code).toBe('tool_unavailable');
    expect(toolNames(c)).toEqual(toolsBefore);

    await waitFor(() => {
      const r = row(c, 'basic');
      return r.state === 'connected' && r.generation > before.generation;
    }, 'the supervisor to reconnect');

    expect(gap).toBeDefined();
    const err = await rejection(gap!.call);
    expect(err.code).toBe('tool_unavailable');
    expect(err.message).toMatch(/reconnecting/);
    expect(err.details).toMatchObject({ server: 'basic', reconnecting: true });
    expect(gap!.tools).toEqual(toolsBefore);
    expect(gap!.reason).toBe('reconnecting');
    expect(gap!.message).toMatch(/"basic" is reconnecting/);
    expect(polled.message).toMatch(/reconnecting/);

    const after = row(c, 'basic');
    expect(after.pid).toBeTypeOf('number');
    expect(after.pid).not.toBe(pid);
    expect(pidAlive(pid)).toBe(false);
    // The tracker lets go of a killed group on its next poll; don't race it.
    await waitFor(() => !c.pids().includes(pid), 'the tracker to forget the crashed process');
    expect(c.pids()).toEqual([after.pid]);
    // Never unregistered, not even for a moment.
    expect(removals).toEqual([]);
    expect(toolNames(c)).toEqual(toolsBefore);
    expect(c.tools().every((t) => t.generation === after.generation)).toBe(true);
    expect(Number(firstText(await c.callTool('mcp__basic__pid', {})))).toBe(after.pid);
  });

  it('reconnects at once after a healthy run (the budget was reset)', async () => {
    const ws = h.workspace();
    // initialMs is far beyond any wait below: only the "at once" rule can reconnect in time.
    const c = h.controller(ws, { backoff: { initialMs: 120_000, maxMs: 120_000, attempts: 5, healthyMs: 100 } });
    await c.addRuntimeServer('steady', stdioFixtureConfig('basic-server'));
    await c.start();
    const before = row(c, 'steady');
    await new Promise((r) => setTimeout(r, 400)); // let the run count as healthy
    process.kill(before.pid!, 'SIGKILL');
    await waitFor(() => {
      const r = row(c, 'steady');
      return r.state === 'connected' && r.generation > before.generation;
    }, 'an immediate reconnect', 20_000);
    expect(row(c, 'steady').pid).not.toBe(before.pid);
  });
});

describe('a crash-looping server', () => {
  it('ends in failed after the budget, with a reason that says so', async () => {
    const { c } = await h.running({ loop: stdioFixtureConfig('crash-server', { env: { CRASH_ON_START: '1' } }) }, { backoff: { initialMs: 20, maxMs: 100, attempts: 3 } });
    const r = row(c, 'loop');
    expect(r).toMatchObject({ state: 'failed', status: 'failed', reason: 'failed', tools: [], attempt: 3 });
    // The child's stderr ends up in the server's last error.
    expect(r.lastError).toMatch(/exited with code 1; stderr: crash-server: CRASH_ON_START is set/);
    expect(c.unavailableReason('loop')).toBe('failed');
    expect(c.toolUnavailableMessage('mcp__loop__ping')).toMatch(/"loop" failed and is no longer retried.*reconnect loop/);
    expect(c.pids()).toEqual([]);
  });

  it('unregisters the tools it had once the budget is spent; reconnect() tries again', async () => {
    const ws = h.workspace();
    const marker = join(ws.root, 'crash-now');
    // Healthy until the marker exists, then every start crashes.
    const flaky = markerSwitched(marker, 'crash-server', 'echo "marker found, crashing" >&2; exit 1');
    const { c } = await h.running({ flaky }, { backoff: { initialMs: 20, maxMs: 100, attempts: 3 } }, ws);
    expect(toolNames(c)).toEqual(['mcp__flaky__crash', 'mcp__flaky__ping']);
    const removed: string[] = [];
    c.on('tools-changed', (e) => removed.push(...e.removed));

    writeFileSync(marker, '');
    const crashed = await rejection(c.callTool('mcp__flaky__crash', {}));
    expect(crashed.code).toBe('tool_unavailable');
    expect(crashed.message).toMatch(/did not complete: MCP server "flaky" lost its connection \(.*exited with code 1/);
    await waitState(c, 'flaky', 'failed');

    expect(toolNames(c)).toEqual([]);
    expect(removed.sort()).toEqual(['mcp__flaky__crash', 'mcp__flaky__ping']);
    expect(c.unavailableReason('flaky')).toBe('failed');
    expect(row(c, 'flaky').lastError).toBeDefined();
    const err: McpReconcilerError = await rejection(c.callTool('mcp__flaky__ping', {}));
    expect(err.code).toBe('unknown_tool');
    expect(err.message).toMatch(/"flaky" failed and is no longer retried/);
    expect(c.pids()).toEqual([]);

    rmSync(marker);
    await c.reconnect('flaky');
    await waitState(c, 'flaky', 'connected');
    expect(toolNames(c)).toEqual(['mcp__flaky__crash', 'mcp__flaky__ping']);
    expect(firstText(await c.callTool('mcp__flaky__ping', {}))).toBe('pong');
  });
});

describe('a server slower than its start timeout', () => {
  it('keeps starting in the background: start() stops waiting for it, it is reported as starting slowly, then connects without a retry', async () => {
    // A readiness timeout far beyond the test's: start() resolving proves it did not wait for the slow one.
    const { c } = await h.running(
      { sluggish: stdioFixtureConfig('slow-server', { env: { START_DELAY_MS: '2500' }, timeout: 300 }), quick: stdioFixtureConfig('basic-server') },
      { backoff: { initialMs: 20, maxMs: 50, attempts: 2 }, readyTimeoutMs: 10 * 60_000 },
    );
    expect(row(c, 'quick').state).toBe('connected');
    const slow = row(c, 'sluggish');
    expect(slow).toMatchObject({ state: 'connecting', status: 'connecting', reason: 'starting_slowly', generation: 1, attempt: 0 });
    expect(c.unavailableReason('sluggish')).toBe('starting_slowly');
    expect(c.toolUnavailableMessage('mcp__sluggish__ping')).toMatch(/"sluggish" is still starting, slower than its start timeout.*raise "timeout"/);
    expect(c.pids()).toHaveLength(2);
    await waitState(c, 'sluggish', 'connected');
    // The same process, the same generation: it was never cut off and retried.
    expect(row(c, 'sluggish')).toMatchObject({ generation: 1, reason: undefined, attempt: 0 });
    expect(firstText(await c.callTool('mcp__sluggish__ping', {}))).toBe('pong');
  });

  it('fails only when its process exits while starting', async () => {
    const ws = h.workspace();
    const c = h.controller(ws, { backoff: { initialMs: 20, maxMs: 50, attempts: 2 }, readyTimeoutMs: 10 * 60_000 });
    // Starts, stays silent past its start timeout, then dies: a real failure.
    await c.addRuntimeServer('dies', { command: process.execPath, args: ['-e', 'setTimeout(() => process.exit(3), 1500)'], timeout: 200 });
    await c.start();
    expect(row(c, 'dies').reason).toBe('starting_slowly');
    await waitState(c, 'dies', 'failed');
    expect(row(c, 'dies').lastError).toMatch(/exit|code 3/);
    await waitFor(() => c.pids().length === 0, 'the children to be gone');
  });
});
