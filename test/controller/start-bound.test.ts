/**
 * The start bound (`startTimeoutMs`): a stdio server that never answers
 * `initialize`, or answers it and then never answers `tools/list`, fails
 * once its bound runs out instead of staying `connecting` for ever; its
 * process group is killed and the supervisor's retry and budget apply. And
 * time spent queued behind the connect limit is not a server's own: neither
 * its readiness wait nor `status` count it. States and counts only, no
 * timed assertions.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { stdioFixtureConfig } from '../helpers/fixtures.js';
import { pidAlive, waitFor } from '../helpers/processes.js';
import type { ServerStatus } from '../../src/controller/types.js';
import type { Semaphore } from '../../src/controller/semaphore.js';
import { cli, Harness, processesMatching, row, waitState } from './support.js';

const h = new Harness();
afterAll(() => h.cleanup());

/** Every PID the controller's children had, sampled until `stop()`: a starting server's process is not in `status()` yet. */
function samplePids(c: ReturnType<Harness['controller']>): { seen: Set<number>; stop(): void } {
  const seen = new Set<number>();
  const timer = setInterval(() => {
    for (const pid of c.pids()) seen.add(pid);
  }, 50);
  return { seen, stop: () => clearInterval(timer) };
}

describe('the start bound', () => {
  it('fails a server that never answers initialize, and one that never answers tools/list, naming the request and the option; their processes are killed', async () => {
    const ws = h.workspace();
    const c = h.controller(ws, { backoff: { initialMs: 20, maxMs: 50, attempts: 1 }, readyTimeoutMs: 600_000 });
    await c.addRuntimeServer('mute', { ...stdioFixtureConfig('hang-server', { timeout: 2_000 }), startTimeoutMs: 3_000 });
    // Room to start the SDK and answer initialize on a busy machine before its bound.
    await c.addRuntimeServer('stuck', { ...stdioFixtureConfig('hang-list-server', { timeout: 2_000 }), startTimeoutMs: 10_000 });
    const sampled = samplePids(c);
    void c.start();
    await waitState(c, 'mute', 'failed', 60_000);
    await waitState(c, 'stuck', 'failed', 60_000);
    expect(row(c, 'mute').lastError).toMatch(/"mute" did not answer initialize within 3000 ms \(its start bound, "startTimeoutMs"\)/);
    expect(row(c, 'stuck').lastError).toMatch(/"stuck" did not answer tools\/list within 10000 ms \(its start bound, "startTimeoutMs"\)/);
    // Why: the reason, the bound and the option.
    expect(c.toolUnavailableMessage('mcp__mute__anything')).toMatch(/failed.*did not answer initialize within 3000 ms.*startTimeoutMs/);
    sampled.stop();
    // One process each, one attempt each (a budget of 1), both killed.
    const pids = [...sampled.seen];
    expect(pids).toHaveLength(2);
    await waitFor(() => pids.every((p) => !pidAlive(p)), 'the hung servers to be killed', 10_000);
    expect(c.pids()).toEqual([]);
  });

  it('the controller-wide default applies to a server that sets none, and the supervisor retries within its budget', async () => {
    const ws = h.workspace();
    const c = h.controller(ws, { backoff: { initialMs: 20, maxMs: 50, attempts: 2 }, startTimeoutMs: 1_500, readyTimeoutMs: 600_000 });
    await c.addRuntimeServer('mute', stdioFixtureConfig('hang-server'));
    const sampled = samplePids(c);
    void c.start();
    await waitState(c, 'mute', 'failed', 60_000);
    // Two attempts, each its own process, each stopped at the bound.
    expect(row(c, 'mute')).toMatchObject({ generation: 2, status: 'failed' });
    expect(row(c, 'mute').lastError).toMatch(/did not answer initialize within 1500 ms \(its start bound, "startTimeoutMs"\)/);
    sampled.stop();
    const pids = sampled.seen;
    expect(pids.size).toBe(2);
    await waitFor(() => [...pids].every((p) => !pidAlive(p)), 'the hung servers to be killed', 10_000);
  });

  it('`why` names the bound and the option for a server configured in a file', async () => {
    const ws = h.workspace('mcp-start-bound-');
    ws.writeUserSettings({ mcpServers: { mute: { ...stdioFixtureConfig('hang-server', { args: [`--marker=${ws.root}`] }), startTimeoutMs: 1_500 } } });
    const r = await cli(['why', 'mute', '--cwd', ws.root, '--approvals', ws.approvals], ws.env, ws.root);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/did not answer initialize within 1500 ms \(its start bound, "startTimeoutMs"\)/);
    expect(processesMatching(ws.root)).toEqual([]);
  });
});

/** `n` servers that each spend `ms` busy on the CPU before they answer: the connect limiter holds a slot through each start. */
function busyStarters(n: number, ms: number): Record<string, ReturnType<typeof stdioFixtureConfig>> {
  return Object.fromEntries(
    Array.from({ length: n }, (_, i) => [`busy-${i + 1}`, stdioFixtureConfig('slow-server', { env: { START_DELAY_MS: String(ms), START_BUSY: '1' } })]),
  );
}

describe('time queued behind the connect limit', () => {
  it('does not count against a server’s readiness wait: start() waits for each queued server within its own readiness time', async () => {
    const ws = h.workspace();
    const c = h.controller(ws, { connectConcurrency: 1, readyTimeoutMs: 10_000, connectTimeoutMs: 60_000 });
    for (let i = 1; i <= 3; i++) await c.addRuntimeServer(`queued-${i}`, stdioFixtureConfig('slow-server', { env: { START_DELAY_MS: '300' } }));
    // The one connect slot is taken (as by a long start) until well past the readiness time: every server queues behind it.
    const limiter = (c as unknown as { semaphore: Semaphore }).semaphore;
    const slot = await limiter.acquire();
    let released = false;
    const timer = setTimeout(() => {
      released = true;
      slot.release();
    }, 12_000);
    try {
      await c.start();
    } finally {
      clearTimeout(timer);
      slot.release();
    }
    expect(released).toBe(true);
    expect(c.status().map((s) => [s.name, s.state])).toEqual([
      ['queued-1', 'connected'],
      ['queued-2', 'connected'],
      ['queued-3', 'connected'],
    ]);
  });

  it('`status` waits for every admitted server within its own start bound, not a global 10 s', async () => {
    const ws = h.workspace('mcp-start-bound-');
    // Queued busy starts behind a limit of one, and one server that needs longer than 10 s to answer.
    const servers = {
      ...busyStarters(3, 2_000),
      late: stdioFixtureConfig('slow-server', { env: { START_DELAY_MS: '12000' } }),
    };
    ws.writeUserSettings({ mcpServers: servers });
    const env = { ...ws.env, MCP_RECONCILER_CONNECT_CONCURRENCY: '1' };
    const r = await cli(['status', '--json', '--cwd', ws.root, '--approvals', ws.approvals], env, ws.root);
    expect(r.code).toBe(0);
    const rows = (JSON.parse(r.stdout) as { servers: ServerStatus[] }).servers;
    expect(rows.map((s) => [s.name, s.state, s.tools.length])).toEqual(Object.keys(servers).sort().map((name) => [name, 'connected', 1]));
  });
});
