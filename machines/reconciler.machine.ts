/**
 * The parent actor (SPEC §3): owns one `serverMachine` child per configured
 * server and reconciles by level — every event computes the new desired map
 * and gating, compares them with what it holds, and acts on the difference
 * only. Children are spawned with `id: name` (and, for a host, the system id
 * {@link serverSystemId}), so a server's actor is `system.get(serverSystemId(name))`
 * (also `snapshot.children[name]` and `context.servers[name]`). Each spawn is
 * announced first (`server-spawned`), so a host can listen to the new actor's
 * transitions (`ref.on('transition', …)`) from its very first one.
 */
import { enqueueActions, setup } from 'xstate';
import { admissionOf } from './admission.js';
import { getOwn, setOwn } from './own.js';
import { resolveBackoff, serverMachine, type ServerActorRef, type ServerInput } from './server.machine.js';
import type { ApprovalDecision, BackoffPolicy, DesiredMap, DesiredServer, GatingState, LifecyclePolicy } from './types.js';

/** Input of the reconciler. */
export interface ReconcilerInput {
  desired?: DesiredMap;
  /** Defaults to nothing excluded, no approvals, and an untrusted folder (fail closed). */
  gating?: GatingState;
  backoff?: Partial<BackoffPolicy>;
  /** Default `startup` / `idleTimeoutMs` handed to every server (its own config wins). */
  lifecycle?: Partial<LifecyclePolicy>;
  /**
   * Register each server actor under {@link serverSystemId} so the host finds
   * it with `system.get`. Off by default: a model walk derives many snapshots
   * in one actor system, where the same id would be taken twice.
   */
  systemIds?: boolean;
}

/** Context of the reconciler. */
export interface ReconcilerContext {
  desired: DesiredMap;
  gating: GatingState;
  backoff: BackoffPolicy;
  lifecycle?: Partial<LifecyclePolicy>;
  /** Server actors are registered under {@link serverSystemId}. */
  systemIds?: boolean;
  /** Live children by server name (same refs as `snapshot.children`). */
  servers: Record<string, ServerActorRef>;
  /**
   * Names that were configured and then removed, for `unavailableReason` and
   * `status()` (SPEC §3.1, §7); the controller keeps no copy. DISPOSE leaves
   * it as it is: ending the children removes nothing from the config.
   */
  removed: string[];
}

/** Events the reconciler accepts. */
export type ReconcilerEvent =
  | { type: 'CONFIG'; desired: DesiredMap; gating: GatingState }
  | { type: 'GATING'; gating: GatingState }
  | { type: 'APPROVAL'; name: string; decision: ApprovalDecision | undefined }
  | { type: 'TRUST'; trusted: boolean }
  | { type: 'RECONNECT'; name: string }
  | { type: 'AUTHENTICATED'; name: string }
  | { type: 'DISPOSE' };

/**
 * Emitted for each server actor the reconciler spawns (first spawn,
 * re-added, replaced), before that actor starts: a listener finds it by
 * {@link serverSystemId} (or in the snapshot) and hears its first transition.
 * The children of `input.desired` start with the reconciler itself, before
 * any announcement reaches a listener; a host that listens starts empty and
 * sends CONFIG.
 */
export interface ServerSpawned {
  type: 'server-spawned';
  name: string;
}

/** Events the reconciler emits to its host. */
export type ReconcilerEmitted = ServerSpawned;

/** The system id of `name`'s server actor: the host finds it with `actor.system.get(serverSystemId(name))`. */
export function serverSystemId(name: string): string {
  return `server:${name}`;
}

/** The one server name no actor can be spawned for (see `reconcile`). */
export const RESERVED_SERVER_NAME = '__proto__';

const EMPTY_GATING: GatingState = Object.freeze({ excluded: [], trusted: false, approvals: {} });

/**
 * Whether two entries would make a server behave the same: same provenance,
 * same approval and whole-config hashes, same connection fingerprint, and the same
 * `startup` / `idleTimeoutMs` (the one pair the hashes leave out, so that
 * changing them needs no new approval). No deep comparison is needed.
 */
export function sameEntry(a: DesiredServer, b: DesiredServer): boolean {
  return (
    a.name === b.name &&
    a.scope === b.scope &&
    a.source === b.source &&
    a.hash === b.hash &&
    a.configHash === b.configHash &&
    a.fingerprint === b.fingerprint &&
    a.config.startup === b.config.startup &&
    a.config.idleTimeoutMs === b.config.idleTimeoutMs &&
    // A cluster singleton that runs on another replica gets its listing from that replica's (docs/cluster.md): tell it when one appears.
    (b.config.singleton !== true || (a.cached === true) === (b.cached === true))
  );
}

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  const sa = new Set(a);
  const sb = new Set(b);
  return sa.size === sb.size && [...sa].every((x) => sb.has(x));
}

/**
 * Whether two gating states admit the same servers: lists compared as sets,
 * an absent `allowed` (allow all) differs from `allowed: []` (deny all),
 * approvals compared by name, hash and decision.
 */
export function sameGating(a: GatingState, b: GatingState): boolean {
  if (a === b) return true;
  if (a.trusted !== b.trusted) return false;
  if ((a.allowed === undefined) !== (b.allowed === undefined)) return false;
  if (a.allowed && b.allowed && !sameSet(a.allowed, b.allowed)) return false;
  if (!sameSet(a.excluded, b.excluded)) return false;
  const names = new Set([...Object.keys(a.approvals), ...Object.keys(b.approvals)]);
  for (const name of names) {
    const x = getOwn(a.approvals, name);
    const y = getOwn(b.approvals, name);
    if (x?.hash !== y?.hash || x?.decision !== y?.decision) return false;
  }
  return true;
}

type InitEvent = { type: 'xstate.init'; input?: ReconcilerInput };

/** The desired map and gating an event asks for (unchanged for events that carry neither). */
function levelsOf(context: ReconcilerContext, event: ReconcilerEvent | InitEvent): { desired: DesiredMap; gating: GatingState } {
  switch (event.type) {
    case 'xstate.init':
      return { desired: event.input?.desired ?? {}, gating: context.gating };
    case 'CONFIG':
      return { desired: event.desired, gating: event.gating };
    case 'GATING':
      return { desired: context.desired, gating: event.gating };
    case 'APPROVAL': {
      const approvals = { ...context.gating.approvals };
      if (event.decision) setOwn(approvals, event.name, event.decision);
      else delete approvals[event.name];
      return { desired: context.desired, gating: { ...context.gating, approvals } };
    }
    case 'TRUST':
      return { desired: context.desired, gating: { ...context.gating, trusted: event.trusted } };
    default:
      return { desired: context.desired, gating: context.gating };
  }
}

/** A child that finished (someone sent it REMOVE directly) or stopped no longer counts as live. */
function isRunning(ref: ServerActorRef): boolean {
  return ref.getSnapshot().status === 'active';
}

/**
 * The reconciler actor logic (SPEC §3). Provide real server I/O with
 * `reconcilerMachine.provide({ actors: { server: serverMachine.provide({ … }) } })`.
 */
export const reconcilerMachine = setup({
  types: {
    context: {} as ReconcilerContext,
    events: {} as ReconcilerEvent,
    input: {} as ReconcilerInput,
    emitted: {} as ReconcilerEmitted,
  },
  actors: {
    server: serverMachine,
  },
  actions: {
    /**
     * Register the cached listing of a server about to be spawned and admitted
     * (the host's `restoreCached`); a no-op here. The child does the same on
     * entry to `live` and finds it done.
     */
    restoreCached: (_args, _params: { name: string; entry: DesiredServer }) => {},
    /**
     * Level-based reconcile: remove children no longer desired (REMOVE, so
     * they drop tools and disconnect, then stop), UPDATE children whose entry
     * or the gating changed, spawn children for new names. Nothing is sent to
     * an unchanged child under unchanged gating, so running it twice is a no-op.
     */
    reconcile: enqueueActions(({ context, event, enqueue }) => {
      const { desired, gating } = levelsOf(context, event as ReconcilerEvent | InitEvent);
      const gatingChanged = !sameGating(context.gating, gating);
      const servers: Record<string, ServerActorRef> = {};
      const removed = new Set(context.removed);
      const toSpawn: string[] = [];

      for (const [name, ref] of Object.entries(context.servers)) {
        // Own properties only: a server may be called `toString` or `constructor`.
        const entry = Object.hasOwn(desired, name) ? desired[name] : undefined;
        if (!entry || !isRunning(ref)) {
          // Deferred in order: the child handles REMOVE (exit actions run) before it is stopped.
          if (isRunning(ref)) enqueue.sendTo(ref, { type: 'REMOVE' });
          enqueue.stopChild(ref);
          if (!entry) removed.add(name);
          else toSpawn.push(name);
          continue;
        }
        servers[name] = ref;
        const previous = Object.hasOwn(context.desired, name) ? context.desired[name] : undefined;
        if (gatingChanged || !previous || !sameEntry(previous, entry)) {
          enqueue.sendTo(ref, { type: 'UPDATE', entry, gating });
        }
      }
      for (const name of Object.keys(desired)) {
        // XState keeps children in a plain object keyed by id, where `__proto__` cannot be a
        // key: such a server is not spawned, and the controller reports it as a config issue.
        if (name === RESERVED_SERVER_NAME) continue;
        if (!Object.hasOwn(context.servers, name)) toSpawn.push(name);
      }
      for (const name of toSpawn) removed.delete(name);

      // Cached tools are registered before the children are created, so a warm start's whole
      // registry is there before any actor's start-up (docs/spec.md §12). The verdict is the
      // one the child's admission reaches; its `live` entry then finds the tools registered.
      for (const name of toSpawn) {
        const entry = desired[name]!;
        // `as never`: XState cannot type a sibling action from inside `setup({ actions })`.
        if (entry.cached === true && admissionOf(entry, gating) === 'admitted') enqueue({ type: 'restoreCached', params: { name, entry } } as never);
      }
      // Announced before the spawn: an emit is delivered in order with the new children's starts,
      // so the announcement reaches a listener before the child takes its first step.
      for (const name of toSpawn) enqueue.emit({ type: 'server-spawned', name });
      enqueue.assign(({ spawn }) => {
        for (const name of toSpawn) {
          const input: ServerInput = { name, entry: desired[name]!, gating, backoff: context.backoff, lifecycle: context.lifecycle };
          servers[name] = spawn('server', { id: name, ...(context.systemIds ? { systemId: serverSystemId(name) } : {}), input });
        }
        return { desired, gating, servers, removed: [...removed] };
      });
    }),
    reconnect: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'RECONNECT') return;
      const ref = getOwn(context.servers, event.name);
      if (ref) enqueue.sendTo(ref, { type: 'RECONNECT' });
    }),
    /** New OAuth tokens for one server: it leaves `needs_auth` (other states ignore it). */
    authenticated: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'AUTHENTICATED') return;
      const ref = getOwn(context.servers, event.name);
      if (ref) enqueue.sendTo(ref, { type: 'AUTHENTICATED' });
    }),
    removeAll: enqueueActions(({ context, enqueue }) => {
      for (const ref of Object.values(context.servers)) {
        if (isRunning(ref)) enqueue.sendTo(ref, { type: 'REMOVE' });
        enqueue.stopChild(ref);
      }
      // Disposing ends the children, it does not remove their config: `removed` stays what the config removed.
      enqueue.assign({ servers: {} });
    }),
  },
}).createMachine({
  id: 'reconciler',
  context: ({ input }) => ({
    desired: {},
    gating: input.gating ?? EMPTY_GATING,
    backoff: resolveBackoff(input.backoff),
    ...(input.lifecycle ? { lifecycle: input.lifecycle } : {}),
    ...(input.systemIds ? { systemIds: true } : {}),
    servers: {},
    removed: [],
  }),
  // The initial desired map goes through the same reconcile as every CONFIG.
  entry: 'reconcile',
  initial: 'active',
  states: {
    active: {
      on: {
        CONFIG: { actions: 'reconcile' },
        GATING: { actions: 'reconcile' },
        APPROVAL: { actions: 'reconcile' },
        TRUST: { actions: 'reconcile' },
        RECONNECT: { actions: 'reconnect' },
        AUTHENTICATED: { actions: 'authenticated' },
        DISPOSE: { target: 'disposed', actions: 'removeAll' },
        // A child that crashed (a provided action threw) must not take the
        // reconciler and every other server down with it: handling the event
        // keeps the parent alive, and reconciling replaces the dead child.
        'xstate.error.actor.*': { actions: 'reconcile' },
      },
    },
    disposed: {
      description: 'Every child was removed; the reconciler is done.',
      type: 'final',
    },
  },
});
