/**
 * What a live connection keeps: only what its events and calls need. The
 * start-phase hooks (the connect limiter's, with its timers) serve the open
 * only; a connection that held them would carry them per server for as long
 * as it lives (docs/performance.md, memory).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, describe, expect, it } from 'vitest';
import { openConnection, type LiveConnection } from '../../src/connection/connect.js';
import { ProcessTracker } from '../../src/connection/processes.js';
import { stdioFixture } from '../helpers/fixtures.js';
import { expectNoSurvivors } from './support.js';

const tracker = new ProcessTracker({ graceMs: 500 });
const cwd = mkdtempSync(join(tmpdir(), 'mcp-retained-'));

afterAll(async () => {
  await expectNoSurvivors([tracker]);
  rmSync(cwd, { recursive: true, force: true });
});

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Full collections until `ref` is cleared (finalizers and weak cells may need more than one). */
async function collected(ref: WeakRef<object>): Promise<boolean> {
  for (let i = 0; i < 10 && ref.deref() !== undefined; i++) {
    await new Promise((r) => setImmediate(r));
    gc();
  }
  return ref.deref() === undefined;
}

describe('a live connection', () => {
  it('lets go of its start-phase hooks once open', async () => {
    const calls: string[] = [];
    let hooks: WeakRef<object> | undefined;
    // The hooks are reachable only through the connection once this returns.
    const open = (): Promise<LiveConnection> => {
      const startPhase = { spawned: () => calls.push('spawned'), initialized: () => calls.push('initialized') };
      hooks = new WeakRef(startPhase);
      return openConnection(stdioFixture('basic-server', { name: 'basic' }), { generation: 1, tracker, cwd, startPhase, timeoutMs: 120_000 });
    };
    const conn = await open();
    try {
      expect(calls).toEqual(['spawned', 'initialized']);
      expect(conn.tools.length).toBeGreaterThan(0);
      expect(await collected(hooks!)).toBe(true);
    } finally {
      await conn.close();
    }
  }, 180_000);
});
