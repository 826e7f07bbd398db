/**
 * serverMachine run as a real actor against the simulated world: admission,
 * updates without churn, fingerprint changes, needs_auth, stale generations,
 * removal.
 */
import { describe, expect, it } from 'vitest';
import { createActor, SimulatedClock, type Actor } from 'xstate';
import { serverMachine, type ServerInput } from '../../machines/server.machine.js';
import { reasonOf, stateNameOf, type ServerStateName } from '../../machines/reason.js';
import type { DesiredServer, GatingState } from '../../machines/types.js';
import { approving, entry, flush, openGating, World } from './fixtures.js';

function start(world: World, input: ServerInput) {
  const clock = new SimulatedClock();
  const actor = createActor(world.provide(), { input, clock });
  const seen: ServerStateName[] = [];
  actor.subscribe((s) => {
    const name = stateNameOf(s);
    if (seen.at(-1) !== name) seen.push(name);
  });
  actor.start();
  return { actor, clock, seen };
}

const state = (actor: Actor<typeof serverMachine>) => stateNameOf(actor.getSnapshot());
const update = (entry: DesiredServer, gating: GatingState) => ({ type: 'UPDATE' as const, entry, gating });

describe('serverMachine as an actor', () => {
  it('connects an admitted server and registers the generation it was given', async () => {
    const w = new World();
    const { actor } = start(w, { name: 'a', entry: entry('a'), gating: openGating() });
    await flush();
    expect(state(actor)).toBe('connected');
    expect(w.connectCalls).toEqual([{ name: 'a', entry: entry('a'), generation: 1 }]);
    expect(w.tools.get('a')).toBe(1);
    expect(w.watching('a')).toBe(true);
    expect(reasonOf(actor.getSnapshot())).toBeUndefined();
  });

  it('keeps a gated server pending until its current hash is approved', async () => {
    const w = new World();
    const e = entry('p', { scope: 'project', hash: 'h1' });
    const { actor } = start(w, { name: 'p', entry: e, gating: openGating() });
    await flush();
    expect(state(actor)).toBe('pending_approval');
    // a decision for another hash does not count
    actor.send(update(e, openGating({ approvals: { p: { hash: 'h0', decision: 'approved' } } })));
    await flush();
    expect(state(actor)).toBe('pending_approval');
    expect(w.connectCalls).toEqual([]);
    actor.send(update(e, approving(e)));
    await flush();
    expect(state(actor)).toBe('connected');
    // rejecting it later disconnects and drops the tools
    actor.send(update(e, openGating({ approvals: { p: { hash: 'h1', decision: 'rejected' } } })));
    expect(state(actor)).toBe('rejected');
    expect(w.tools.has('p')).toBe(false);
    expect(w.connections.has('p')).toBe(false);
  });

  it('re-applies a filter change without reconnecting, and ignores an identical update', async () => {
    const w = new World();
    const e = entry('a', { fp: 'f', hash: 'h1' });
    const { actor, seen } = start(w, { name: 'a', entry: e, gating: openGating() });
    await flush();
    const filtered = { ...e, hash: 'h2', config: { ...e.config, includeTools: ['x'] } };
    actor.send(update(filtered, openGating()));
    await flush();
    expect(w.log).toEqual(['connect a#1', 'applyFilter a h2']);
    actor.send(update(filtered, openGating()));
    actor.send(update(filtered, openGating({ excluded: ['someone-else'] })));
    await flush();
    expect(w.log).toEqual(['connect a#1', 'applyFilter a h2']);
    expect(seen).toEqual(['connecting', 'connected']);
    expect(actor.getSnapshot().context.entry).toBe(filtered);
  });

  it('passes through fingerprint_changed on a connection change: old tools dropped, new generation connected', async () => {
    const w = new World();
    const e = entry('a', { fp: 'f1' });
    const { actor, clock, seen } = start(w, { name: 'a', entry: e, gating: openGating() });
    await flush();
    const e2 = entry('a', { fp: 'f2' });
    actor.send(update(e2, openGating()));
    expect(state(actor)).toBe('fingerprint_changed');
    expect(reasonOf(actor.getSnapshot())).toBe('reconnecting');
    expect(w.tools.has('a')).toBe(false);
    clock.increment(0);
    await flush();
    expect(seen).toEqual(['connecting', 'connected', 'fingerprint_changed', 'connecting', 'connected']);
    expect(w.connectCalls.map((c) => [c.generation, c.entry.fingerprint])).toEqual([
      [1, 'f1'],
      [2, 'f2'],
    ]);
    expect(w.tools.get('a')).toBe(2);
  });

  it('leaves the live states for a gating verdict and comes back when admitted again', async () => {
    const w = new World();
    const e = entry('a');
    const { actor } = start(w, { name: 'a', entry: e, gating: openGating() });
    await flush();
    for (const [gating, expected] of [
      [openGating({ excluded: ['a'] }), 'excluded'],
      [openGating({ allowed: [] }), 'not_allowed'],
      [openGating({ allowed: ['b'] }), 'not_allowed'],
    ] as const) {
      actor.send(update(e, gating));
      expect(state(actor)).toBe(expected);
      expect(w.tools.has('a')).toBe(false);
      expect(w.connections.has('a')).toBe(false);
    }
    actor.send(update({ ...e, hash: 'hd', config: { ...e.config, disabled: true } }, openGating()));
    expect(state(actor)).toBe('disabled');
    actor.send(update(e, openGating({ allowed: ['a'] })));
    await flush();
    expect(state(actor)).toBe('connected');
    expect(w.tools.get('a')).toBe(2);
  });

  it('rests in needs_auth without retrying until RECONNECT', async () => {
    const w = new World();
    w.failWith.set('a', Object.assign(new Error('401 from server'), { code: 'needs_auth' }));
    const { actor, clock } = start(w, { name: 'a', entry: entry('a'), gating: openGating() });
    await flush();
    expect(state(actor)).toBe('needs_auth');
    expect(actor.getSnapshot().context.lastError).toBe('401 from server');
    clock.increment(60_000);
    await flush();
    expect(w.connectCalls).toHaveLength(1);
    w.failWith.delete('a');
    actor.send({ type: 'RECONNECT' });
    await flush();
    expect(state(actor)).toBe('connected');
    expect(w.connectCalls).toHaveLength(2);
  });

  it('ignores late events of an older generation', async () => {
    const w = new World('manual');
    const e = entry('a', { fp: 'f1' });
    const { actor, clock } = start(w, { name: 'a', entry: e, gating: openGating() });
    // generation 1 is still connecting when the config changes
    actor.send(update(entry('a', { fp: 'f2' }), openGating()));
    clock.increment(0);
    expect(actor.getSnapshot().context.generation).toBe(2);
    w.settle('ok'); // generation 1 resolves late: its actor was stopped, the result is dropped
    await flush();
    expect(state(actor)).toBe('connecting');
    w.settle('ok');
    await flush();
    expect(state(actor)).toBe('connected');
    // a loss reported for generation 1 does not touch generation 2
    actor.send({ type: 'CONNECTION_LOST', generation: 1 });
    expect(state(actor)).toBe('connected');
    expect(actor.getSnapshot().context.attempt).toBe(0);
  });

  it('keeps a reported error as lastError without moving; a report about an older generation is ignored', async () => {
    const w = new World();
    const { actor, seen } = start(w, { name: 'a', entry: entry('a'), gating: openGating() });
    await flush();
    actor.send({ type: 'ERROR_REPORTED', error: 're-list after tools_changed failed: boom', generation: 1 });
    expect(actor.getSnapshot().context.lastError).toBe('re-list after tools_changed failed: boom');
    expect(seen).toEqual(['connecting', 'connected']);
    w.lose('a', { error: 'process exited' });
    await flush();
    expect(actor.getSnapshot().context).toMatchObject({ generation: 2, lastError: 'process exited' });
    actor.send({ type: 'ERROR_REPORTED', error: 'late', generation: 1 });
    expect(actor.getSnapshot().context.lastError).toBe('process exited');
    // Without a generation a report always counts (a conflict the registry holds now).
    actor.send({ type: 'ERROR_REPORTED', error: 'tool_conflict: pending' });
    expect(actor.getSnapshot().context.lastError).toBe('tool_conflict: pending');
    expect(state(actor)).toBe('connected');
  });

  it('drops tools and disconnects on REMOVE, and ends', async () => {
    const w = new World();
    const { actor } = start(w, { name: 'a', entry: entry('a'), gating: openGating() });
    await flush();
    actor.send({ type: 'REMOVE' });
    expect(actor.getSnapshot().status).toBe('done');
    expect(state(actor)).toBe('removed');
    expect(reasonOf(actor.getSnapshot())).toBe('removed');
    expect(w.teardowns('a')).toEqual(['dropTools a', 'disconnect a']);
    expect(w.tools.size + w.connections.size).toBe(0);
    expect(w.watching('a')).toBe(false);
  });

  it('uses harmless stubs when nothing is provided: connect fails, actions do nothing', async () => {
    const actor = createActor(serverMachine, { input: { name: 'a', entry: entry('a'), gating: openGating(), backoff: { attempts: 1 } } });
    actor.start();
    await flush();
    expect(stateNameOf(actor.getSnapshot())).toBe('failed');
    expect(actor.getSnapshot().context.lastError).toBe('no connect actor provided');
    actor.stop();
  });
  it('PARK stops a live server into dormant at once (tools kept, hold dropped); a later HOLD starts it again', async () => {
    const w = new World();
    const { actor } = start(w, { name: 'a', entry: entry('a'), gating: openGating(), lifecycle: { onDemand: true } });
    await flush();
    expect(state(actor)).toBe('dormant');
    actor.send({ type: 'HOLD' });
    await flush();
    expect(state(actor)).toBe('connected');
    actor.send({ type: 'PARK' });
    expect(state(actor)).toBe('dormant');
    expect(actor.getSnapshot().context.held).toBe(false);
    expect(w.connections.has('a')).toBe(false);
    expect(w.tools.has('a')).toBe(true);
    expect(reasonOf(actor.getSnapshot())).toBeUndefined();
    // Outside live it only drops the hold.
    actor.send({ type: 'HOLD' });
    await flush();
    expect(state(actor)).toBe('connected');
    expect(w.connectCalls).toHaveLength(2);
  });
});
