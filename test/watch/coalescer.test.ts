import { describe, expect, it } from 'vitest';
import { ReloadCoalescer } from '../../src/watch/coalescer.js';

/** A run the test finishes by hand, so no timing is involved. */
function gate(): { promise: Promise<void>; open: () => void; fail: (err: Error) => void } {
  let open!: () => void;
  let fail!: (err: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    open = res;
    fail = rej;
  });
  return { promise, open, fail };
}

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('ReloadCoalescer', () => {
  it('runs a request at once when idle', async () => {
    let runs = 0;
    const c = new ReloadCoalescer(async () => {
      runs++;
    });
    await c.request();
    expect(runs).toBe(1);
  });

  it('folds 10 requests during a slow run into exactly one more run', async () => {
    const gates = [gate(), gate()];
    let runs = 0;
    let concurrent = 0;
    let maxConcurrent = 0;
    const c = new ReloadCoalescer(async () => {
      const g = gates[runs++]!;
      concurrent++;
      maxConcurrent = Math.max(maxConcurrent, concurrent);
      await g.promise;
      concurrent--;
    });
    const first = c.request();
    await tick();
    const during = Array.from({ length: 10 }, () => c.request());
    await tick();
    expect(runs).toBe(1);
    gates[0]!.open();
    await first;
    await tick();
    expect(runs).toBe(2);
    let settled = false;
    void Promise.all(during).then(() => (settled = true));
    await tick();
    expect(settled).toBe(false); // they wait for the follow-up run, not the first one
    gates[1]!.open();
    await Promise.all(during);
    await c.idle();
    expect(runs).toBe(2);
    expect(maxConcurrent).toBe(1);
  });

  it("rejects the failing run's callers only, and the next request runs again", async () => {
    const g = gate();
    const results: Array<'ok' | Error> = [];
    let runs = 0;
    const c = new ReloadCoalescer(async () => {
      runs++;
      if (runs === 1) await g.promise;
      if (runs === 2) throw new Error('parse failed');
    });
    const first = c.request();
    await tick();
    const second = [c.request(), c.request()];
    g.open();
    await expect(first).resolves.toBeUndefined();
    for (const p of second) await expect(p).rejects.toThrow('parse failed');
    await c.idle();
    expect(runs).toBe(2);
    // Not stuck: a later request runs and succeeds.
    await c.request().then(() => results.push('ok'));
    expect(runs).toBe(3);
    expect(results).toEqual(['ok']);
  });

  it('a synchronous throw in run also rejects and leaves it usable', async () => {
    let runs = 0;
    const c = new ReloadCoalescer(() => {
      runs++;
      if (runs === 1) throw new Error('sync boom');
      return Promise.resolve();
    });
    await expect(c.request()).rejects.toThrow('sync boom');
    await expect(c.request()).resolves.toBeUndefined();
    expect(runs).toBe(2);
  });

  it('idle() waits for the run and its follow-up', async () => {
    const gates = [gate(), gate()];
    let runs = 0;
    let finished = 0;
    const c = new ReloadCoalescer(async () => {
      await gates[runs++]!.promise;
      finished++;
    });
    void c.request();
    await tick();
    void c.request();
    let idle = false;
    const waiting = c.idle().then(() => (idle = true));
    gates[0]!.open();
    await tick();
    await tick();
    expect(idle).toBe(false);
    gates[1]!.open();
    await waiting;
    expect(finished).toBe(2);
  });

  it('after dispose(), requests resolve without running and a pending follow-up is dropped', async () => {
    const g = gate();
    let runs = 0;
    const c = new ReloadCoalescer(async () => {
      runs++;
      await g.promise;
    });
    const first = c.request();
    await tick();
    const followUp = c.request();
    c.dispose();
    await expect(followUp).resolves.toBeUndefined();
    await expect(c.request()).resolves.toBeUndefined();
    g.open();
    await first;
    await c.idle();
    expect(runs).toBe(1);
  });
});
