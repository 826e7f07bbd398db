/**
 * Hung handshakes must not starve healthy servers (issue 10): a connect slot
 * is not held through a handshake that never completes. Ordering only, no
 * durations: the healthy server must connect while every hung one is still
 * connecting, and their connect timeout is far away.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { holdWhileStarting, Semaphore } from '../../src/controller/semaphore.js';
import { stdioFixtureConfig } from '../helpers/fixtures.js';
import { Harness, row, waitState } from './support.js';

let h = new Harness();
afterEach(async () => {
  const done = h;
  h = new Harness();
  await done.cleanup();
});

describe('connect limiter and hung servers', () => {
  it('a healthy server connects while more hung servers than connect slots are still connecting', async () => {
    const concurrency = 2;
    const ws = h.workspace();
    const c = h.controller(ws, {
      connectConcurrency: concurrency,
      // Far beyond the test's own timeout: a hung server can only leave `connecting` by timing out.
      connectTimeoutMs: 600_000,
      readyTimeoutMs: 600_000,
    });
    const hung = Array.from({ length: concurrency + 1 }, (_, i) => `a-hung-${i}`);
    // Added (and so admitted) before the healthy one, so the hung ones take every slot first.
    for (const name of hung) await c.addRuntimeServer(name, stdioFixtureConfig('hang-server'));
    await c.addRuntimeServer('z-healthy', stdioFixtureConfig('basic-server'));
    // Not awaited: start() waits for readiness, which the hung servers never reach.
    void c.start();

    await waitState(c, 'z-healthy', 'connected', 20_000);
    for (const name of hung) expect(row(c, name).state).toBe('connecting');
    // Every hung server was actually started: none of them was kept waiting for a slot forever either.
    h.record(c);
    expect(c.pids()).toHaveLength(hung.length + 1);
  });
});

describe('holdWhileStarting', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  /** A semaphore of one slot, its lease wrapped in a hold, and a fake CPU counter. */
  async function setup(options: { readable?: boolean } = {}) {
    vi.useFakeTimers();
    const sem = new Semaphore(1);
    let ticks = 0;
    const hold = holdWhileStarting(await sem.acquire(), {
      cpuTicks: () => (options.readable === false ? undefined : ticks),
      sampleMs: 100,
      idleSamples: 2,
      maxHoldMs: 5_000,
      blindHoldMs: 1_000,
    });
    return { sem, hold, burn: (n: number) => (ticks += n) };
  }

  it('keeps the slot while the started process burns CPU, gives it back once it idles', async () => {
    const { sem, hold, burn } = await setup();
    hold.spawned(1234);
    for (let i = 0; i < 5; i++) {
      burn(8);
      await vi.advanceTimersByTimeAsync(100);
      expect(sem.inUse).toBe(1);
    }
    await vi.advanceTimersByTimeAsync(200);
    expect(sem.inUse).toBe(0);
  });

  it('gives the slot back as soon as the server answered initialize, once only', async () => {
    const { sem, hold, burn } = await setup();
    hold.spawned(1234);
    burn(8);
    hold.initialized();
    expect(sem.inUse).toBe(0);
    const other = await sem.acquire();
    hold.release();
    expect(sem.inUse).toBe(1);
    other.release();
  });

  it('a process busy forever still holds its slot only up to the cap', async () => {
    const { sem, hold, burn } = await setup();
    hold.spawned(1234);
    const spin = setInterval(() => burn(10), 50);
    await vi.advanceTimersByTimeAsync(4_900);
    expect(sem.inUse).toBe(1);
    await vi.advanceTimersByTimeAsync(200);
    expect(sem.inUse).toBe(0);
    clearInterval(spin);
  });

  it('without CPU figures (no /proc) the shorter blind cap applies', async () => {
    const { sem, hold } = await setup({ readable: false });
    hold.spawned(1234);
    await vi.advanceTimersByTimeAsync(900);
    expect(sem.inUse).toBe(1);
    await vi.advanceTimersByTimeAsync(200);
    expect(sem.inUse).toBe(0);
  });
});
