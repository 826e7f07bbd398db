/**
 * The transitions a server actor emits (SPEC §9), and the reconciler's
 * announcement of each actor it spawns. The host used to read every server
 * actor's snapshots and count a change of state path or generation as a
 * transition; the emitted events must say exactly that: walked with
 * `xstate/graph` and replayed with the pure `transition()`, every step that
 * changes path or generation emits one `transition` carrying the new
 * snapshot's data, and no step emits more than one.
 */
import { describe, expect, it } from 'vitest';
import { getShortestPaths, getStateNodes } from 'xstate/graph';
import { createActor, initialTransition, transition, type AnyActorRef, type AnyEventObject, type SnapshotFrom, type StateValue } from 'xstate';
import { reasonOf, stateNameOf } from '../../machines/reason.js';
import { reconcilerMachine, serverSystemId } from '../../machines/reconciler.machine.js';
import { serverMachine, type ServerInput, type ServerTransition } from '../../machines/server.machine.js';
import type { DesiredServer } from '../../machines/types.js';
import { entry, flush, openGating, World } from './fixtures.js';

type Snap = SnapshotFrom<typeof serverMachine>;

/** `live.reconnecting.waiting` for `{ live: { reconnecting: 'waiting' } }`: how the host keyed snapshots. */
function pathOf(value: StateValue): string {
  if (typeof value === 'string') return value;
  const [key, inner] = Object.entries(value)[0]!;
  return `${key}.${pathOf(inner as StateValue)}`;
}

/** What the host made of a snapshot it had not seen before. */
function expected(s: Snap): ServerTransition {
  const { generation, attempt, lastError } = s.context;
  return {
    type: 'transition',
    state: stateNameOf(s),
    path: pathOf(s.value) as ServerTransition['path'],
    generation,
    attempt,
    reason: reasonOf(s),
    ...(lastError !== undefined ? { lastError } : {}),
  };
}

function emitted(actions: { type: string; params?: unknown }[]): ServerTransition[] {
  return actions.filter((a) => a.type === 'xstate.emit').map((a) => (a.params as { event: ServerTransition }).event);
}

const keyOfStep = (s: Snap) => `${pathOf(s.value)}#${s.context.generation}`;

const A = entry('srv', { fp: 'fA', hash: 'hA' });
const A_FILTER: DesiredServer = { ...A, hash: 'hA2', config: { ...A.config, includeTools: ['x'] } };
const B = entry('srv', { fp: 'fB', hash: 'hB' });
const A_LAZY: DesiredServer = { ...A, config: { ...A.config, startup: 'lazy', idleTimeoutMs: 1000 }, cached: true };
const A_OFF: DesiredServer = { ...A, hash: 'hA3', config: { ...A.config, disabled: true } };
const P = entry('srv', { scope: 'project', fp: 'fA', hash: 'hA' });

/** Events worth sending in `s`: the supervisor's, calls, holds and subscriptions, and config and gating edits. */
function eventsFor(s: Snap): AnyEventObject[] {
  const { generation, entry: e, gating: g } = s.context;
  const out: AnyEventObject[] = [];
  if (s.children.connect) {
    out.push(
      { type: 'xstate.done.actor.connect', output: { generation } },
      { type: 'xstate.error.actor.connect', error: new Error('refused') },
      { type: 'xstate.error.actor.connect', error: Object.assign(new Error('auth'), { code: 'needs_auth' }) },
    );
  }
  if (s.matches({ live: { reconnecting: 'waiting' } })) out.push({ type: 'xstate.after.retryDelay.server.live.reconnecting.waiting' });
  if (s.matches('fingerprint_changed')) out.push({ type: 'xstate.after.restartDelay.server.fingerprint_changed' });
  if (s.matches({ live: { connected: 'idle' } })) out.push({ type: 'xstate.after.idleDelay.server.live.connected.idle' });
  if (s.matches({ live: { connecting: 'starting' } })) out.push({ type: 'xstate.after.startDelay.server.live.connecting.starting' });
  if (s.context.calls < 1) out.push({ type: 'CALL_STARTED' });
  out.push(
    { type: 'CALL_ENDED' },
    { type: 'HOLD' },
    { type: 'RELEASE' },
    { type: 'SUBSCRIPTIONS', count: s.context.subscriptions > 0 ? 0 : 1 },
    { type: 'CONNECTION_LOST', generation, error: 'exited' },
    { type: 'ERROR_REPORTED', error: 'late', generation },
    { type: 'RECONNECT' },
    { type: 'AUTHENTICATED' },
    { type: 'REMOVE' },
    { type: 'UPDATE', entry: e, gating: g },
    { type: 'UPDATE', entry: e, gating: openGating({ excluded: ['srv'] }) },
    { type: 'UPDATE', entry: e, gating: openGating() },
  );
  for (const v of [A, A_FILTER, B, A_LAZY, A_OFF]) if (v.scope === e.scope && v !== e) out.push({ type: 'UPDATE', entry: v, gating: g });
  if (e.scope === 'project') out.push({ type: 'UPDATE', entry: e, gating: openGating({ approvals: { srv: { hash: e.hash, decision: 'approved' } } }) });
  return out;
}

function serialize(s: Snap): string {
  const c = s.context;
  const live = s.matches('live');
  return JSON.stringify({
    v: s.value,
    st: s.status,
    a: live ? c.attempt : undefined,
    calls: c.calls,
    held: c.held,
    sub: c.subscriptions,
    cached: c.cached,
    hash: c.entry.hash,
    startup: c.entry.config.startup,
    g: c.gating,
  });
}

/** Walk the graph from `input`; check every step of every path, plus one event from each end. Returns the steps checked. */
function walk(input: ServerInput): { steps: number; announced: number } {
  const paths = getShortestPaths(serverMachine, {
    input,
    serializeState: serialize,
    events: (s: Snap) => eventsFor(s) as never[],
    limit: 20_000,
  });
  let steps = 0;
  let announced = 0;
  const check = (prev: Snap | undefined, ev: AnyEventObject, next: Snap, actions: { type: string; params?: unknown }[]) => {
    steps++;
    const out = emitted(actions);
    const where = `${prev ? JSON.stringify(prev.value) : 'init'} --${ev.type}--> ${JSON.stringify(next.value)}`;
    expect(out.length, `at most one transition per step: ${where}`).toBeLessThanOrEqual(1);
    if (out.length === 1) expect(out[0], `the transition says what the snapshot shows: ${where}`).toEqual(expected(next));
    if (!prev || keyOfStep(prev) !== keyOfStep(next)) {
      expect(out.length, `a new state path or generation is announced: ${where}`).toBe(1);
      announced++;
    }
  };
  for (const p of paths) {
    let [snap, actions] = initialTransition(serverMachine, input);
    check(undefined, { type: 'xstate.init' }, snap, actions);
    const events = [...p.steps.slice(1).map((s) => s.event), ...eventsFor(p.state)];
    for (const [i, ev] of events.entries()) {
      const from = i < p.steps.length - 1 ? snap : p.state;
      [snap, actions] = transition(serverMachine, from, ev as never);
      check(from, ev, snap, actions);
      if (i >= p.steps.length - 1) snap = p.state;
    }
  }
  return { steps, announced };
}

describe('serverMachine transitions', { timeout: 600_000 }, () => {
  it('every leaf but the transient admission announces its own path', () => {
    const leaves = getStateNodes(serverMachine.root).filter((n) => n.type === 'atomic' || n.type === 'final');
    const context = { ...initialTransition(serverMachine, { name: 'x', entry: A, gating: openGating() })[0].context };
    const announcedPath = (n: (typeof leaves)[number]) =>
      n.entry
        .map((a) => a as { type?: string; params?: unknown })
        .filter((a) => a.type === 'announce')
        .map((a) => (typeof a.params === 'function' ? (a.params as (x: unknown) => { path: string })({ context, event: { type: 'x' } }).path : undefined));
    for (const n of leaves) expect(announcedPath(n), n.id).toEqual(n.path.join('.') === 'admission' ? [] : [n.path.join('.')]);
  });

  it('emits one transition exactly when the state path or the generation changes, with the new snapshot’s data', () => {
    const user = walk({ name: 'srv', entry: A, gating: openGating(), backoff: { attempts: 2 } });
    const gated = walk({ name: 'srv', entry: P, gating: openGating(), backoff: { attempts: 2 } });
    console.log(`[server transitions] ${user.steps + gated.steps} steps checked, ${user.announced + gated.announced} of them announced`);
    expect(user.announced).toBeGreaterThan(100);
    expect(gated.announced).toBeGreaterThan(100);
  }, 300_000);
});

describe('reconcilerMachine announces the actors it spawns', () => {
  it('before they start, so a listener hears every transition from the first; re-added and replaced ones too', async () => {
    const w = new World();
    const actor = createActor(reconcilerMachine.provide({ actors: { server: w.provide() } }), { input: { gating: openGating(), systemIds: true } });
    const heard: string[] = [];
    actor.on('server-spawned', ({ name }) => {
      const ref = actor.system.get(serverSystemId(name)) as AnyActorRef | undefined;
      heard.push(`spawned ${name}`);
      ref?.on('transition', (t: ServerTransition) => heard.push(`${name} ${t.path}#${t.generation}`));
    });
    actor.start();
    const a = entry('a');
    actor.send({ type: 'CONFIG', desired: { a, off: A_OFF }, gating: openGating() });
    await flush();
    expect(heard).toEqual(['spawned a', 'spawned off', 'a live.connecting.starting#1', 'off disabled#0', 'a live.connected.idle#1']);
    heard.length = 0;
    actor.send({ type: 'CONFIG', desired: { off: A_OFF }, gating: openGating() });
    actor.send({ type: 'CONFIG', desired: { a, off: A_OFF }, gating: openGating() });
    await flush();
    expect(heard).toEqual(['a removed#1', 'spawned a', 'a live.connecting.starting#1', 'a live.connected.idle#1']);
    heard.length = 0;
    // A child that ended on its own is replaced by the next reconcile.
    (actor.getSnapshot().children.a as AnyActorRef).send({ type: 'REMOVE' });
    actor.send({ type: 'GATING', gating: openGating({ excluded: ['zzz'] }) });
    await flush();
    expect(heard).toEqual(['a removed#1', 'spawned a', 'a live.connecting.starting#1', 'a live.connected.idle#1']);
    heard.length = 0;
    actor.send({ type: 'DISPOSE' });
    expect(heard.sort()).toEqual(['a removed#1', 'off removed#0']);
  });
});
