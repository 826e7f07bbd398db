/**
 * The idle stop (SPEC §12) against resource subscriptions (SPEC §13): a server
 * with at least one subscribed resource is never idle-stopped, and once the
 * last subscription ends `idleTimeoutMs` applies again. First the machine
 * alone (simulated clock), then the controller with real fixture servers:
 * states are polled, never timed.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createActor, SimulatedClock } from 'xstate';
import { stateNameOf } from '../../machines/reason.js';
import type { ServerStateName } from '../../machines/reason.js';
import { entry, flush, openGating, World } from '../machines/fixtures.js';
import { stdioFixtureConfig } from '../helpers/fixtures.js';
import { waitFor } from '../helpers/processes.js';
import { firstText, Harness, row, waitState } from './support.js';

describe('serverMachine: subscriptions keep a server in use', () => {
  const IDLE = 1_000;

  async function connectedServer(startup: 'eager' | 'lazy' = 'eager') {
    const w = new World();
    const clock = new SimulatedClock();
    const e = entry('s', { config: { command: 'node', args: ['s'], idleTimeoutMs: IDLE, startup } });
    const actor = createActor(w.provide(), { input: { name: 's', entry: e, gating: openGating() }, clock });
    actor.start();
    await flush();
    const state = (): ServerStateName => stateNameOf(actor.getSnapshot());
    return { w, clock, actor, state };
  }

  it('is never idle-stopped while subscribed; after the last unsubscribe the idle timer starts over', async () => {
    const { clock, actor, state } = await connectedServer();
    expect(state()).toBe('connected');
    actor.send({ type: 'SUBSCRIPTIONS', count: 1 });
    expect(actor.getSnapshot().matches({ live: { connected: 'busy' } })).toBe(true);
    clock.increment(IDLE * 10);
    await flush();
    expect(state()).toBe('connected');
    actor.send({ type: 'SUBSCRIPTIONS', count: 0 });
    expect(actor.getSnapshot().matches({ live: { connected: 'idle' } })).toBe(true);
    clock.increment(IDLE - 1);
    expect(state()).toBe('connected');
    clock.increment(1);
    expect(state()).toBe('dormant');
    actor.stop();
  });

  it('a call ending while subscribed leaves the server busy', async () => {
    const { clock, actor, state } = await connectedServer();
    actor.send({ type: 'CALL_STARTED' });
    actor.send({ type: 'SUBSCRIPTIONS', count: 2 });
    actor.send({ type: 'CALL_ENDED' });
    clock.increment(IDLE * 10);
    expect(state()).toBe('connected');
    expect(actor.getSnapshot().context.subscriptions).toBe(2);
    actor.stop();
  });

  it('a dormant server with subscriptions starts, and a lazy cache fill with subscriptions stays connected', async () => {
    const { w, clock, actor, state } = await connectedServer('lazy');
    // Lazy without a cache: connected once to fill it, then dormant.
    expect(state()).toBe('dormant');
    actor.send({ type: 'SUBSCRIPTIONS', count: 1 });
    await flush();
    expect(state()).toBe('connected');
    expect(w.connectCalls.map((c) => c.generation)).toEqual([1, 2]);
    clock.increment(IDLE * 10);
    expect(state()).toBe('connected');
    actor.stop();
  });
});

describe('controller: idle stop and subscriptions', () => {
  const h = new Harness();
  afterAll(() => h.cleanup());

  it('keeps a subscribed server connected past idleTimeoutMs while an unsubscribed one goes dormant; unsubscribing lets it go too', async () => {
    const { c } = await h.running({ kept: stdioFixtureConfig('resource-server'), idle: stdioFixtureConfig('resource-server') }, { listingCache: false, idleTimeoutMs: 300 });
    const unsubscribe = await c.subscribeResource('note://static/hello', () => {}, { servers: ['kept'] });
    // Started after the subscription: without the guard, "kept" would have gone dormant before "idle" does.
    await c.callTool('mcp__idle__subscribed', {});
    await waitState(c, 'idle', 'dormant');
    expect(row(c, 'kept').state).toBe('connected');
    const pid = row(c, 'kept').pid;
    expect(JSON.parse(firstText(await c.callTool('mcp__kept__subscribed', {})))).toEqual(['note://static/hello']);
    await unsubscribe();
    await waitState(c, 'kept', 'dormant');
    // Its resources stay listed while dormant; the process is gone.
    expect(c.resources(['kept']).map((r) => [r.uri, r.server])).toEqual([['note://static/hello', 'kept']]);
    await waitFor(() => !c.pids().includes(pid!), 'the idle-stopped process to exit');
  });

  it('subscribing to a resource of a dormant server wakes it and keeps it up', async () => {
    const { c } = await h.running({ sleepy: stdioFixtureConfig('resource-server') }, { listingCache: false, idleTimeoutMs: 300 });
    await waitState(c, 'sleepy', 'dormant');
    const updates: string[] = [];
    const unsubscribe = await c.subscribeResource('note://notes/7', (u) => updates.push(u.uri));
    expect(row(c, 'sleepy').state).toBe('connected');
    await c.callTool('mcp__sleepy__touch', { uri: 'note://notes/7' });
    await waitFor(() => updates.length === 1, 'the update of note://notes/7');
    await unsubscribe();
    await waitState(c, 'sleepy', 'dormant');
  });
});
