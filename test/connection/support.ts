/** Shared bits of the connection tests: event capture and the no-orphans check. */
import { expect } from 'vitest';
import { openConnection, type ConnectionEvent, type LiveConnection } from '../../src/connection/connect.js';
import type { ProcessTracker } from '../../src/connection/processes.js';
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
