/**
 * Hung handshakes must not starve healthy servers (docs/library.md): a connect slot
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

  it('keeps the slot while the started process waits for a CPU, and asks only when its CPU time says idle', async () => {
    vi.useFakeTimers();
    const sem = new Semaphore(1);
    let ticks = 0;
    let waiting = true;
    let asked = 0;
    const hold = holdWhileStarting(await sem.acquire(), {
      cpuTicks: () => ticks,
      runnable: () => {
        asked++;
        return waiting;
      },
      sampleMs: 100,
      idleSamples: 2,
      maxHoldMs: 5_000,
    });
    hold.spawned(1234);
    // Busy on a CPU: the CPU time answers, the run queue is not looked at.
    for (let i = 0; i < 3; i++) {
      ticks += 8;
      await vi.advanceTimersByTimeAsync(100);
    }
    expect(asked).toBe(0);
    // No CPU time for 1 s, but runnable all along: a machine with no core to spare, not an idle server.
    for (let i = 0; i < 10; i++) {
      await vi.advanceTimersByTimeAsync(100);
      expect(sem.inUse).toBe(1);
    }
    expect(asked).toBe(10);
    // Asleep now (waiting to be spoken to): the slot goes back after the idle samples.
    waiting = false;
    await vi.advanceTimersByTimeAsync(300);
    expect(sem.inUse).toBe(0);
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

describe('holdWhileStarting with a cheap own-CPU reading', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('reads the tree only while the process itself idles, and keeps the slot while a child works', async () => {
    vi.useFakeTimers();
    const sem = new Semaphore(1);
    let own = 0;
    let tree = 0;
    let treeReads = 0;
    const hold = holdWhileStarting(await sem.acquire(), {
      ownBusyTicks: () => own,
      cpuTicks: () => {
        treeReads++;
        return tree;
      },
      sampleMs: 100,
      idleSamples: 2,
    });
    hold.spawned(1234);
    const readsAtSpawn = treeReads;
    // The process itself busy: the tree is never read.
    for (let i = 0; i < 3; i++) {
      own += 8;
      tree += 8;
      await vi.advanceTimersByTimeAsync(100);
    }
    expect(treeReads).toBe(readsAtSpawn);
    // A launcher idles while its child (in the tree) works: the slot stays taken.
    for (let i = 0; i < 4; i++) {
      tree += 8;
      await vi.advanceTimersByTimeAsync(100);
      expect(sem.inUse).toBe(1);
    }
    expect(treeReads).toBeGreaterThan(readsAtSpawn);
    // Both idle: released after the idle samples.
    await vi.advanceTimersByTimeAsync(300);
    expect(sem.inUse).toBe(0);
  });
});

describe('Semaphore with an adaptive limit', () => {
  /** Start `n` jobs that each report `cpuMs` of start CPU once they run; returns the peak number running at once. */
  async function peak(sem: Semaphore, n: number, cpuMs: number): Promise<number> {
    let running = 0;
    let max = 0;
    await Promise.all(
      Array.from({ length: n }, async () => {
        const lease = await sem.acquire();
        running++;
        max = Math.max(max, running);
        await new Promise((r) => setImmediate(r));
        lease.observeStartCpu?.(cpuMs);
        await new Promise((r) => setImmediate(r));
        running--;
        lease.release();
      }),
    );
    return max;
  }

  it('stays at its base limit for heavy starts and rises for light ones, up to its max', async () => {
    const heavy = new Semaphore(4, { cores: 2 });
    expect(await peak(heavy, 30, 300)).toBe(4);
    expect(heavy.currentLimit).toBe(4);

    const light = new Semaphore(4, { cores: 2, max: 20 });
    expect(await peak(light, 60, 20)).toBeGreaterThan(4);
    expect(light.currentLimit).toBe(20); // 2 cores × 500 ms / 20 ms = 50, capped at 20
  });

  it('falls back when starts turn heavy: running jobs drain below the new bound before new grants', async () => {
    const sem = new Semaphore(2, { cores: 2 });
    const leases = await Promise.all(Array.from({ length: 2 }, () => sem.acquire()));
    leases[0]!.observeStartCpu?.(10); // light: the bound rises to 64
    const more = await Promise.all(Array.from({ length: 6 }, () => sem.acquire()));
    expect(sem.inUse).toBe(8);
    for (let i = 0; i < 20; i++) leases[1]!.observeStartCpu?.(1_000); // heavy now: back to the base of 2
    expect(sem.currentLimit).toBe(2);
    let granted = false;
    const waiter = sem.acquire().then((l) => {
      granted = true;
      return l;
    });
    for (const l of [...leases, ...more].slice(0, 6)) l.release();
    await new Promise((r) => setImmediate(r));
    expect(granted).toBe(false); // 2 still running: at the bound
    more[4]!.release();
    (await waiter).release();
    expect(granted).toBe(true);
    more[5]!.release();
    expect(sem.inUse).toBe(0);
  });

  it('a fixed semaphore offers no start-CPU report', async () => {
    const lease = await new Semaphore(2).acquire();
    expect(lease.observeStartCpu).toBeUndefined();
    lease.release();
  });
});
