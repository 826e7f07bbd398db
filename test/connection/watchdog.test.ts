/**
 * The orphan watchdog: a host SIGKILLed with stdio servers that ignore both
 * stdin EOF and SIGTERM leaves nothing running for long, with no next start
 * needed; an orderly dispose leaves no watchdog. Real host processes running
 * the published package, real fixture servers.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createMcpController, type McpController } from '../../src/controller/controller.js';
import { WATCHDOG_NAME } from '../../src/connection/watchdog.js';
import { fixturePath, repoRoot } from '../helpers/fixtures.js';
import { descendantsOf, endTestProcesses, killGroupOrPid, pidAlive, recordedTempDir, waitFor } from '../helpers/processes.js';
import { startHostScript } from './support.js';

const isLinux = process.platform === 'linux';

let dirs: string[] = [];
let pids: number[] = [];
let hosts: ChildProcess[] = [];
let controllers: McpController[] = [];

const tempDir = (): string => recordedTempDir(dirs, 'mcp-watchdog-');

/** A controller in this process with one stdio server running (tracked for cleanup). */
async function hostWithOneServer(): Promise<McpController> {
  const root = tempDir();
  const c = createMcpController({ cwd: root, sources: [], approvals: join(root, 'approvals.json'), watch: false, processStateFile: false, listingCache: false, killGraceMs: 300 });
  controllers.push(c);
  await c.addRuntimeServer('one', { command: process.execPath, args: [fixturePath('basic-server')] });
  await c.start();
  pids.push(...c.pids());
  return c;
}

afterEach(async () => {
  // Runs even when an assertion failed: no host, orphan or decoy may outlive the test.
  expect(await endTestProcesses({ hosts, controllers, pids, dirs })).toEqual([]);
});

/** argv[0] of a live process, or undefined. */
function argv0(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0];
  } catch {
    return undefined;
  }
}

/** The watchdogs among the live descendants of `pid`. */
function watchdogsUnder(pid: number): number[] {
  return descendantsOf(pid).filter((p) => argv0(p) === WATCHDOG_NAME);
}

function rssKb(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1]);
}

/**
 * A host process that imports the package as a host does (`mcp-reconciler`,
 * the bundle), starts two servers that ignore SIGTERM, SIGHUP, stdin EOF and
 * EPIPE (only SIGKILL ends them), and
 * prints their PIDs and its status. No process state file: only the watchdog
 * can clean up after it.
 */
async function startHost(root: string): Promise<{ host: ChildProcess; report: { pids: number[]; statusPids: number[] } }> {
  const server = { command: process.execPath, args: [fixturePath('stubborn-server')] };
  const script = `
    import { createMcpController } from 'mcp-reconciler';
    const c = createMcpController({ cwd: ${JSON.stringify(root)}, sources: [], approvals: ${JSON.stringify(join(root, 'approvals.json'))},
      watch: false, processStateFile: false, listingCache: false });
    await c.addRuntimeServer('one', ${JSON.stringify(server)});
    await c.addRuntimeServer('two', ${JSON.stringify(server)});
    await c.start();
    console.log(JSON.stringify({ pids: c.pids(), statusPids: c.status().map((s) => s.pid) }));
    setInterval(() => {}, 1000);
  `;
  const { host, report } = await startHostScript<{ pids: number[]; statusPids: number[] }>(script, hosts, { cwd: repoRoot, what: 'the host to report its servers', timeoutMs: 30_000 });
  pids.push(...report.pids);
  return { host, report };
}

describe.runIf(isLinux)('the orphan watchdog', () => {
  it('a SIGKILLed host leaves no server running: one watchdog per host kills its groups within seconds, then exits', async () => {
    const root = tempDir();
    const { host, report } = await startHost(root);
    expect(report.pids).toHaveLength(2);
    expect(report.pids.every(pidAlive)).toBe(true);

    // One watchdog for both servers; it is not a server: no PID list or status row shows it.
    const watchdogs = watchdogsUnder(host.pid!);
    expect(watchdogs).toHaveLength(1);
    const watchdog = watchdogs[0]!;
    pids.push(watchdog);
    expect(report.pids).not.toContain(watchdog);
    expect(report.statusPids).not.toContain(watchdog);
    console.log(`watchdog RSS: ${rssKb(watchdog)} kB`);

    host.kill('SIGKILL');
    await waitFor(() => host.exitCode !== null || host.signalCode !== null, 'the host to die');
    // No exit hook ran and no next start comes: only the watchdog can end them.
    await waitFor(() => !report.pids.some(pidAlive), `the servers ${report.pids.join(', ')} of the SIGKILLed host to be gone`, 15_000);
    await waitFor(() => !pidAlive(watchdog), 'the watchdog to exit after its work', 15_000);
  });

  it('an orderly dispose ends the watchdog with the servers', async () => {
    const root = tempDir();
    const c = createMcpController({ cwd: root, sources: [], approvals: join(root, 'approvals.json'), watch: false, processStateFile: false, listingCache: false, killGraceMs: 300 });
    controllers.push(c);
    await c.addRuntimeServer('one', { command: process.execPath, args: [fixturePath('ignore-sigterm-server')] });
    await c.addRuntimeServer('two', { command: process.execPath, args: [fixturePath('basic-server')] });
    await c.start();
    const servers = c.pids();
    pids.push(...servers);
    expect(servers).toHaveLength(2);
    const watchdogs = watchdogsUnder(process.pid);
    expect(watchdogs).toHaveLength(1);
    pids.push(...watchdogs);
    expect(c.status().map((s) => s.pid)).not.toContain(watchdogs[0]);

    await c.dispose();
    // dispose() resolves after the watchdog is gone, not only the servers.
    expect(watchdogs.filter(pidAlive)).toEqual([]);
    expect(servers.filter(pidAlive)).toEqual([]);
    expect(watchdogsUnder(process.pid)).toEqual([]);
  });

  it('a watchdog killed by someone else is replaced while servers run', async () => {
    const c = await hostWithOneServer();
    const [first] = watchdogsUnder(process.pid);
    expect(first).toBeDefined();
    pids.push(first!);
    // One that dies within a second of its start is not replaced (no respawn loop); this one has lived longer.
    await new Promise((r) => setTimeout(r, 1_200));
    process.kill(first!, 'SIGKILL');
    await waitFor(() => watchdogsUnder(process.pid).some((p) => p !== first), 'a new watchdog to take over', 15_000);
    pids.push(...watchdogsUnder(process.pid));
    await c.dispose();
    expect(watchdogsUnder(process.pid)).toEqual([]);
  });

  it('a host whose last server stopped keeps no watchdog, and the next server starts one again', async () => {
    const c = await hostWithOneServer();
    expect(watchdogsUnder(process.pid)).toHaveLength(1);
    await c.removeRuntimeServer('one');
    await waitFor(() => c.pids().length === 0 && watchdogsUnder(process.pid).length === 0, 'the server and the watchdog to be gone', 15_000);
    await c.addRuntimeServer('two', { command: process.execPath, args: [fixturePath('basic-server')] });
    await waitFor(() => c.pids().length === 1, 'the new server to run', 30_000);
    pids.push(...c.pids());
    expect(watchdogsUnder(process.pid)).toHaveLength(1);
  });
});
