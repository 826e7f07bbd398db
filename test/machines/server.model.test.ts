/**
 * Model-based tests of the REAL serverMachine (TESTING.md §2, way 1): paths
 * are generated with `xstate/graph` over synthetic events — including the
 * machine's own `xstate.done.actor.connect`, `xstate.error.actor.connect` and
 * `xstate.after.*` events — and replayed with the pure `transition()`, whose
 * returned actions drive a simulated connection and tool registry. Every
 * step of every path is checked against the invariants.
 */
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import { getShortestPaths, getSimplePaths, getStateNodes, type StatePath } from 'xstate/graph';
import { initialTransition, transition, type AnyEventObject, type ExecutableActionsFrom, type SnapshotFrom } from 'xstate';
import { admissionOf, approvalStateOf, isGated } from '../../machines/admission.js';
import { serverMachine, type ServerInput } from '../../machines/server.machine.js';
import { holdsTools, isLive, isStartingSlowly, publicStatusOf, reasonOf, SERVER_STATE_NAMES, stateNameOf, type ServerStateName } from '../../machines/reason.js';
import type { DesiredServer, GatingState, ServerConfig } from '../../machines/types.js';
import { reconcilerMachine } from '../../machines/reconciler.machine.js';
import { entry, openGating } from './fixtures.js';

type Machine = typeof serverMachine;
type Snap = SnapshotFrom<Machine>;
type Action = ExecutableActionsFrom<Machine>;

const NAME = 'srv';
const AFTER_RETRY = 'xstate.after.retryDelay.server.live.reconnecting.waiting';
const AFTER_HEALTHY = 'xstate.after.healthyDelay.server.live.connected';
const AFTER_RESTART = 'xstate.after.restartDelay.server.fingerprint_changed';
const AFTER_IDLE = 'xstate.after.idleDelay.server.live.connected.idle';
const AFTER_START = 'xstate.after.startDelay.server.live.connecting.starting';
/** Fingerprints whose listing the simulated cache holds from the start (the controller sets `entry.cached` from it). */
const CACHED_AT_START = new Set(['fC']);

/**
 * The entry variants a path can switch between: `A` (the base), `A_filter`
 * (same fingerprint, other includeTools: new hash), `B` (other fingerprint),
 * `A_disabled` (disabled: true, same fingerprint, new hash), `A_lazy`
 * (startup lazy with an idle timeout: same fingerprint AND same hash, as
 * neither field is hashed) and `C_lazy` (another fingerprint, lazy, whose
 * listing is cached: it goes `dormant` without connecting).
 */
function variants(scope: 'project' | 'user'): Record<string, DesiredServer> {
  const make = (fp: string, hash: string, config: ServerConfig, cached?: boolean) => ({
    ...entry(NAME, { scope, fp, hash }),
    config,
    ...(cached ? { cached } : {}),
  });
  return {
    A: make('fA', 'hA', { command: 'node', args: ['a'] }),
    A_filter: make('fA', 'hA_filter', { command: 'node', args: ['a'], includeTools: ['only'] }),
    B: make('fB', 'hB', { command: 'node', args: ['b'] }),
    A_disabled: make('fA', 'hA_disabled', { command: 'node', args: ['a'], disabled: true }),
    A_lazy: make('fA', 'hA', { command: 'node', args: ['a'], startup: 'lazy', idleTimeoutMs: 60_000 }),
    C_lazy: make('fC', 'hC', { command: 'node', args: ['c'], startup: 'lazy' }, CACHED_AT_START.has('fC')),
  };
}

/** Gating profiles a path can switch between (decisions are kept across them). */
const PROFILES: Record<string, Omit<GatingState, 'approvals'>> = {
  open: { excluded: [], trusted: true },
  excluded: { excluded: [NAME], trusted: true },
  not_allowed: { excluded: [], trusted: true, allowed: ['other'] },
  deny_all: { excluded: [], trusted: true, allowed: [] },
  untrusted: { excluded: [], trusted: false },
};

const EXPECTED_REASON: Record<ServerStateName, string | undefined> = {
  pending_approval: 'pending_approval',
  rejected: 'rejected',
  excluded: 'excluded',
  not_allowed: 'not_allowed',
  disabled: 'disabled',
  untrusted: 'untrusted',
  connecting: undefined,
  connected: undefined,
  dormant: undefined,
  fingerprint_changed: 'reconnecting',
  reconnecting: 'reconnecting',
  needs_auth: 'needs_auth',
  failed: 'failed',
  removed: 'removed',
};
const EXPECTED_STATUS: Record<ServerStateName, string> = {
  pending_approval: 'pending',
  rejected: 'disabled',
  excluded: 'disabled',
  not_allowed: 'disabled',
  disabled: 'disabled',
  untrusted: 'disabled',
  connecting: 'connecting',
  connected: 'connected',
  dormant: 'dormant',
  fingerprint_changed: 'connecting',
  reconnecting: 'connecting',
  needs_auth: 'needs-auth',
  failed: 'failed',
  removed: 'disabled',
};
const VERDICT_STATES = new Set<ServerStateName>(['pending_approval', 'rejected', 'excluded', 'not_allowed', 'disabled', 'untrusted']);

const authError = Object.assign(new Error('authorization required'), { code: 'needs_auth' });
const permanentError = Object.assign(new Error('command not found: "nope"'), { permanent: true });

/** The error or loss says retrying cannot help: it may send the server to `failed` at once. */
function isPermanentEvent(ev: AnyEventObject): boolean {
  return (ev as { permanent?: boolean }).permanent === true || (ev as { error?: { permanent?: boolean } }).error?.permanent === true;
}

type Options = { gatingEvents: boolean; entryEvents: boolean; callEvents?: boolean; variants: Record<string, DesiredServer> };

/** Every event worth sending in `s`, built from its context so the graph stays finite. */
function eventsFor(s: Snap, opts: Options): AnyEventObject[] {
  const { generation, entry: e, gating: g } = s.context;
  const upd = (entry: DesiredServer, gating: GatingState) => ({ type: 'UPDATE', entry, gating });
  const out: AnyEventObject[] = [];
  // The connect actor's own events exist only while it runs (an unhandled actor error would fail the machine).
  if (s.children.connect) {
    out.push(
      { type: 'xstate.done.actor.connect', output: { generation }, rel: 'current' },
      { type: 'xstate.done.actor.connect', output: { generation: generation - 1 }, rel: 'stale' },
      { type: 'xstate.error.actor.connect', error: new Error('connection refused') },
      { type: 'xstate.error.actor.connect', error: authError },
      { type: 'xstate.error.actor.connect', error: permanentError },
    );
  }
  // Likewise a delayed event fires only while its state is active (leaving the state cancels it).
  if (subState(s) === 'waiting') out.push({ type: AFTER_RETRY });
  if (s.matches({ live: 'connected' })) out.push({ type: AFTER_HEALTHY });
  if (s.matches('fingerprint_changed')) out.push({ type: AFTER_RESTART });
  if (s.matches({ live: { connected: 'idle' } })) out.push({ type: AFTER_IDLE });
  if (s.matches({ live: { connecting: 'starting' } })) out.push({ type: AFTER_START });
  // Tool calls: the wake of a dormant server and the idle bookkeeping (two at once is enough to overlap).
  if (opts.callEvents !== false) {
    if (s.context.calls < 2) out.push({ type: 'CALL_STARTED' });
    out.push({ type: 'CALL_ENDED' });
  }
  out.push(
    { type: 'CONNECTION_LOST', generation, error: 'process exited', rel: 'current' },
    { type: 'CONNECTION_LOST', generation, sessionLost: true, rel: 'current' },
    { type: 'CONNECTION_LOST', generation, permanent: true, error: 'tool_conflict', rel: 'current' },
    { type: 'CONNECTION_LOST', generation: generation - 1, rel: 'stale' },
    // Errors the controller reports (a failed re-list, a refused filter, a pending conflict): current, stale, untagged.
    { type: 'ERROR_REPORTED', error: 're-list failed', generation, rel: 'current' },
    { type: 'ERROR_REPORTED', error: 'late re-list failed', generation: generation - 1, rel: 'stale' },
    { type: 'ERROR_REPORTED', error: 'tool_conflict: pending' },
    upd(e, g),
    { type: 'RECONNECT' },
    { type: 'AUTHENTICATED' },
    { type: 'REMOVE' },
  );
  if (opts.entryEvents) {
    for (const v of Object.values(opts.variants)) if (v.hash !== e.hash || v.config.startup !== e.config.startup) out.push(upd(v, g));
  }
  if (opts.gatingEvents) {
    for (const profile of Object.values(PROFILES)) out.push(upd(e, { ...profile, approvals: g.approvals }));
  }
  if (opts.gatingEvents && isGated(e)) {
    out.push(
      upd(e, { ...g, approvals: { [NAME]: { hash: e.hash, decision: 'approved' } } }),
      upd(e, { ...g, approvals: { [NAME]: { hash: e.hash, decision: 'rejected' } } }),
      upd(e, { ...g, approvals: {} }),
    );
  }
  return out;
}

/**
 * Abstract state key: everything that decides behaviour except the
 * generation counter (unbounded), decisions for hashes other than the
 * current one, and the budget outside the live states. Keeps the graph
 * finite and small.
 */
function keyOf(s: Snap): string {
  const { attempt, healthy, entry: e, gating: g, cached, calls } = s.context;
  // Outside the live states the budget is dead data: every way back in goes through admission, which resets it.
  const live = s.matches('live');
  return JSON.stringify({
    v: s.value,
    st: s.status,
    attempt: live ? attempt : undefined,
    healthy: live ? healthy : undefined,
    calls: live ? calls : undefined,
    cached,
    hash: e.hash,
    startup: e.config.startup,
    excluded: g.excluded,
    allowed: g.allowed,
    trusted: g.trusted,
    approval: approvalStateOf(e, g),
  });
}

/** Connection and registry as the provided actors and actions would leave them. */
interface World {
  /** Generation of the connect attempt in flight. */
  opening?: number;
  /** Generation of the open client. */
  conn?: number;
  /** Generation whose tools are registered, or `cached` for a listing restored from the cache. */
  tools?: number | 'cached';
  /** Fingerprints the listing cache holds (a successful connect adds its own). */
  cache: ReadonlySet<string>;
}

/** Whether `a` stops the invoked child `id` (stopChild is not in the machine's own action union). */
function stops(a: Action, id: string): boolean {
  return (a.type as string) === 'xstate.stopChild' && (a.params as { id?: string } | undefined)?.id === id;
}

function isConnectDone(ev: AnyEventObject): ev is AnyEventObject & { output: { generation: number } } {
  return ev.type === 'xstate.done.actor.connect';
}

/** What the outside world does around one macrostep: the event's own effect, then the machine's actions. */
function applyStep(w: World, ev: AnyEventObject, actions: Action[], prev?: Snap): World {
  const next = { ...w };
  // A real connect actor commits its generation (and caches its listing) before resolving; only the in-flight attempt can resolve.
  if (isConnectDone(ev) && ev.output.generation === w.opening) {
    next.conn = ev.output.generation;
    next.tools = ev.output.generation;
    if (prev) next.cache = new Set([...w.cache, prev.context.entry.fingerprint]);
  }
  if (ev.type === 'xstate.error.actor.connect') next.opening = undefined;
  if (ev.type === 'CONNECTION_LOST' && ev.generation === w.conn) next.conn = undefined;
  for (const a of actions) {
    const params = a.params as { id?: string; input?: { generation: number } } | undefined;
    if (a.type === 'xstate.spawnChild' && params?.id === 'connect') next.opening = params.input!.generation;
    if (stops(a, 'connect')) next.opening = undefined;
    if (a.type === 'dropTools') next.tools = undefined;
    // The controller registers a cached listing only when the cache has one and nothing is registered.
    if (a.type === 'restoreCached') {
      const fp = (a.params as { entry: DesiredServer }).entry.fingerprint;
      if (next.tools === undefined && next.cache.has(fp)) next.tools = 'cached';
    }
    if (a.type === 'disconnect') {
      next.conn = undefined;
      next.opening = undefined;
    }
  }
  return next;
}

function subState(s: Snap): string | undefined {
  const v = s.value as { live?: { reconnecting?: string } };
  return typeof v === 'object' && typeof v.live === 'object' ? v.live.reconnecting : undefined;
}

interface Coverage {
  /** One snapshot per distinct state key, for node coverage. */
  samples: Map<string, Snap>;
  states: Set<ServerStateName>;
  keys: Set<string>;
  transitions: Set<string>;
  /** Moves into and out of `dormant` (`from->to`), to show the walk takes every way. */
  dormantMoves: Set<string>;
  steps: number;
}

/** A failed invariant, with the step it failed at (built only when it fails: this runs ~30 000 times). */
class InvariantError extends Error {}

/** Check every invariant of one step `prev --ev--> next` (with the actions it ran). */
function checkStep(prev: Snap | undefined, ev: AnyEventObject, next: Snap, actions: Action[], w: World, cov: Coverage): void {
  const name = stateNameOf(next);
  const ctx = next.context;
  const check = (ok: boolean, what: string): void => {
    if (!ok) {
      throw new InvariantError(
        `${what}\n  event: ${JSON.stringify(ev).slice(0, 200)}\n  state: ${JSON.stringify(next.value)} ${JSON.stringify({ ...ctx, entry: ctx.entry.hash })}\n  world: ${JSON.stringify(w)}\n  actions: ${actions.map((a) => a.type).join(', ')}`,
      );
    }
  };
  const same = (a: unknown, b: unknown) => isDeepStrictEqual(a, b);
  cov.states.add(name);
  const key = keyOf(next);
  cov.keys.add(key);
  if (!cov.samples.has(key)) cov.samples.set(key, next);
  if (prev) cov.transitions.add(`${keyOf(prev)} ${JSON.stringify(ev)}`);
  if (prev && (name === 'dormant') !== (stateNameOf(prev) === 'dormant')) cov.dormantMoves.add(`${stateNameOf(prev)}->${name}`);
  cov.steps++;
  check(next.status !== 'error', 'the machine never errors');

  // reason and status are the projection of the state, nothing else
  // A first connect past its start timeout says so; every other state's reason is its name's.
  const slow = next.matches({ live: { connecting: 'slow' } });
  check(reasonOf(next) === (slow ? 'starting_slowly' : EXPECTED_REASON[name]), `reasonOf(${name}${slow ? '.slow' : ''})`);
  check(isStartingSlowly(next) === slow, 'isStartingSlowly is the connecting.slow node');
  if (ev.type === AFTER_START) check(slow && same(next.context, prev?.context), 'the start timeout only marks the start slow: the connect goes on, nothing else changes');
  check(publicStatusOf(next) === EXPECTED_STATUS[name], `publicStatusOf(${name})`);

  const verdict = admissionOf(ctx.entry, ctx.gating);
  if (VERDICT_STATES.has(name)) check(verdict === name, `a resting verdict state matches admission (${verdict})`);
  if (isLive(next)) check(verdict === 'admitted', `a live server is admitted (${verdict})`);

  // no connection outside the connecting / connected / reconnecting states, and no tools outside the admitted ones
  if (!isLive(next)) check(w.opening === undefined && w.conn === undefined, `no connection in ${name}`);
  if (!isLive(next) && name !== 'dormant') check(w.tools === undefined, `no tools in ${name}`);
  // the registry holds tools only for admitted servers, and a connected server's are current
  if (w.tools !== undefined) check(holdsTools(name), `tools registered only while admitted`);
  if (name === 'connected') check(w.tools === ctx.generation && w.conn === ctx.generation, 'connected: current generation registered and open');
  if (name === 'connecting' || subState(next) === 'attempting') check(w.opening === ctx.generation, 'an attempt for the current generation is in flight');
  if (name === 'connecting') check(w.tools !== ctx.generation, 'connecting holds at most cached or older tools, never its own generation');
  if (subState(next) === 'waiting') check(w.opening === undefined, 'nothing in flight while waiting');
  // the machine believes in a cached listing only when there is one, and a dormant server always serves tools
  if (ctx.cached) check(w.cache.has(ctx.entry.fingerprint), 'context.cached only when the cache holds the current fingerprint');
  if (name === 'dormant') check(w.tools !== undefined, 'a dormant server has tools registered (cached or its last listing)');
  if (name === 'connecting' && w.cache.has(ctx.entry.fingerprint)) check(w.tools !== undefined, 'a connecting server with a cached listing serves it at once');
  // a call in flight keeps a connected server busy: never idle-stopped under a running call
  if (prev?.matches({ live: 'connected' }) && name === 'dormant') check(prev.context.calls === 0, 'only an idle server is stopped');

  // a gated server never connects without an approval for its current hash in a trusted folder
  const spawnsConnect = actions.some((a) => a.type === 'xstate.spawnChild' && (a.params as { id?: string }).id === 'connect');
  if ((isLive(next) || spawnsConnect) && isGated(ctx.entry)) {
    check(ctx.gating.trusted, 'gated servers connect only in a trusted folder');
    check(same(ctx.gating.approvals[NAME], { hash: ctx.entry.hash, decision: 'approved' }), 'gated servers connect only when approved for the current hash');
  }
  if (spawnsConnect) check(verdict === 'admitted', 'connect starts only when admitted');
  // cached tools of a server are registered only once it is admitted (approved, allowed, trusted …)
  if (actions.some((a) => a.type === 'restoreCached')) check(verdict === 'admitted', 'cached tools are restored only when admitted');
  // a lazy server never starts on admission when its listing is cached, only on a call
  if (spawnsConnect && prev && !isLive(prev) && stateNameOf(prev) !== 'dormant' && ctx.entry.config.startup === 'lazy') {
    check(!w.cache.has(ctx.entry.fingerprint) || ctx.calls > 0, 'a lazy server with a cached listing connects only for a call');
  }
  if (spawnsConnect && prev && stateNameOf(prev) === 'dormant') check(ev.type === 'CALL_STARTED' || ev.type === 'RECONNECT', 'a dormant server wakes only for a call or RECONNECT');

  // the budget
  if (name === 'failed' && (!prev || stateNameOf(prev) !== 'failed')) {
    check(ctx.attempt >= ctx.backoff.attempts || isPermanentEvent(ev), 'failed only when the budget is spent or retrying cannot help');
  }
  const permanentApplies =
    ev.type === 'CONNECTION_LOST' ? prev?.matches({ live: 'connected' }) === true && ev.generation === prev.context.generation : prev !== undefined && isLive(prev);
  if (isPermanentEvent(ev) && permanentApplies) {
    check(name === 'failed' || name === 'removed', 'a permanent error ends in failed at once');
  }
  if (isLive(next)) check(ctx.attempt < ctx.backoff.attempts, 'live only within the budget');

  if (!prev) return;
  const prevName = stateNameOf(prev);
  const types = actions.map((a) => a.type as string);
  const teardown = actions.filter((a) => a.type === 'dropTools' || a.type === 'disconnect' || stops(a, 'connect'));

  // no churn: an UPDATE that keeps a live server admitted with the same fingerprint changes nothing but context
  if (ev.type === 'UPDATE' && isLive(prev)) {
    const { entry: e, gating: g } = ev as unknown as { entry: DesiredServer; gating: GatingState };
    if (admissionOf(e, g) === 'admitted' && e.fingerprint === prev.context.entry.fingerprint) {
      check(teardown.length === 0, 'no teardown on an update that keeps the server admitted and its fingerprint');
      check(same(next.value, prev.value) && next.context.generation === prev.context.generation, 'no state change, no new generation');
      const filters = types.filter((t) => t === 'applyFilter').length;
      check(filters === (e.hash === prev.context.entry.hash ? 0 : 1), 'applyFilter exactly when the config changed');
    }
  }
  // an UPDATE with identical data does nothing anywhere
  if (ev.type === 'UPDATE') {
    const u = ev as unknown as { entry: DesiredServer; gating: GatingState };
    if (u.entry === prev.context.entry && u.gating === prev.context.gating) {
      check(actions.length === 0 && same(next.value, prev.value), 'an identical UPDATE is a no-op');
    }
  }
  // the last error lives in the context: every failure leaves its error there, a report only that, and none is ever forgotten
  if (ev.type === 'xstate.error.actor.connect' && prev.children.connect) {
    check(ctx.lastError === (ev.error as Error).message, 'a failed connect leaves its error as lastError');
  }
  if (ev.type === 'CONNECTION_LOST' && ev.generation === prev.context.generation && prev.matches({ live: 'connected' })) {
    check(ctx.lastError === (ev.error ?? 'connection lost'), 'a lost connection leaves its cause as lastError');
  }
  if (ev.type === 'ERROR_REPORTED') {
    check(actions.length === 0 && same(next.value, prev.value), 'a reported error moves nothing');
    const current = ev.generation === undefined || ev.generation === prev.context.generation;
    check(same(next.context, current ? { ...prev.context, lastError: ev.error } : prev.context), 'a report changes lastError only, unless it is stale');
  }
  if (prev.context.lastError !== undefined) check(ctx.lastError !== undefined, 'a last error is kept once the server recovers');
  // late events of an old generation are ignored
  const stale =
    (isConnectDone(ev) && ev.output.generation !== prev.context.generation) ||
    ((ev.type === 'CONNECTION_LOST' || ev.type === 'ERROR_REPORTED') && ev.generation !== undefined && ev.generation !== prev.context.generation);
  if (stale) check(actions.length === 0 && same(next.value, prev.value) && same(next.context, prev.context), 'a stale event is ignored');
  // moving inside the admitted set keeps the tools (going dormant closes the connection only); leaving it drops them, once
  const drops = types.filter((t) => t === 'dropTools' || t === 'disconnect');
  const admitted = (s: Snap) => s.matches('live');
  const toDormant = name === 'dormant' && prevName !== 'dormant';
  if (admitted(prev) && admitted(next)) check(same(drops, toDormant ? ['disconnect'] : []), 'moving between admitted states keeps the tools');
  if (admitted(prev) && !admitted(next)) check(same(drops, ['dropTools', 'disconnect']), 'leaving the admitted states drops tools and disconnects');
  if (!admitted(prev)) check(same(drops, toDormant ? ['disconnect'] : []), 'nothing to tear down outside the admitted states');
  if (prevName === 'removed') check(next.value === 'removed', 'removed is final');
  // new OAuth tokens matter only to a server waiting for them: it is admitted again, with a new generation when it connects
  if (ev.type === 'AUTHENTICATED') {
    if (prevName !== 'needs_auth') {
      check(actions.length === 0 && same(next.value, prev.value) && same(next.context, prev.context), 'AUTHENTICATED is ignored outside needs_auth');
    } else {
      check(name !== 'needs_auth', 'AUTHENTICATED leaves needs_auth');
      if (name === 'connecting') check(ctx.generation === prev.context.generation + 1 && ctx.attempt === 0, 'AUTHENTICATED connects a new generation with a fresh budget');
    }
  }
}

/**
 * States that differ only in the generation counter share a graph node, so a
 * path may reach a node with another generation than the one its events were
 * built for: re-target generation-carrying events (`rel`) at replay time.
 */
function retarget(ev: AnyEventObject, s: Snap): AnyEventObject {
  if (ev.rel === undefined) return ev;
  const generation = s.context.generation - (ev.rel === 'stale' ? 1 : 0);
  return isConnectDone(ev) ? { ...ev, output: { generation } } : { ...ev, generation };
}

interface End {
  snap: Snap;
  world: World;
}

function describePath(events: AnyEventObject[]): string {
  return `\npath:\n${events.map((e) => `  ${JSON.stringify(e).slice(0, 160)}`).join('\n')}`;
}

/** One macrostep from `from`, with the world updated and every invariant checked. */
function step(machine: Machine, from: End, raw: AnyEventObject, cov: Coverage, history: AnyEventObject[]): End {
  const ev = retarget(raw, from.snap);
  const [snap, actions] = transition(machine, from.snap, ev as never);
  const world = applyStep(from.world, ev, actions, from.snap);
  try {
    checkStep(from.snap, ev, snap, actions, world, cov);
  } catch (err) {
    (err as Error).message += describePath([...history, ev]);
    throw err;
  }
  return { snap, world };
}

/** Replay `events` from the initial snapshot with the pure `transition()`, checking every step. */
function replay(machine: Machine, input: ServerInput, events: AnyEventObject[], cov: Coverage): End {
  const [snap, actions] = initialTransition(machine, input);
  const world = applyStep({ cache: CACHED_AT_START }, { type: 'xstate.init' }, actions);
  checkStep(undefined, { type: 'xstate.init' }, snap, actions, world, cov);
  let end: End = { snap, world };
  const history: AnyEventObject[] = [];
  for (const ev of events) {
    end = step(machine, end, ev, cov, history);
    history.push(ev);
  }
  return end;
}

function newCoverage(): Coverage {
  return { samples: new Map(), states: new Set(), keys: new Set(), transitions: new Set(), dormantMoves: new Set(), steps: 0 };
}

const eventsOf = (p: StatePath<Snap, AnyEventObject>) => p.steps.slice(1).map((s) => s.event);

/**
 * Every transition of the graph: the shortest path to each state, then each
 * event from there. The prefix is replayed once per state, each event once.
 */
function walkAllTransitions(label: string, input: ServerInput, opts: Options): Coverage {
  const machine = serverMachine;
  const traversal = {
    input,
    serializeState: (s: Snap) => keyOf(s),
    events: (s: Snap) => eventsFor(s, opts) as never[],
    // ~3 000 today; a runaway counter (say, attempt past the budget) must fail, not hang.
    limit: 20_000,
  };
  let paths: StatePath<Snap, AnyEventObject>[];
  try {
    paths = getShortestPaths(machine, traversal) as unknown as StatePath<Snap, AnyEventObject>[];
  } catch (err) {
    throw new Error(`the ${label} state graph is no longer small and finite (an unbounded counter?): ${(err as Error).message}`);
  }
  const cov = newCoverage();
  let walked = 0;
  for (const p of paths) {
    const end = replay(machine, input, eventsOf(p), cov);
    for (const ev of eventsFor(p.state, opts)) {
      step(machine, end, ev, cov, eventsOf(p));
      walked++;
    }
  }
  console.log(
    `[server model, ${label}] ${walked} paths (shortest path to each of ${paths.length} states + one event), ` +
      `${cov.steps} steps checked, ${cov.keys.size} distinct states, ${walked} transitions ` +
      `(${cov.transitions.size} distinct), public states reached: ${cov.states.size}/${SERVER_STATE_NAMES.length}`,
  );
  // replaying the paths reaches exactly the graph's states (the abstraction loses nothing that matters)
  expect(cov.keys.size).toBe(paths.length);
  return cov;
}

// The walks are CPU-bound (~1 min alone on a 2-core machine under load): generous
// timeouts, so a busy machine makes them slow, never red.
describe('serverMachine, walked with xstate/graph', { timeout: 600_000 }, () => {
  it('keeps every invariant on every transition of a gated (project) server and of an ungated (user) server', () => {
    const gated = walkAllTransitions(
      'gated',
      { name: NAME, entry: variants('project').A!, gating: { ...PROFILES.open!, approvals: {} }, backoff: { attempts: 3 } },
      { gatingEvents: true, entryEvents: true, variants: variants('project') },
    );
    const ungated = walkAllTransitions(
      'ungated',
      { name: NAME, entry: variants('user').A!, gating: { ...PROFILES.open!, approvals: {} }, backoff: { attempts: 3 } },
      { gatingEvents: true, entryEvents: true, variants: variants('user') },
    );
    const reached = new Set([...gated.states, ...ungated.states]);
    expect([...reached].sort()).toEqual([...SERVER_STATE_NAMES].sort());
    // every leaf state node too; `admission` is transient (eventless) and never rests in a snapshot
    const leaves = getStateNodes(serverMachine.root).filter((n) => n.type === 'atomic' || n.type === 'final');
    const samples = [...gated.samples.values(), ...ungated.samples.values()];
    const unreached = leaves.filter((n) => !samples.some((s) => s.matches(n.path.join('.') as never))).map((n) => n.id);
    expect(unreached).toEqual(['server.admission']);
    console.log(`[server model] leaf state nodes reached: ${leaves.length - 1}/${leaves.length} (all but the transient admission)`);
    // A gated server's fingerprint change changes its hash too, so it goes back to approval instead.
    expect(gated.states.has('fingerprint_changed')).toBe(false);
    // dormant is entered every way (approved/admitted with a cache, cache fill, idle stop) and left every way (wake, gating, removal)
    for (const cov of [gated, ungated]) {
      console.log(`[server model] dormant moves: ${[...cov.dormantMoves].sort().join(', ')}`);
      expect([...cov.dormantMoves]).toEqual(
        expect.arrayContaining(['connecting->dormant', 'connected->dormant', 'dormant->connecting', 'dormant->excluded', 'dormant->removed']),
      );
    }
    expect([...gated.dormantMoves]).toEqual(expect.arrayContaining(['pending_approval->dormant', 'dormant->pending_approval', 'dormant->untrusted']));
    expect([...ungated.dormantMoves]).toEqual(expect.arrayContaining(['fingerprint_changed->dormant']));
    expect(ungated.states.has('pending_approval')).toBe(false);
  });

  it('keeps every invariant on every simple path of the supervisor', () => {
    const machine = serverMachine;
    const opts: Options = { gatingEvents: false, entryEvents: false, callEvents: false, variants: {} };
    const input: ServerInput = { name: NAME, entry: variants('user').A!, gating: openGating(), backoff: { attempts: 2 } };
    const paths = getSimplePaths(machine, {
      input,
      serializeState: (s: Snap) => keyOf(s),
      events: (s: Snap) => eventsFor(s, opts) as never[],
      limit: 2_000,
    }) as unknown as StatePath<Snap, AnyEventObject>[];
    const cov = newCoverage();
    for (const p of paths) replay(machine, input, eventsOf(p), cov);
    console.log(
      `[server model, supervisor] ${paths.length} simple paths, ${cov.steps} steps checked, ${cov.keys.size} distinct states, ` +
        `${cov.transitions.size} distinct transitions, public states: ${[...cov.states].sort().join(', ')}`,
    );
    expect([...cov.states].sort()).toEqual(['connected', 'connecting', 'failed', 'needs_auth', 'reconnecting', 'removed']);
    expect(paths.length).toBeGreaterThan(cov.keys.size);
  });
});

describe('reconcilerMachine, walked with xstate/graph', { timeout: 600_000 }, () => {
  it('reaches both of its states; the gating events change exactly what they name', () => {
    const a = entry('a');
    const b = entry('b', { scope: 'project' });
    const desiredA = { a };
    const desiredAB = { a, b };
    const approved = { hash: b.hash, decision: 'approved' as const };
    const paths = getShortestPaths(reconcilerMachine, {
      input: { gating: openGating() },
      serializeState: (s) =>
        JSON.stringify({
          v: s.value,
          names: Object.keys(s.context.servers).sort(),
          removed: [...s.context.removed].sort(),
          excluded: s.context.gating.excluded,
          trusted: s.context.gating.trusted,
          b: s.context.gating.approvals.b?.decision,
        }),
      events: [
        { type: 'CONFIG', desired: desiredA, gating: openGating() },
        { type: 'CONFIG', desired: desiredAB, gating: openGating() },
        { type: 'CONFIG', desired: {}, gating: openGating() },
        // What the controller sends when only one kind of gating changed (src/controller/desired.ts).
        { type: 'GATING', gating: openGating({ excluded: ['a'] }) },
        { type: 'APPROVAL', name: 'b', decision: approved },
        { type: 'APPROVAL', name: 'b', decision: undefined },
        { type: 'TRUST', trusted: false },
        { type: 'TRUST', trusted: true },
        { type: 'DISPOSE' },
      ],
    });
    const values = new Set(paths.map((p) => JSON.stringify(p.state.value)));
    let steps = 0;
    for (const p of paths) {
      for (const [i, step] of p.steps.entries()) {
        steps++;
        // children in the snapshot always match the context's servers
        expect(Object.keys(step.state.children).sort()).toEqual(Object.keys(step.state.context.servers).sort());
        const prev = p.steps[i - 1]?.state;
        const ev = step.event as { type: string; name?: string; decision?: unknown; trusted?: boolean; gating?: GatingState };
        if (!prev || prev.status !== 'active') continue;
        const before = prev.context;
        const after = step.state.context;
        // a gating event keeps the desired map; each changes only the part of the gating it names
        if (['GATING', 'APPROVAL', 'TRUST'].includes(ev.type)) expect(after.desired).toEqual(before.desired);
        if (ev.type === 'GATING') expect(after.gating).toEqual(ev.gating);
        if (ev.type === 'TRUST') expect(after.gating).toEqual({ ...before.gating, trusted: ev.trusted });
        if (ev.type === 'APPROVAL') {
          const { b: _old, ...others } = before.gating.approvals;
          expect(after.gating).toEqual({ ...before.gating, approvals: ev.decision ? { ...others, b: ev.decision } : others });
        }
      }
    }
    console.log(`[reconciler model] ${paths.length} shortest paths, ${steps} steps checked, states: ${[...values].join(', ')}`);
    expect(values).toEqual(new Set(['"active"', '"disposed"']));
  });
});
