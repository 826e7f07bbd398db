/** Shared bits of the connection tests: event capture, the no-orphans check, a file's connections and their cleanup, host processes. */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect } from 'vitest';
import { openConnection, type ConnectionEvent, type ConnectOptions, type LiveConnection } from '../../src/connection/connect.js';
import { ProcessTracker } from '../../src/connection/processes.js';
import { McpReconcilerError } from '../../src/errors.js';
import { pidAlive, waitFor } from '../helpers/processes.js';
import { rejection } from '../helpers/results.js';

/** Collects a connection's events. */
export function eventLog(): { events: ConnectionEvent[]; onEvent: (e: ConnectionEvent) => void; lost: () => Extract<ConnectionEvent, { type: 'lost' }>[] } {
  const events: ConnectionEvent[] = [];
  return {
    events,
    onEvent: (e) => events.push(e),
    lost: () => events.filter((e): e is Extract<ConnectionEvent, { type: 'lost' }> => e.type === 'lost'),
  };
}

/**
 * After a test file: kill whatever is still tracked, then assert that no PID
 * the trackers ever spawned — nor any extra PID a test recorded (grandchildren)
 * — is alive. A leaked child fails the file.
 */
export async function expectNoSurvivors(trackers: readonly ProcessTracker[], extraPids: readonly number[] = []): Promise<void> {
  await Promise.all(trackers.map((t) => t.killAll()));
  const pids = [...trackers.flatMap((t) => t.history()), ...extraPids];
  // Reaping by init may lag a moment behind SIGKILL.
  await waitFor(() => pids.every((pid) => !pidAlive(pid)), `tracked processes ${pids.join(', ')} to be gone`, 5_000).catch(() => {});
  expect(pids.filter(pidAlive)).toEqual([]);
}

export { firstText } from '../helpers/results.js';

/** Await `promise` and return the McpReconcilerError it rejects with; fails the test when it resolves. */
export function connectError(promise: Promise<unknown>): Promise<McpReconcilerError> {
  return rejection(promise, 'expected the connection to fail');
}

/**
 * `openConnection` that remembers every connection it opened, so a test
 * file's `afterAll` can close them all with `closeAll()`.
 */
export function connectionCollector(): { connect: typeof openConnection; closeAll: () => Promise<void> } {
  const connections: LiveConnection[] = [];
  return {
    async connect(...args: Parameters<typeof openConnection>): Promise<LiveConnection> {
      const conn = await openConnection(...args);
      connections.push(conn);
      return conn;
    },
    async closeAll() {
      await Promise.all(connections.map((c) => c.close()));
    },
  };
}

/**
 * The set-up of a test file whose servers run in a temp directory of its own
 * (`<prefix>…`, its real path): their tracker (`graceMs` before SIGKILL),
 * `connect` remembering every connection, the options each connect takes, and
 * an `afterAll` that closes the connections, fails the file on a survivor and
 * removes the directory. Call once at the top of the file.
 */
export function connectionsInTempDir(prefix: string, graceMs: number) {
  const tracker = new ProcessTracker({ graceMs });
  const { connect, closeAll } = connectionCollector();
  const cwd = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  const options = (extra: Partial<ConnectOptions> = {}): ConnectOptions => ({ generation: 1, tracker, cwd, ...extra });
  afterAll(async () => {
    await closeAll();
    await expectNoSurvivors([tracker]);
    rmSync(cwd, { recursive: true, force: true });
  });
  return { tracker, connect, options, cwd };
}

/**
 * Run `script` (an ES module) as a host process of its own, pushed on `hosts`
 * for the test's cleanup, and wait for the line it prints on stdout when its
 * servers run: that line, parsed as JSON. A host that exits first fails with
 * its stderr.
 */
export async function startHostScript<T>(script: string, hosts: ChildProcess[], wait: { cwd?: string; what: string; timeoutMs: number }): Promise<{ host: ChildProcess; report: T; stderr: () => string }> {
  const host = spawn(process.execPath, ['--input-type=module', '-e', script], { cwd: wait.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  hosts.push(host);
  let out = '';
  let err = '';
  host.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  host.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  await waitFor(() => out.includes('\n') || host.exitCode !== null, wait.what, wait.timeoutMs);
  if (!out.includes('\n')) throw new Error(`the host exited (${host.exitCode}) before it reported: ${err}`);
  return { host, report: JSON.parse(out.trim().split('\n').at(-1)!) as T, stderr: () => err };
}
