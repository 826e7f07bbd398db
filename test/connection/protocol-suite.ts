/**
 * The set-up the protocol-era tests share: a process tracker, a connection
 * collector, a controller harness and the v2 HTTP fixtures they start, all
 * closed (and checked for survivors) after the file.
 */
import { afterAll } from 'vitest';
import { ProcessTracker } from '../../src/connection/processes.js';
import { startV2HttpFixture, type V2HttpFixture } from '../fixtures/v2-http-fixture.js';
import { Harness } from '../controller/support.js';
import { connectionCollector, expectNoSurvivors } from './support.js';

/** Call once at the top of a test file; registers its own `afterAll`. */
export function protocolSuite(cleanup: () => void = () => {}) {
  const tracker = new ProcessTracker({ graceMs: 500 });
  const fixtures: V2HttpFixture[] = [];
  const { connect, closeAll } = connectionCollector();
  const h = new Harness();
  const options = { generation: 1, tracker, cwd: process.cwd(), timeoutMs: 20_000 };
  const v2Http = async (legacy: 'serve' | 'reject'): Promise<V2HttpFixture> => {
    const f = await startV2HttpFixture({ legacy });
    fixtures.push(f);
    return f;
  };
  afterAll(async () => {
    await closeAll();
    await h.cleanup();
    await Promise.all(fixtures.map((f) => f.close()));
    cleanup();
    await expectNoSurvivors([tracker]);
  });
  return { tracker, connect, h, options, v2Http };
}
