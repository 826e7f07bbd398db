/**
 * reconcilerMachine as a real actor with real serverMachine children (I/O
 * simulated): level-based reconcile, removal and re-adding, no churn, DISPOSE.
 */
import { describe, expect, it } from 'vitest';
import { createActor, SimulatedClock, type AnyActorRef, type InspectionEvent } from 'xstate';
import { reconcilerMachine, sameEntry, sameGating, type ReconcilerInput } from '../../machines/reconciler.machine.js';
import { stateNameOf } from '../../machines/reason.js';
import type { DesiredMap, GatingState } from '../../machines/types.js';
import { approving, entry, flush, openGating, World } from './fixtures.js';

function start(world: World, input: ReconcilerInput = {}) {
  const clock = new SimulatedClock();
  const toChildren: { to: string; type: string }[] = [];
  const actor = createActor(reconcilerMachine.provide({ actors: { server: world.provide() } }), {
    input,
    clock,
    inspect: (ev: InspectionEvent) => {
      if (ev.type !== '@xstate.event') return;
      const target = ev.actorRef as AnyActorRef;
      if (ev.sourceRef === actor && target !== actor) toChildren.push({ to: target.id, type: ev.event.type });
    },
  });
  actor.start();
  const states = () =>
    Object.fromEntries(Object.entries(actor.getSnapshot().children).map(([n, ref]) => [n, stateNameOf((ref as AnyActorRef).getSnapshot())]));
  return { actor, clock, toChildren, states };
}

/** Start with `desired` under open gating (plus `input`) on `world`, and let every child settle. */
async function settled(desired: DesiredMap, input: ReconcilerInput = {}, world = new World()) {
  const started = start(world, { desired, gating: openGating(), ...input });
  await flush();
  return { w: world, ...started };
}

const a = entry('a');
const b = entry('b');
const p = entry('p', { scope: 'project', hash: 'hp' });
const config = (desired: DesiredMap, gating: GatingState = openGating()) => ({ type: 'CONFIG' as const, desired, gating });

describe('reconcilerMachine', () => {
  it('spawns one child per desired server, named after it', async () => {
    const w = new World();
    const { actor, states } = start(w, { desired: { a }, gating: openGating() });
    actor.send(config({ a, b }));
    await flush();
    expect(states()).toEqual({ a: 'connected', b: 'connected' });
    expect(Object.keys(actor.getSnapshot().context.servers).sort()).toEqual(['a', 'b']);
    expect(actor.getSnapshot().children.a).toBe(actor.getSnapshot().context.servers.a);
  });

  it('running the same CONFIG twice sends nothing to the children', async () => {
    const w = new World();
    const { actor, toChildren } = start(w);
    actor.send(config({ a, b }));
    await flush();
    const before = [...w.log];
    const snapshots = Object.values(actor.getSnapshot().children).map((r) => (r as AnyActorRef).getSnapshot());
    toChildren.length = 0;
    // equal data in new objects, and gating lists in another order
    actor.send(config({ b: { ...b }, a: { ...a } }, { ...openGating(), excluded: [] }));
    actor.send(config({ a, b }));
    await flush();
    expect(toChildren).toEqual([]);
    expect(w.log).toEqual(before);
    expect(Object.values(actor.getSnapshot().children).map((r) => (r as AnyActorRef).getSnapshot())).toEqual(snapshots);
  });

  it('removes a server: its tools are dropped and it disconnects, then its actor is gone and its name remembered', async () => {
    const { w, actor, toChildren } = await settled({ a, b });
    const child = actor.getSnapshot().children.a as AnyActorRef;
    toChildren.length = 0;
    actor.send(config({ b }));
    expect(toChildren).toEqual([{ to: 'a', type: 'REMOVE' }]);
    expect(w.teardowns('a')).toEqual(['dropTools a', 'disconnect a']);
    expect(w.teardowns('b')).toEqual([]);
    expect(w.tools.has('a')).toBe(false);
    expect(w.connections.has('a')).toBe(false);
    expect(actor.getSnapshot().children.a).toBeUndefined();
    expect(actor.getSnapshot().context.servers.a).toBeUndefined();
    expect(child.getSnapshot().status).not.toBe('active');
    expect(actor.getSnapshot().context.removed).toEqual(['a']);
  });

  it('removing and re-adding the same name in consecutive events works (no duplicate actor id)', async () => {
    const { w, actor, states } = await settled({ a });
    const first = actor.getSnapshot().children.a;
    // no flush between the events: the old child is still being torn down
    actor.send(config({}));
    actor.send(config({ a }));
    actor.send(config({}));
    actor.send(config({ a }));
    expect(actor.getSnapshot().status).toBe('active');
    await flush();
    expect(states()).toEqual({ a: 'connected' });
    expect(actor.getSnapshot().children.a).not.toBe(first);
    expect(actor.getSnapshot().context.removed).toEqual([]);
    expect(w.teardowns('a')).toEqual(['dropTools a', 'disconnect a', 'dropTools a', 'disconnect a']);
    expect(w.connectCalls.map((c) => c.name)).toEqual(['a', 'a', 'a']);
  });

  it('respawns a desired child that ended on its own', async () => {
    const { w, actor, states } = await settled({ a });
    (actor.getSnapshot().children.a as AnyActorRef).send({ type: 'REMOVE' });
    // any reconcile notices it
    actor.send({ type: 'GATING', gating: openGating({ excluded: ['zzz'] }) });
    await flush();
    expect(states()).toEqual({ a: 'connected' });
    expect(w.connectCalls).toHaveLength(2);
  });

  it('survives a child whose provided action throws, and replaces that child', async () => {
    const w = new World();
    const server = w.provide().provide({
      actions: {
        applyFilter: () => {
          throw new Error('registry exploded');
        },
      },
    });
    const actor = createActor(reconcilerMachine.provide({ actors: { server } }), { input: { desired: { a, b }, gating: openGating() } });
    actor.start();
    await flush();
    const first = actor.getSnapshot().children.a;
    actor.send(config({ a: { ...a, hash: 'a-filter' }, b }));
    await flush();
    expect(actor.getSnapshot().status).toBe('active');
    const children = actor.getSnapshot().children;
    expect(children.a).not.toBe(first);
    expect(stateNameOf((children.a as AnyActorRef).getSnapshot())).toBe('connected');
    expect(stateNameOf((children.b as AnyActorRef).getSnapshot())).toBe('connected');
    expect(w.teardowns('b')).toEqual([]);
    actor.stop();
  });

  it('updates only the child whose entry changed; a filter edit does not reconnect', async () => {
    const { w, actor, toChildren } = await settled({ a, b });
    toChildren.length = 0;
    const a2 = { ...a, hash: 'a-filter', config: { ...a.config, excludeTools: ['x'] } };
    actor.send(config({ a: a2, b }));
    await flush();
    expect(toChildren).toEqual([{ to: 'a', type: 'UPDATE' }]);
    expect(w.log.filter((l) => !l.startsWith('connect'))).toEqual(['applyFilter a a-filter']);
    expect(w.connectCalls).toHaveLength(2);
  });

  it('a fingerprint change reconnects that server only', async () => {
    const { w, actor, clock, states } = await settled({ a, b });
    actor.send(config({ a: entry('a', { fp: 'other' }), b }));
    expect(states()).toEqual({ a: 'fingerprint_changed', b: 'connected' });
    clock.increment(0);
    await flush();
    expect(states()).toEqual({ a: 'connected', b: 'connected' });
    // The generation each server's tools are registered at: a reconnected once, b never.
    expect(Object.fromEntries(w.tools)).toEqual({ a: 2, b: 1 });
  });

  it('a gating change re-admits every child without churn for the unaffected ones', async () => {
    const { w, actor, states } = await settled({ a, b });
    actor.send({ type: 'GATING', gating: openGating({ excluded: ['a'] }) });
    expect(states()).toEqual({ a: 'excluded', b: 'connected' });
    expect(w.teardowns('b')).toEqual([]);
    actor.send({ type: 'GATING', gating: openGating() });
    await flush();
    expect(states()).toEqual({ a: 'connected', b: 'connected' });
    // The generation each server's tools are registered at: a reconnected once, b never.
    expect(Object.fromEntries(w.tools)).toEqual({ a: 2, b: 1 });
  });

  it('APPROVAL and TRUST update the gating and re-admit', async () => {
    const { w, actor, states } = await settled({ a, p });
    expect(states()).toEqual({ a: 'connected', p: 'pending_approval' });
    actor.send({ type: 'APPROVAL', name: 'p', decision: { hash: 'hp', decision: 'approved' } });
    await flush();
    expect(states()).toEqual({ a: 'connected', p: 'connected' });
    expect(actor.getSnapshot().context.gating).toEqual(approving(p));
    actor.send({ type: 'TRUST', trusted: false });
    expect(states()).toEqual({ a: 'connected', p: 'untrusted' });
    actor.send({ type: 'TRUST', trusted: true });
    await flush();
    expect(states()).toEqual({ a: 'connected', p: 'connected' });
    actor.send({ type: 'APPROVAL', name: 'p', decision: undefined });
    expect(states()).toEqual({ a: 'connected', p: 'pending_approval' });
    expect(w.tools.has('p')).toBe(false);
    expect(w.teardowns('a')).toEqual([]);
  });

  it('RECONNECT reaches the named child', async () => {
    const w = new World();
    w.failWith.set('a', new Error('down'));
    const { actor, states } = await settled({ a }, { backoff: { attempts: 1 } }, w);
    expect(states()).toEqual({ a: 'failed' });
    w.failWith.delete('a');
    actor.send({ type: 'RECONNECT', name: 'a' });
    actor.send({ type: 'RECONNECT', name: 'nobody' });
    await flush();
    expect(states()).toEqual({ a: 'connected' });
  });

  it('DISPOSE stops every child and ends, marking none removed', async () => {
    const { w, actor } = await settled({ a, b, p });
    actor.send({ type: 'DISPOSE' });
    expect(actor.getSnapshot().status).toBe('done');
    expect(actor.getSnapshot().value).toBe('disposed');
    expect(w.teardowns('a')).toEqual(['dropTools a', 'disconnect a']);
    expect(w.teardowns('b')).toEqual(['dropTools b', 'disconnect b']);
    expect(w.tools.size + w.connections.size).toBe(0);
    // Ending the children removes nothing from the config: nothing is reported removed.
    expect(actor.getSnapshot().context.removed).toEqual([]);
  });

  it('asks for the cached listing of each admitted, cached newcomer before its child exists; never for a gated one', async () => {
    const w = new World();
    const asked: Array<{ name: string; children: string[] }> = [];
    const cachedA = { ...entry('a'), cached: true };
    const cachedP = { ...p, cached: true };
    const actor = createActor(
      reconcilerMachine.provide({
        actors: { server: w.provide() },
        actions: { restoreCached: (_args, params) => asked.push({ name: params.name, children: Object.keys(actor.getSnapshot().children) }) },
      }),
      { input: {} },
    );
    actor.start();
    actor.send(config({ a: cachedA, b, p: cachedP }));
    await flush();
    // `b` has nothing cached and `p` waits for approval: neither is asked for.
    expect(asked).toEqual([{ name: 'a', children: [] }]);
    actor.send(config({ a: cachedA, b, p: cachedP }, approving(p)));
    await flush();
    // An approval reaches a child that already exists: its own `live` entry restores what is cached.
    expect(asked.map((x) => x.name)).toEqual(['a']);
    actor.stop();
  });
});

describe('sameEntry / sameGating', () => {
  it('compare what admission and connection depend on', () => {
    expect(sameEntry(a, { ...a })).toBe(true);
    expect(sameEntry(a, { ...a, hash: 'x' })).toBe(false);
    expect(sameEntry(a, { ...a, scope: 'project' })).toBe(false);
    expect(sameGating(openGating({ excluded: ['x', 'y'] }), openGating({ excluded: ['y', 'x', 'x'] }))).toBe(true);
    expect(sameGating(openGating(), openGating({ allowed: [] }))).toBe(false);
    expect(sameGating(openGating({ allowed: ['a'] }), openGating({ allowed: ['b'] }))).toBe(false);
    expect(sameGating(openGating(), openGating({ trusted: false }))).toBe(false);
    expect(sameGating(approving(p), openGating())).toBe(false);
    expect(sameGating(approving(p), approving({ ...p, hash: 'other' }))).toBe(false);
  });
});
