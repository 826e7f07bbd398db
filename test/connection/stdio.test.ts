import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openConnection, type ConnectOptions } from '../../src/connection/connect.js';
import { ProcessTracker } from '../../src/connection/processes.js';
import { desiredServer, stdioFixture } from '../helpers/fixtures.js';
import { descendantsOf, pidAlive, waitFor } from '../helpers/processes.js';
import { connectError, eventLog, expectNoSurvivors, firstText } from './support.js';

const tracker = new ProcessTracker({ graceMs: 500 });
const extraPids: number[] = [];
const cwd = mkdtempSync(join(tmpdir(), 'mcp-stdio-'));

function options(extra: Partial<ConnectOptions> = {}): ConnectOptions {
  return { generation: 1, tracker, cwd, ...extra };
}


afterAll(async () => {
  await expectNoSurvivors([tracker], extraPids);
  rmSync(cwd, { recursive: true, force: true });
});

describe('stdio connections', () => {
  it('connects, lists tools and prompts, calls a tool, and tracks the pid', async () => {
    const conn = await openConnection(stdioFixture('basic-server', { name: 'basic', env: { TOOLS_VERSION: '7', TOOL_COUNT: '2' } }), options({ generation: 3 }));
    expect(conn.name).toBe('basic');
    expect(conn.generation).toBe(3);
    expect(conn.tools.map((t) => t.name).sort()).toEqual(['add', 'echo', 'env', 'pid', 't1', 't2', 'v7_tool']);
    expect(conn.prompts.map((p) => p.name)).toEqual(['greet']);
    expect(firstText(await conn.callTool('echo', { text: 'hello' }))).toBe('hello');
    expect((await conn.callTool('add', { a: 2, b: 3 })).structuredContent).toEqual({ sum: 5 });
    const pid = Number(firstText(await conn.callTool('pid', {})));
    expect(pid).toBe(conn.pid);
    expect(tracker.pids()).toContain(pid);
    expect(conn.stderrTail()).toContain('basic-server: ready');
    await conn.close();
    expect(pidAlive(pid)).toBe(false);
    expect(tracker.pids()).not.toContain(pid);
  });

  it('hands the child a scrubbed environment with the server overlay on top', async () => {
    const parentEnv = { ...process.env, FOO_TOKEN: 'leak', DSH_SETTING: 'host-only', PLAIN_VAR: 'visible', SHARED: 'parent' };
    const entry = stdioFixture('basic-server', { name: 'envcheck', env: { SHARED: 'overlay', BAR_SECRET: 'given' } });
    const conn = await openConnection(entry, options({ parentEnv }));
    const names = ['FOO_TOKEN', 'DSH_SETTING', 'PLAIN_VAR', 'SHARED', 'BAR_SECRET'];
    const seen = JSON.parse(firstText(await conn.callTool('env', { names })));
    // PLAIN_VAR is not on the allow-list (SPEC §8.2), so only the overlay reaches the child.
    expect(seen).toEqual({ FOO_TOKEN: null, DSH_SETTING: null, PLAIN_VAR: null, SHARED: 'overlay', BAR_SECRET: 'given' });
    await conn.close();
  });

  it('resolves a relative cwd against the workspace root', async () => {
    const entry = stdioFixture('basic-server', { name: 'nocwd', cwd: 'does/not/exist' });
    const err = await connectError(openConnection(entry, options()));
    expect(err.code).toBe('connect_failed');
    expect(err.message).toContain(join(cwd, 'does/not/exist'));
    expect(err.hint).toMatch(/cwd/);
  });

  it('reports the exit code and stderr of a server that dies at start, and leaves nothing behind', async () => {
    const entry = stdioFixture('crash-server', { name: 'crashy', env: { CRASH_ON_START: '1' } });
    const err = await connectError(openConnection(entry, options()));
    expect(err.code).toBe('connect_failed');
    expect(err.message).toContain('Server "crashy"');
    expect(err.message).toContain('exited with code 1');
    expect(err.message).toContain('CRASH_ON_START is set');
    expect(tracker.pids()).toEqual([]);
  });

  it('names the command when it does not exist', async () => {
    const entry = desiredServer('ghost', { command: 'mcp-reconciler-no-such-command', args: [] });
    const err = await connectError(openConnection(entry, options()));
    expect(err.code).toBe('connect_failed');
    expect(err.message).toContain('Server "ghost"');
    expect(err.message).toContain('command not found: "mcp-reconciler-no-such-command"');
    expect(err.hint).toMatch(/PATH/);
  });

  it('times out a server that starts too slowly and kills it', async () => {
    const entry = stdioFixture('slow-server', { name: 'slow', env: { START_DELAY_MS: '60000' }, timeout: 400 });
    const before = tracker.history().length;
    const err = await connectError(openConnection(entry, options({ timeoutMs: 60_000 })));
    expect(err.code).toBe('timeout');
    expect(err.message).toContain('Server "slow" did not connect within 400 ms');
    const spawned = tracker.history().slice(before);
    expect(spawned).toHaveLength(1);
    expect(spawned.filter(pidAlive)).toEqual([]);
    expect(tracker.pids()).toEqual([]);
  });

  it('stops connecting when the signal aborts, killing the child', async () => {
    const controller = new AbortController();
    const entry = stdioFixture('slow-server', { name: 'aborted', env: { START_DELAY_MS: '60000' } });
    const before = tracker.history().length;
    const pending = openConnection(entry, options({ signal: controller.signal }));
    await waitFor(() => tracker.history().length > before, 'the child to be spawned');
    const pid = tracker.history().at(-1)!;
    controller.abort();
    const err = await connectError(pending);
    expect(err.details.aborted).toBe(true);
    expect(pidAlive(pid)).toBe(false);
  });

  it('does not start anything for an already aborted signal', async () => {
    const before = tracker.history().length;
    const err = await connectError(openConnection(stdioFixture('basic-server'), options({ signal: AbortSignal.abort() })));
    expect(err.details.aborted).toBe(true);
    expect(tracker.history().length).toBe(before);
  });

  it('reports exactly one lost event when the child is SIGKILLed', async () => {
    const log = eventLog();
    const conn = await openConnection(stdioFixture('basic-server', { name: 'victim' }), options({ onEvent: log.onEvent }));
    process.kill(conn.pid!, 'SIGKILL');
    await waitFor(() => log.lost().length > 0, 'the lost event');
    await conn.close();
    expect(log.lost()).toHaveLength(1);
    expect(log.lost()[0]).toMatchObject({ sessionLost: false });
    expect(log.lost()[0]!.error).toContain('SIGKILL');
    await expect(conn.callTool('echo', { text: 'x' })).rejects.toThrow();
  });

  it('reports a crash with its stderr', async () => {
    const log = eventLog();
    const conn = await openConnection(stdioFixture('crash-server', { name: 'crashes' }), options({ onEvent: log.onEvent }));
    expect(firstText(await conn.callTool('ping', {}))).toBe('pong');
    await expect(conn.callTool('crash', {})).rejects.toThrow();
    await waitFor(() => log.lost().length > 0, 'the lost event');
    expect(log.lost()[0]!.error).toContain('exited with code 1');
    expect(log.lost()[0]!.error).toContain('crashing on request');
    await conn.close();
    expect(log.lost()).toHaveLength(1);
  });

  it('close() is idempotent and is never followed by a lost event', async () => {
    const log = eventLog();
    const conn = await openConnection(stdioFixture('basic-server', { name: 'closer' }), options({ onEvent: log.onEvent }));
    const pid = conn.pid!;
    const first = conn.close();
    expect(conn.close()).toBe(first);
    await first;
    await conn.close();
    expect(pidAlive(pid)).toBe(false);
    expect(log.events).toEqual([]);
  });

  it('kills a launcher and the real server it started when closing', async () => {
    const conn = await openConnection(stdioFixture('wrapper', { name: 'wrapped', args: ['ignore-sigterm-server'] }), options());
    expect(conn.tools.map((t) => t.name)).toEqual(['pid']);
    const serverPid = Number(firstText(await conn.callTool('pid', {})));
    expect(serverPid).not.toBe(conn.pid);
    expect(descendantsOf(conn.pid!)).toContain(serverPid);
    extraPids.push(serverPid);
    await conn.close();
    expect([conn.pid!, serverPid].filter(pidAlive)).toEqual([]);
  });

  it('turns list_changed notifications into events', async () => {
    const log = eventLog();
    const conn = await openConnection(stdioFixture('list-changed-server', { name: 'changing' }), options({ onEvent: log.onEvent }));
    expect(conn.tools.map((t) => t.name).sort()).toEqual(['add_prompt', 'add_tool', 'describe_tool']);
    expect(conn.prompts.map((p) => p.name)).toEqual(['initial']);
    await conn.callTool('add_tool', { name: 'fresh' });
    await waitFor(() => log.events.some((e) => e.type === 'tools_changed'), 'tools_changed');
    expect((await conn.listTools()).map((t) => t.name)).toContain('fresh');
    expect(conn.tools.map((t) => t.name)).toContain('fresh');
    await conn.callTool('add_prompt', { name: 'later' });
    await waitFor(() => log.events.some((e) => e.type === 'prompts_changed'), 'prompts_changed');
    expect((await conn.listPrompts()).map((p) => p.name).sort()).toEqual(['initial', 'later']);
    await conn.close();
    expect(log.lost()).toEqual([]);
  });

});
