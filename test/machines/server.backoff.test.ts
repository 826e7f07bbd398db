/**
 * The supervisor's timing (SPEC §5) on a SimulatedClock: no test sleeps, the
 * clock is moved by hand and promise-based stubs are flushed as microtasks.
 */
import { describe, expect, it } from 'vitest';
import { createActor, SimulatedClock } from 'xstate';
import { backoffDelay, resolveBackoff, type ServerInput } from '../../machines/server.machine.js';
import { stateNameOf } from '../../machines/reason.js';
import { DEFAULT_BACKOFF } from '../../machines/types.js';
import { entry, flush, openGating, World } from './fixtures.js';

function start(world: World, input: Partial<ServerInput> = {}, machine = world.provide()) {
  const clock = new SimulatedClock();
  const actor = createActor(machine, { input: { name: 'a', entry: entry('a'), gating: openGating(), ...input }, clock });
  actor.start();
  return { actor, clock, state: () => stateNameOf(actor.getSnapshot()) };
}

/** Advance until the next connect call; returns how long that took (in ms, stepping 1 ms past each scheduled wait). */
async function waitForNextConnect(world: World, clock: SimulatedClock, delay: number): Promise<void> {
  const before = world.connectCalls.length;
  clock.increment(delay - 1);
  await flush();
  expect(world.connectCalls.length, `no retry before ${delay} ms`).toBe(before);
  clock.increment(1);
  await flush();
  expect(world.connectCalls.length, `a retry at ${delay} ms`).toBe(before + 1);
}

describe('supervisor backoff', () => {
  it('computes 500 → 30 000 ms doubling', () => {
    const p = resolveBackoff();
    expect(p).toEqual(DEFAULT_BACKOFF);
    expect([1, 2, 3, 4, 5, 6, 7, 8, 9, 20].map((n) => backoffDelay(p, n))).toEqual([500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000, 30000]);
    expect(resolveBackoff({ initialMs: 10 })).toEqual({ ...DEFAULT_BACKOFF, initialMs: 10 });
  });

  it('retries a failing start after 500, 1000, 2000 … 30 000 ms and rests in failed after 10 failures', async () => {
    const w = new World();
    w.failWith.set('a', new Error('spawn ENOENT'));
    const { actor, clock, state } = start(w);
    await flush();
    expect(w.connectCalls).toHaveLength(1);
    const delays = [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000];
    for (const [i, delay] of delays.entries()) {
      expect(state()).toBe('reconnecting');
      expect(actor.getSnapshot().context.attempt).toBe(i + 1);
      expect(actor.getSnapshot().context.nextDelayMs).toBe(delay);
      await waitForNextConnect(w, clock, delay);
    }
    expect(state()).toBe('failed');
    expect(w.connectCalls.map((c) => c.generation)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(actor.getSnapshot().context.lastError).toBe('spawn ENOENT');
    expect(w.teardowns('a')).toEqual(['dropTools a', 'disconnect a']);
    // it stays there
    clock.increment(10 * 60_000);
    await flush();
    expect(w.connectCalls).toHaveLength(10);
  });

  it('keeps the old tools while reconnecting and drops them when the budget is spent', async () => {
    const w = new World();
    const { clock, state } = start(w, { backoff: { attempts: 3 } });
    await flush();
    expect(w.tools.get('a')).toBe(1);
    w.failWith.set('a', new Error('refused'));
    w.lose('a', { error: 'process exited' });
    // The first loss is forgiven and retried at once; the failures after it count.
    await flush();
    expect(w.connectCalls).toHaveLength(2);
    expect(state()).toBe('reconnecting');
    expect(w.tools.get('a')).toBe(1);
    expect(w.teardowns('a')).toEqual([]);
    await waitForNextConnect(w, clock, 500);
    expect(state()).toBe('reconnecting');
    await waitForNextConnect(w, clock, 1000);
    expect(state()).toBe('failed');
    expect(w.tools.has('a')).toBe(false);
    expect(w.teardowns('a')).toEqual(['dropTools a', 'disconnect a']);
  });

  it('a lost connection gets the full 10 reconnect attempts: the loss itself is not counted', async () => {
    const w = new World();
    const { actor, clock, state } = start(w);
    await flush();
    w.failWith.set('a', new Error('refused'));
    w.lose('a', { error: 'process exited' });
    await flush();
    const delays = [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000];
    for (const delay of delays) {
      expect(state()).toBe('reconnecting');
      await waitForNextConnect(w, clock, delay);
    }
    expect(state()).toBe('failed');
    // one first connect + 10 reconnect attempts
    expect(w.connectCalls).toHaveLength(11);
    expect(actor.getSnapshot().context.attempt).toBe(10);
  });

  it('a crash loop still spends the budget: only the first loss is forgiven', async () => {
    const w = new World();
    const { clock, state } = start(w, { backoff: { attempts: 3 } });
    await flush();
    w.lose('a'); // forgiven: at once
    await flush();
    expect(w.connectCalls).toHaveLength(2);
    expect(state()).toBe('connected');
    w.lose('a'); // counted: 1
    await waitForNextConnect(w, clock, 500);
    expect(state()).toBe('connected');
    w.lose('a'); // counted: 2
    await waitForNextConnect(w, clock, 1000);
    w.lose('a'); // counted: 3 → budget spent
    await flush();
    expect(state()).toBe('failed');
    expect(w.connectCalls).toHaveLength(4);
  });

  it('an error marked permanent goes straight to failed without spending the budget', async () => {
    const w = new World();
    w.failWith.set('a', Object.assign(new Error('command not found: "nope"'), { permanent: true }));
    const { actor, clock, state } = start(w);
    await flush();
    expect(state()).toBe('failed');
    expect(actor.getSnapshot().context).toMatchObject({ attempt: 0, lastError: 'command not found: "nope"' });
    clock.increment(60_000);
    await flush();
    expect(w.connectCalls).toHaveLength(1);
  });

  it('a permanent loss (a rejected re-listing) goes straight to failed and drops the tools', async () => {
    const w = new World();
    const { state } = start(w);
    await flush();
    expect(w.tools.get('a')).toBe(1);
    w.lose('a', { permanent: true, error: 'tool_conflict' });
    await flush();
    expect(state()).toBe('failed');
    expect(w.tools.has('a')).toBe(false);
    expect(w.connectCalls).toHaveLength(1);
  });

  it('after 30 s up, resets the budget and reconnects the next loss at once', async () => {
    const w = new World();
    const { actor, clock, state } = start(w);
    await flush();
    // flap so the budget is partly used: the first loss is forgiven, the next ones count
    w.lose('a');
    await flush();
    for (const delay of [500, 1000]) {
      w.lose('a');
      await waitForNextConnect(w, clock, delay);
    }
    expect(actor.getSnapshot().context.attempt).toBe(2);
    clock.increment(30_000);
    expect(actor.getSnapshot().context).toMatchObject({ attempt: 0, healthy: true, lossForgiven: false });
    w.lose('a');
    await flush();
    expect(w.connectCalls).toHaveLength(5);
    expect(state()).toBe('connected');
    expect(actor.getSnapshot().context).toMatchObject({ attempt: 0, healthy: false, lossForgiven: true });
  });

  it('reconnects the first loss at once and waits 500 ms after a second loss before 30 s', async () => {
    const w = new World();
    const { actor, clock, state } = start(w);
    await flush();
    clock.increment(29_999);
    w.lose('a');
    expect(actor.getSnapshot().context.nextDelayMs).toBe(0);
    await flush();
    expect(state()).toBe('connected');
    clock.increment(1_000);
    w.lose('a');
    expect(state()).toBe('reconnecting');
    expect(actor.getSnapshot().context.nextDelayMs).toBe(500);
    await waitForNextConnect(w, clock, 500);
    expect(state()).toBe('connected');
  });

  it('reconnects at once when the HTTP session was lost', async () => {
    const w = new World();
    const { state } = start(w);
    await flush();
    w.lose('a', { sessionLost: true });
    await flush();
    expect(w.connectCalls).toHaveLength(2);
    expect(state()).toBe('connected');
  });

  it('honours input.backoff and provided delays', async () => {
    const w = new World();
    w.failWith.set('a', new Error('nope'));
    const { clock, state } = start(w, { backoff: { initialMs: 100, maxMs: 250, attempts: 4 } });
    await flush();
    for (const delay of [100, 200, 250]) await waitForNextConnect(w, clock, delay);
    expect(state()).toBe('failed');

    const w2 = new World();
    w2.failWith.set('a', new Error('nope'));
    const fixed = w2.provide().provide({ delays: { retryDelay: 7 } });
    const second = start(w2, { backoff: { attempts: 3 } }, fixed);
    await flush();
    for (const delay of [7, 7]) await waitForNextConnect(w2, second.clock, delay);
    expect(second.state()).toBe('failed');
  });

  it('RECONNECT from failed starts over with a fresh budget; while waiting it retries now', async () => {
    const w = new World();
    w.failWith.set('a', new Error('down'));
    const { actor, clock, state } = start(w, { backoff: { attempts: 2 } });
    await flush();
    await waitForNextConnect(w, clock, 500);
    expect(state()).toBe('failed');
    actor.send({ type: 'RECONNECT' });
    await flush();
    expect(w.connectCalls).toHaveLength(3);
    expect(state()).toBe('reconnecting');
    expect(actor.getSnapshot().context.attempt).toBe(1);
    // waiting 500 ms: RECONNECT does not wait
    w.failWith.delete('a');
    actor.send({ type: 'RECONNECT' });
    await flush();
    expect(w.connectCalls).toHaveLength(4);
    expect(state()).toBe('connected');
    expect(actor.getSnapshot().context.attempt).toBe(0);
  });
});


