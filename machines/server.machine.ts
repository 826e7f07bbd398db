/**
 * One MCP server's life (SPEC §5) as a pure statechart. All I/O is injected:
 * `src/` provides the `connect` / `session` actors and the `dropTools` /
 * `disconnect` / `applyFilter` actions with `.provide()`.
 *
 * Shape (the public, flat state names come from `stateNameOf` in reason.ts):
 *
 * ```
 * admission (transient) ─▶ disabled | untrusted | excluded | not_allowed
 *                          | rejected | pending_approval | live | live.dormant
 * live (entry: restoreCached; exit: dropTools, disconnect)
 *   connecting ─▶ connected { idle ⇄ busy } ⇄ reconnecting { waiting ─▶ attempting }
 *   connecting ─▶ dormant (lazy, no call)   connected.idle ─after idleDelay─▶ dormant
 *   dormant ─CALL_STARTED / RECONNECT─▶ connecting
 * fingerprint_changed ─▶ admission      needs_auth, failed: resting
 * removed (final)
 * ```
 *
 * Instant start (SPEC §12): `live` is entered only through admission, so
 * every gate stands before the cached tools are registered (`restoreCached`,
 * on entry) and before any connect. A `lazy` server whose listing is cached
 * (`context.cached`) is admitted straight into `dormant`: tools registered,
 * no process; one without a cache connects once, and the finished connect
 * goes to `dormant` instead of `connected` while no call waits. The first
 * CALL_STARTED wakes it (`connecting`, fresh budget). A connected server
 * counts its calls (CALL_STARTED / CALL_ENDED) and the resources the host
 * subscribed to (SUBSCRIPTIONS, from the session actor) in `connected.busy`; in
 * `connected.idle` the `idleDelay` (the entry's `idleTimeoutMs`, else the
 * controller default) stops it into `dormant`, keeping its tools.
 *
 * Holds (SPEC §13, the gateway's shared pool): HOLD marks the server wanted
 * by a host, RELEASE unmarks it; either is recorded in any state, so gates
 * still decide first. HOLD wakes a `dormant` server (a lazy one with a cache
 * waits for its call), and a held server idles out only on the `idleTimeoutMs`
 * of its own config (the controller default waits for RELEASE); RELEASE in
 * `connected.idle` restarts the idle timer. With `lifecycle.onDemand`, an
 * admitted server nobody holds rests in `dormant` (no cache fill either).
 *
 * The three connection states are grouped under `live` so that leaving the
 * live set always unregisters tools and closes the client (one exit action,
 * no transition can forget it), while moving between them keeps the previous
 * generation's tools registered. Their snapshot values are therefore
 * `{ live: 'connecting' }`, `{ live: 'connected' }` and
 * `{ live: { reconnecting: 'waiting' | 'attempting' } }`. A retry after a lost
 * connection happens inside `reconnecting` (substate `attempting`), so
 * `connecting` always means a first connection (of an admission, or a wake
 * from `dormant`) that holds no live tools of its own yet — only cached ones.
 *
 * UPDATE (new entry and gating from the parent):
 * - live, no longer admitted → leaves live (dropTools, disconnect) to its verdict state;
 * - live, fingerprint changed → `fingerprint_changed` (dropTools, disconnect) → admission → new generation;
 * - live, other config change (filters, description, timeout) → `applyFilter`, no reconnect;
 * - live, nothing relevant changed → stays exactly where it is (no churn);
 * - resting verdict state → admission again when the verdict changed (else it stays);
 * - `failed` / `needs_auth` → admission only when the config or the verdict changed.
 *
 * Supervisor: a failed attempt or a lost connection (current generation only)
 * counts one failure — except the first loss since the budget was last reset,
 * which is forgiven and retried at once, so a server that dies for good gets
 * the full `backoff.attempts` reconnect attempts while a crash loop still
 * spends the budget. At `backoff.attempts` failures the server rests in
 * `failed`. Otherwise it waits `min(initialMs · 2^(failures-1), maxMs)` in
 * `reconnecting.waiting` — or nothing, when the loss was forgiven (the first
 * after a fresh admission or a healthy run of `healthyMs`, which resets the
 * budget) or its HTTP session was evicted. An error marked `permanent`
 * (retrying cannot help) goes straight to `failed` without spending budget.
 * AUTHENTICATED (new OAuth tokens): from `needs_auth` re-runs admission, so
 * the next generation connects with them; other states ignore it.
 * RECONNECT: from `failed` / `needs_auth` re-runs admission with a fresh
 * budget; while reconnecting it refills the budget and retries now, keeping
 * the old tools. Every admission into `live` starts with a fresh budget.
 *
 * Last error: every failure event carries its error (the connect actor's
 * rejection, CONNECTION_LOST), and the controller reports the errors that
 * move nothing (ERROR_REPORTED), so `context.lastError` is the only record.
 *
 * Transitions (SPEC §9): every leaf but the transient `admission` announces
 * itself on entry (`announce`, an emitted {@link ServerTransition}), so the
 * host hears of each state change with `ref.on('transition', …)` instead of
 * reading snapshots. A leaf that its own eventless transition leaves in the
 * same step (`connected.idle` in use, `connected.busy` unused, `dormant`
 * subscribed) stays quiet: the host hears where the step ends.
 */
import { and, assign, enqueueActions, fromCallback, fromPromise, not, or, setup, type ActorRefFrom, type SnapshotFrom, type StateValue } from 'xstate';
import { admissionOf, type AdmissionVerdict } from './admission.js';
import { reasonOf, stateNameOf, type ActorReason, type ServerStateName } from './reason.js';
import { DEFAULT_BACKOFF, DEFAULT_LIFECYCLE, type BackoffPolicy, type DesiredServer, type GatingState, type LifecyclePolicy } from './types.js';

/** Input of one server actor. */
export interface ServerInput {
  name: string;
  entry: DesiredServer;
  gating: GatingState;
  /** Overrides of the SPEC §5 backoff defaults. */
  backoff?: Partial<BackoffPolicy>;
  /** Start-up / idle defaults for an entry that sets none (controller options). */
  lifecycle?: Partial<LifecyclePolicy>;
}

/** Context of one server actor. */
export interface ServerContext {
  name: string;
  entry: DesiredServer;
  gating: GatingState;
  backoff: BackoffPolicy;
  /** Number of the current (or last) connection attempt; each attempt gets a new one. */
  generation: number;
  /** Failures since the budget was last reset (admission, healthy run, RECONNECT). */
  attempt: number;
  /** The current connection has stayed up `backoff.healthyMs`. */
  healthy: boolean;
  /**
   * A lost connection was already let off without counting since the budget
   * was last reset. The first loss of a clean run costs nothing, so a server
   * that dies for good still gets `backoff.attempts` reconnect attempts; every
   * later loss counts, so a crash loop still spends the budget.
   */
  lossForgiven: boolean;
  /**
   * The last error of this actor: a failed connect (auth errors and rejected
   * listings included), a lost connection, or one the controller reported
   * (`ERROR_REPORTED`). Kept once the server recovers; a re-added server is a
   * new actor and starts without one.
   */
  lastError?: string;
  /** The wait before the next attempt, when one is scheduled. */
  nextDelayMs?: number;
  /** Controller defaults for `startup` / `idleTimeoutMs`; the entry's own config wins. */
  lifecycle: LifecyclePolicy;
  /**
   * A listing of the current fingerprint is cached (`entry.cached`, or this
   * actor connected it once), so tools can be served without a connection.
   */
  cached: boolean;
  /** Tool calls in flight or waiting for the connection (CALL_STARTED − CALL_ENDED); a server with calls is never idle. */
  calls: number;
  /** A host holds the server running (HOLD until RELEASE: a gateway session uses it); a held server is never idle-stopped. */
  held: boolean;
  /**
   * Resources of this server the host is subscribed to (SUBSCRIPTIONS, set by
   * the session actor). A server with subscriptions is in use: never
   * idle-stopped, never left dormant. Kept through every state.
   */
  subscriptions: number;
}

/** Input of the injected `connect` actor. */
export interface ConnectInput {
  name: string;
  entry: DesiredServer;
  generation: number;
}

/**
 * Output of the injected `connect` actor: the generation it connected, which
 * must be the one it was given. The actor commits the generation's tools to
 * the registry before resolving and retires any older generation's client.
 * It rejects with an error whose `code` is `'needs_auth'` when the server
 * needs authorisation, and with an error whose `permanent` is `true` when
 * retrying cannot help (command not found, invalid URL, a 4xx answer, a
 * listing the registry rejected): the server goes straight to `failed`. Any
 * other rejection is a failed attempt that spends the backoff budget.
 */
export interface ConnectOutput {
  generation: number;
}

/** Input of the injected `session` actor, which watches one connected generation. */
export interface SessionInput {
  name: string;
  generation: number;
  /** The subscription count the machine holds, so the session reports it only when it differs. */
  subscriptions: number;
}

/**
 * Sent by the `session` actor when its generation's connection is gone.
 * `sessionLost: true` (HTTP session evicted, SPEC §5) reconnects at once;
 * `permanent: true` (the generation was closed because a re-listing was
 * rejected) goes straight to `failed`.
 */
export interface ConnectionLostEvent {
  type: 'CONNECTION_LOST';
  generation: number;
  error?: string;
  sessionLost?: boolean;
  permanent?: boolean;
}

/** New desired entry and gating for this server; what changed decides what happens. */
export interface UpdateEvent {
  type: 'UPDATE';
  entry: DesiredServer;
  gating: GatingState;
}

/**
 * A tool call begins (`CALL_STARTED`, also when it first waits for the
 * connection) or ends (`CALL_ENDED`, however it ended). A `dormant` server
 * wakes on CALL_STARTED; a connected one is idle only while no call runs.
 */
export type CallEvent = { type: 'CALL_STARTED' } | { type: 'CALL_ENDED' };

/** New OAuth tokens were stored for this server: leave `needs_auth` with a new generation. */
export type AuthenticatedEvent = { type: 'AUTHENTICATED' };

/**
 * A host (the gateway's session pool) wants the server running (`HOLD`) or
 * no longer does (`RELEASE`). HOLD wakes a `dormant` server (a lazy one with
 * a cached listing waits for its first call) and keeps a connected one from
 * idle-stopping; after RELEASE it idle-stops as usual. Neither event passes
 * a gate: a server that is not admitted stays where it is.
 */
export type HoldEvent = { type: 'HOLD' } | { type: 'RELEASE' };

/**
 * The host says the server must not run here any more, now (a cluster
 * singleton whose lease this replica lost, docs/cluster.md): a live server
 * stops into `dormant` at once, its tools staying registered, and the hold
 * is dropped. Anywhere else it only drops the hold.
 */
export type ParkEvent = { type: 'PARK' };

/**
 * How many resources of the server the host is subscribed to now (issue
 * 13/14): the server must stay connected to deliver their updates, so while
 * `count > 0` it is `connected.busy` (no idle stop) and a `dormant` one
 * starts. An absolute count, so a repeated or late one is harmless.
 */
export type SubscriptionsEvent = { type: 'SUBSCRIPTIONS'; count: number };

/**
 * An error the controller saw that moves the server nowhere: a re-listing
 * that failed, a filter or a listing the registry keeps pending because of a
 * tool conflict. It becomes `lastError`, so the machine's context is the one
 * place a server's last error lives. With `generation`, a report about an
 * older generation than the current one is ignored (it arrived late).
 */
export interface ErrorReportedEvent {
  type: 'ERROR_REPORTED';
  error: string;
  generation?: number;
}

/** Events a server actor accepts (besides the invoked actors' own done/error events). */
export type ServerEvent =
  | UpdateEvent
  | { type: 'RECONNECT' }
  | { type: 'REMOVE' }
  | ConnectionLostEvent
  | CallEvent
  | AuthenticatedEvent
  | ErrorReportedEvent
  | HoldEvent
  | ParkEvent
  | SubscriptionsEvent;

/** Every leaf state a server rests in, as a dotted path (`admission` is transient and never rests). */
export type ServerStatePath =
  | Exclude<AdmissionVerdict, 'admitted'>
  | 'live.connecting.starting'
  | 'live.connecting.slow'
  | 'live.dormant'
  | 'live.connected.idle'
  | 'live.connected.busy'
  | 'live.reconnecting.waiting'
  | 'live.reconnecting.attempting'
  | 'fingerprint_changed'
  | 'needs_auth'
  | 'failed'
  | 'removed';

/**
 * Emitted on every transition (SPEC §9): a leaf state entered, sub-states
 * of `connecting`, `connected` and `reconnecting` included, each new
 * generation too. Listen with `ref.on('transition', …)`. A state re-entered
 * (same `path`, same `generation`: RELEASE restarting the idle timer) is
 * announced again; it is no transition, and a host skips it.
 */
export interface ServerTransition {
  type: 'transition';
  /** The public state name (SPEC §5), as `stateNameOf` gives it. */
  state: ServerStateName;
  /** The leaf entered, e.g. `live.reconnecting.waiting`. */
  path: ServerStatePath;
  generation: number;
  /** Failures since the budget was last reset. */
  attempt: number;
  /** Why the server is unavailable there, as `reasonOf` gives it (SPEC §7). */
  reason: ActorReason | undefined;
  /** The server's last error, if it had one (see {@link ServerContext.lastError}). */
  lastError?: string;
}

/** Events a server actor emits to its host. */
export type ServerEmitted = ServerTransition;

/** A server child actor. */
export type ServerActorRef = ActorRefFrom<typeof serverMachine>;

/** A snapshot of a server actor. */
export type ServerSnapshot = SnapshotFrom<typeof serverMachine>;

/** `policy` with the SPEC §5 defaults filled in. */
export function resolveBackoff(policy?: Partial<BackoffPolicy>): BackoffPolicy {
  const out = { ...DEFAULT_BACKOFF };
  for (const key of Object.keys(out) as (keyof BackoffPolicy)[]) {
    const v = policy?.[key];
    if (typeof v === 'number') out[key] = v;
  }
  return out;
}

/** `policy` with the defaults (eager, no idle stop) filled in. */
export function resolveLifecycle(policy?: Partial<LifecyclePolicy>): LifecyclePolicy {
  const out: LifecyclePolicy = { ...DEFAULT_LIFECYCLE };
  if (policy?.startup === 'lazy' || policy?.startup === 'eager') out.startup = policy.startup;
  if (typeof policy?.idleTimeoutMs === 'number' && policy.idleTimeoutMs > 0) out.idleTimeoutMs = policy.idleTimeoutMs;
  if (typeof policy?.slowStartMs === 'number' && policy.slowStartMs > 0) out.slowStartMs = policy.slowStartMs;
  if (policy?.onDemand === true) out.onDemand = true;
  return out;
}

/** The server's own `timeout`, else the controller's connect timeout: when a first connect counts as slow. */
export function slowStartOf(context: Pick<ServerContext, 'entry' | 'lifecycle'>): number {
  const own = context.entry.config.timeout;
  return typeof own === 'number' && own > 0 ? own : context.lifecycle.slowStartMs;
}

/** The server's own `startup`, else the controller default. */
export function startupOf(context: Pick<ServerContext, 'entry' | 'lifecycle'>): LifecyclePolicy['startup'] {
  return context.entry.config.startup ?? context.lifecycle.startup;
}

/** The `idleTimeoutMs` the server's own config sets, if any. */
function ownIdleTimeoutOf(context: Pick<ServerContext, 'entry'>): number | undefined {
  const own = context.entry.config.idleTimeoutMs;
  return typeof own === 'number' && own > 0 ? own : undefined;
}

/** The server's own `idleTimeoutMs`, else the controller default; `undefined` never idles out. */
export function idleTimeoutOf(context: Pick<ServerContext, 'entry' | 'lifecycle'>): number | undefined {
  return ownIdleTimeoutOf(context) ?? context.lifecycle.idleTimeoutMs;
}

/** Longest timer Node keeps exact (2^31−1 ms); the idle timer of a server that never idles out is parked there, guarded off. */
const NEVER_MS = 2_147_483_647;

/** The wait before retry number `attempt` (1-based): `initialMs · 2^(attempt-1)`, at most `maxMs`. */
export function backoffDelay(policy: BackoffPolicy, attempt: number): number {
  return Math.min(policy.initialMs * 2 ** Math.max(0, attempt - 1), policy.maxMs);
}

function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === 'string') return error;
  return String(error);
}

function isNeedsAuth(error: unknown): boolean {
  return error !== null && typeof error === 'object' && (error as { code?: unknown }).code === 'needs_auth';
}

/** Retrying cannot help: the error (or lost event) says so itself. */
function isPermanent(event: Failure): boolean {
  if (event.type === 'CONNECTION_LOST') return event.permanent === true;
  const error = event.error;
  return error !== null && typeof error === 'object' && (error as { permanent?: unknown }).permanent === true;
}

type Failure = { type: string; error?: unknown; sessionLost?: boolean; permanent?: boolean };

/** The first loss since the budget was reset is let off: it does not count (see `lossForgiven`). */
function forgivesLoss(context: ServerContext, event: Failure): boolean {
  return event.type === 'CONNECTION_LOST' && context.attempt === 0 && !context.lossForgiven;
}

/** A forgiven loss (which includes the first loss after a healthy run), or an evicted session, reconnects without waiting. */
function reconnectsAtOnce(context: ServerContext, event: Failure): boolean {
  return forgivesLoss(context, event) || (event.type === 'CONNECTION_LOST' && event.sessionLost === true);
}

const nameParam = ({ context }: { context: ServerContext }) => ({ name: context.name });

/** Calls in flight or resource subscriptions held: a connected server must stay up. */
function inUse(context: ServerContext): boolean {
  return context.calls > 0 || context.subscriptions > 0;
}

/** The host subscribed to resources of the server: it must run to deliver their updates. */
function subscribed(context: ServerContext): boolean {
  return context.subscriptions > 0;
}

/** `{ live: { connected: 'idle' } }` for `live.connected.idle`. */
function valueOfPath(path: ServerStatePath): StateValue {
  const keys = path.split('.');
  let value: StateValue = keys.pop()!;
  while (keys.length > 0) value = { [keys.pop()!]: value };
  return value;
}

function transitionOf(path: ServerStatePath, context: ServerContext): ServerTransition {
  const snapshot = { value: valueOfPath(path) };
  return {
    type: 'transition',
    state: stateNameOf(snapshot),
    path,
    generation: context.generation,
    attempt: context.attempt,
    reason: reasonOf(snapshot),
    ...(context.lastError !== undefined ? { lastError: context.lastError } : {}),
  };
}

/**
 * The entry action of a leaf: announce `path` to the host. `passing` is the
 * leaf's own `always` guard, when it has one: entered with it true, the leaf
 * is left in the same step, and the host hears only where the step ends.
 */
function announce(path: ServerStatePath, passing?: (context: ServerContext) => boolean) {
  return {
    type: 'announce' as const,
    params: ({ context }: { context: ServerContext }) => ({ path, passing: passing?.(context) === true }),
  };
}

/** A failed connect: to `needs_auth`, to `failed` (retrying cannot help, or the budget is spent), else wait in `retry`. */
function connectFailed(retry: 'reconnecting.waiting' | 'waiting') {
  return [
    { guard: 'needsAuth' as const, target: '#server.needs_auth', actions: 'recordError' as const },
    { guard: 'permanent' as const, target: '#server.failed', actions: 'recordError' as const },
    { guard: 'budgetSpent' as const, target: '#server.failed', actions: 'recordFailure' as const },
    { target: retry, actions: 'recordFailure' as const },
  ];
}

/** UPDATE in a resting verdict state: admission again when the verdict changed, else only stored (it would come back here). */
const verdictUpdate = [
  { guard: 'updateVerdictChanged' as const, target: 'admission', actions: 'storeUpdate' as const },
  { actions: 'storeUpdate' as const },
];

/**
 * The server actor logic (SPEC §5). Provide the I/O with
 * `serverMachine.provide({ actors: { connect, session }, actions: { dropTools, disconnect, applyFilter, restoreCached } })`.
 * Named delays `retryDelay`, `healthyDelay`, `restartDelay` and `idleDelay` may be overridden too.
 */
export const serverMachine = setup({
  types: {
    context: {} as ServerContext,
    events: {} as ServerEvent,
    input: {} as ServerInput,
    emitted: {} as ServerEmitted,
  },
  actors: {
    /** Opens generation `input.generation`; default stub always fails. */
    connect: fromPromise<ConnectOutput, ConnectInput>(async () => {
      throw new Error('no connect actor provided');
    }),
    /** Watches a connected generation and sends CONNECTION_LOST (and SUBSCRIPTIONS); default stub does nothing. */
    session: fromCallback<ConnectionLostEvent, SessionInput>(() => undefined),
  },
  actions: {
    /** A fresh retry budget: no failures counted, no loss forgiven yet, no backoff pending (SPEC §5). */
    freshBudget: assign({ attempt: 0, healthy: false, lossForgiven: false, nextDelayMs: undefined }),
    /** Unregister every tool and prompt of the server (idempotent). */
    dropTools: (_, _params: { name: string }) => {},
    /** Close the server's client and process, whatever generation (idempotent). */
    disconnect: (_, _params: { name: string }) => {},
    /** Re-apply include/exclude filters and description to the live tool list. */
    applyFilter: (_, _params: { name: string; entry: DesiredServer }) => {},
    /**
     * Register the cached listing of `entry.fingerprint`, if any, marked
     * `cached` (idempotent; nothing when none is cached or tools are already
     * registered). Runs on every entry into `live`, before any connection.
     */
    restoreCached: (_, _params: { name: string; entry: DesiredServer; generation: number }) => {},
    /** A connect commits and caches its listing: from now on this fingerprint can be served without connecting. */
    markCached: assign({ cached: true }),
    callStarted: assign({ calls: ({ context }) => context.calls + 1 }),
    // Floored at 0: a call that outlived its generation (or a reset) ends after the count was cleared.
    callEnded: assign({ calls: ({ context }) => Math.max(0, context.calls - 1) }),
    storeUpdate: assign(({ context, event }) => {
      if (event.type !== 'UPDATE') return {};
      // A new fingerprint is another server as far as the cache goes.
      const cached = event.entry.fingerprint === context.entry.fingerprint ? context.cached || event.entry.cached === true : event.entry.cached === true;
      return { entry: event.entry, gating: event.gating, cached };
    }),
    nextGeneration: assign({ generation: ({ context }) => context.generation + 1 }),
    /** Tell the host the leaf just entered (SPEC §9): see {@link announce}. */
    announce: enqueueActions(({ context, enqueue }, params: { path: ServerStatePath; passing: boolean }) => {
      if (!params.passing) enqueue.emit(transitionOf(params.path, context));
    }),
    /** An error reported by the controller (`ERROR_REPORTED`): only `lastError` changes. */
    noteError: assign({ lastError: ({ context, event }) => (event.type === 'ERROR_REPORTED' ? event.error : context.lastError) }),
    recordError: assign({
      lastError: ({ event }) => ((event as Failure).error === undefined ? 'connection lost' : messageOf((event as Failure).error)),
      nextDelayMs: undefined,
    }),
    /** Count a failed attempt or a lost connection (unless forgiven) and schedule the next try. */
    recordFailure: assign(({ context, event }) => {
      const failure = event as Failure;
      if (forgivesLoss(context, failure)) {
        return {
          lossForgiven: true,
          healthy: false,
          lastError: failure.error === undefined ? 'connection lost' : messageOf(failure.error),
          nextDelayMs: 0,
        };
      }
      const attempt = context.attempt + 1;
      const spent = attempt >= context.backoff.attempts;
      return {
        attempt,
        healthy: false,
        lastError: failure.error === undefined ? 'connection lost' : messageOf(failure.error),
        nextDelayMs: spent ? undefined : reconnectsAtOnce(context, failure) ? 0 : backoffDelay(context.backoff, attempt),
      };
    }),
  },
  guards: {
    verdictIs: ({ context }, params: { verdict: AdmissionVerdict }) => admissionOf(context.entry, context.gating) === params.verdict,
    updateAdmitted: ({ event }) => event.type === 'UPDATE' && admissionOf(event.entry, event.gating) === 'admitted',
    updateFingerprintChanged: ({ context, event }) => event.type === 'UPDATE' && event.entry.fingerprint !== context.entry.fingerprint,
    /** The update brings a cached listing of the same fingerprint that was not there before (another replica took it). */
    updateNewlyCached: ({ context, event }) =>
      event.type === 'UPDATE' && event.entry.cached === true && !context.cached && event.entry.fingerprint === context.entry.fingerprint,
    updateConfigChanged: ({ context, event }) =>
      event.type === 'UPDATE' && (event.entry.hash !== context.entry.hash || event.entry.configHash !== context.entry.configHash),
    updateVerdictChanged: ({ context, event }) =>
      event.type === 'UPDATE' && admissionOf(event.entry, event.gating) !== admissionOf(context.entry, context.gating),
    // Typed loosely: setup() does not see invoke done events, and a synthetic or late one may carry anything.
    connectedCurrentGeneration: ({ context, event }) => (event as { output?: Partial<ConnectOutput> }).output?.generation === context.generation,
    lostCurrentGeneration: ({ context, event }) => event.type === 'CONNECTION_LOST' && event.generation === context.generation,
    reportedCurrentGeneration: ({ context, event }) =>
      event.type === 'ERROR_REPORTED' && (event.generation === undefined || event.generation === context.generation),
    needsAuth: ({ event }) => isNeedsAuth((event as Failure).error),
    permanent: ({ event }) => isPermanent(event as Failure),
    budgetSpent: ({ context, event }) => !forgivesLoss(context, event as Failure) && context.attempt + 1 >= context.backoff.attempts,
    reconnectAtOnce: ({ context, event }) => reconnectsAtOnce(context, event as Failure),
    /** The server starts on its first call rather than on admission. */
    lazy: ({ context }) => startupOf(context) === 'lazy',
    /** A listing of the current fingerprint can be served without connecting. */
    cached: ({ context }) => context.cached,
    /** Calls in flight or resource subscriptions held: a connected server must stay up. */
    inUse: ({ context }) => inUse(context),
    subscribed: ({ context }) => subscribed(context),
    // A held server is someone's to keep: the host's default idle timeout applies once it is
    // released, but a server whose own config sets `idleTimeoutMs` asked to be stopped when
    // unused, held or not (its next call wakes it).
    idleStops: ({ context }) => idleTimeoutOf(context) !== undefined && (!context.held || ownIdleTimeoutOf(context) !== undefined),
    /** Started on demand only, and nobody holds it: admission and a finished connect leave it dormant. */
    waitsForHold: ({ context }) => context.lifecycle.onDemand === true && !context.held,
  },
  delays: {
    /** Backoff wait before the next attempt (`context.nextDelayMs`). */
    retryDelay: ({ context }) => context.nextDelayMs ?? context.backoff.initialMs,
    /** How long a connection must stay up to reset the budget. */
    healthyDelay: ({ context }) => context.backoff.healthyMs,
    /** Pause in `fingerprint_changed` before re-admission; 0 keeps the state observable without waiting. */
    restartDelay: 0,
    /** How long a connected server may go without a call before it is stopped (parked when it never is: see `idleStops`). */
    idleDelay: ({ context }) => Math.min(idleTimeoutOf(context) ?? NEVER_MS, NEVER_MS),
    /** How long a first connect may take before it is reported as starting slowly. */
    startDelay: ({ context }) => Math.min(slowStartOf(context), NEVER_MS),
  },
}).createMachine({
  id: 'server',
  context: ({ input }) => ({
    name: input.name,
    entry: input.entry,
    gating: input.gating,
    backoff: resolveBackoff(input.backoff),
    generation: 0,
    attempt: 0,
    healthy: false,
    lossForgiven: false,
    lifecycle: resolveLifecycle(input.lifecycle),
    cached: input.entry.cached === true,
    calls: 0,
    held: false,
    subscriptions: 0,
  }),
  initial: 'admission',
  on: {
    REMOVE: { target: '.removed' },
    // Recorded wherever the server is, so a server admitted later starts held; `dormant` and `connected.idle` act on them too.
    HOLD: { actions: assign({ held: true }) },
    RELEASE: { actions: assign({ held: false }) },
    PARK: { actions: assign({ held: false }) },
    // Recorded wherever the server is; `connected` and `dormant` act on the count through `inUse` / `subscribed`.
    SUBSCRIPTIONS: { actions: assign({ subscriptions: ({ event }) => Math.max(0, event.count) }) },
    // Wherever the server is: the report changes its last error, never its state.
    ERROR_REPORTED: { guard: 'reportedCurrentGeneration', actions: 'noteError' },
  },
  states: {
    admission: {
      description: 'Transient: disabled → untrusted → excluded → not_allowed → rejected → pending_approval → connect (SPEC §5).',
      always: [
        { guard: { type: 'verdictIs', params: { verdict: 'disabled' } }, target: 'disabled' },
        { guard: { type: 'verdictIs', params: { verdict: 'untrusted' } }, target: 'untrusted' },
        { guard: { type: 'verdictIs', params: { verdict: 'excluded' } }, target: 'excluded' },
        { guard: { type: 'verdictIs', params: { verdict: 'not_allowed' } }, target: 'not_allowed' },
        { guard: { type: 'verdictIs', params: { verdict: 'rejected' } }, target: 'rejected' },
        { guard: { type: 'verdictIs', params: { verdict: 'pending_approval' } }, target: 'pending_approval' },
        // Admitted. A lazy server whose listing is cached serves it without starting anything;
        // an on-demand one nobody holds starts nothing either (with or without a cache).
        {
          guard: or(['waitsForHold', and(['lazy', 'cached'])]),
          target: 'live.dormant',
          actions: ['freshBudget', assign({ calls: 0 })],
        },
        {
          target: 'live',
          // Every admission starts with a fresh budget.
          actions: ['freshBudget', assign({ calls: 0 })],
        },
      ],
    },
    // Resting verdict states: nothing runs; an UPDATE that changes the verdict re-runs admission,
    // any other only stores the update (admission would return here, so nothing is announced).
    disabled: { description: 'config has disabled: true', entry: announce('disabled'), on: { UPDATE: verdictUpdate } },
    untrusted: { description: 'gated scope in an untrusted folder', entry: announce('untrusted'), on: { UPDATE: verdictUpdate } },
    excluded: { description: 'listed in mcp.excluded', entry: announce('excluded'), on: { UPDATE: verdictUpdate } },
    not_allowed: { description: 'not in the effective allowed list', entry: announce('not_allowed'), on: { UPDATE: verdictUpdate } },
    rejected: { description: 'the user rejected this config hash', entry: announce('rejected'), on: { UPDATE: verdictUpdate } },
    pending_approval: { description: 'waiting for a decision on this config hash', entry: announce('pending_approval'), on: { UPDATE: verdictUpdate } },
    live: {
      description: 'Admitted: connected, connecting, reconnecting or dormant; leaving drops tools and disconnects.',
      initial: 'connecting',
      // Cached tools are there at once, whether the server then connects or sleeps.
      entry: { type: 'restoreCached', params: ({ context }) => ({ name: context.name, entry: context.entry, generation: context.generation }) },
      exit: [
        { type: 'dropTools', params: nameParam },
        { type: 'disconnect', params: nameParam },
      ],
      on: {
        UPDATE: [
          { guard: not('updateAdmitted'), target: '#server.admission', actions: 'storeUpdate' },
          { guard: 'updateFingerprintChanged', target: '#server.fingerprint_changed', actions: 'storeUpdate' },
          {
            guard: 'updateConfigChanged',
            actions: ['storeUpdate', { type: 'applyFilter', params: ({ context }) => ({ name: context.name, entry: context.entry }) }],
          },
          // Same verdict, same config: no churn.
          { actions: 'storeUpdate' },
        ],
        // Stop now, whatever it is doing: it must not run here (the machine's own `dormant` closes the connection).
        PARK: { target: '.dormant', actions: assign({ held: false }) },
        // Counted wherever the server is (a call may wait for a connection); dormant and connected refine them.
        CALL_STARTED: { actions: 'callStarted' },
        CALL_ENDED: { actions: 'callEnded' },
      },
      states: {
        connecting: {
          description: 'First connection of this admission (or a wake from dormant); holds only cached tools, if any.',
          entry: 'nextGeneration',
          // The connect keeps running through both: a slow start is reported, not cut off.
          initial: 'starting',
          states: {
            starting: { entry: announce('live.connecting.starting'), after: { startDelay: 'slow' } },
            slow: {
              description: 'Slower than its start timeout: still starting in the background; start() no longer waits for it.',
              entry: announce('live.connecting.slow'),
            },
          },
          invoke: {
            id: 'connect',
            src: 'connect',
            input: ({ context }) => ({ name: context.name, entry: context.entry, generation: context.generation }),
            onDone: [
              // A lazy server that connected only to fill its cache (nobody is calling) goes back to sleep.
              { guard: and(['connectedCurrentGeneration', or(['lazy', 'waitsForHold']), not('inUse')]), target: 'dormant', actions: 'markCached' },
              { guard: 'connectedCurrentGeneration', target: 'connected', actions: 'markCached' },
            ],
            onError: connectFailed('reconnecting.waiting'),
          },
        },
        dormant: {
          description: 'Admitted and stopped: cached tools registered, no process; the first tool call starts it.',
          // Closes the connection it came from (a cache fill or an idle stop); the tools stay.
          entry: [{ type: 'disconnect', params: nameParam }, announce('live.dormant', subscribed)],
          // Subscribed resources need a running server to send their updates (a re-admitted lazy server, say).
          always: { guard: 'subscribed', target: 'connecting', actions: 'freshBudget' },
          on: {
            CALL_STARTED: {
              target: 'connecting',
              // A wake is a fresh start: full budget.
              actions: ['callStarted', 'freshBudget'],
            },
            RECONNECT: { target: 'connecting', actions: 'freshBudget' },
            // A listing appeared for a server that had none (in a cluster, another replica listed it): its tools show now.
            UPDATE: {
              guard: and(['updateAdmitted', 'updateNewlyCached']),
              actions: [
                'storeUpdate',
                { type: 'restoreCached', params: ({ context, event }) => ({ name: context.name, entry: (event as UpdateEvent).entry, generation: context.generation }) },
              ],
            },
            // Held: start now, unless lazy with a cached listing (then its first call does).
            HOLD: {
              guard: not(and(['lazy', 'cached'])),
              target: 'connecting',
              actions: ['freshBudget', assign({ held: true })],
            },
          },
        },
        connected: {
          description: 'Tools of the current generation are registered.',
          entry: assign({ healthy: false, nextDelayMs: undefined }),
          invoke: {
            id: 'session',
            src: 'session',
            input: ({ context }) => ({ name: context.name, generation: context.generation, subscriptions: context.subscriptions }),
          },
          after: {
            healthyDelay: { actions: assign({ attempt: 0, healthy: true, lossForgiven: false }) },
          },
          on: {
            CONNECTION_LOST: [
              { guard: and(['lostCurrentGeneration', 'permanent']), target: '#server.failed', actions: 'recordError' },
              { guard: and(['lostCurrentGeneration', 'budgetSpent']), target: '#server.failed', actions: 'recordFailure' },
              { guard: and(['lostCurrentGeneration', 'reconnectAtOnce']), target: 'reconnecting.attempting', actions: 'recordFailure' },
              { guard: 'lostCurrentGeneration', target: 'reconnecting.waiting', actions: 'recordFailure' },
              // A late loss from an old generation is ignored.
            ],
          },
          initial: 'idle',
          states: {
            idle: {
              description: 'No call in flight and no resource subscribed; with an idle timeout, the server is stopped when it runs out.',
              entry: announce('live.connected.idle', inUse),
              always: { guard: 'inUse', target: 'busy' },
              after: { idleDelay: { guard: 'idleStops', target: '#server.live.dormant' } },
              on: {
                CALL_STARTED: { target: 'busy', actions: 'callStarted' },
                // The idle time starts at the release: re-entering restarts the timer.
                RELEASE: { target: 'idle', reenter: true, actions: assign({ held: false }) },
              },
            },
            busy: {
              description: 'Calls in flight or resources subscribed; the idle timer starts over when the last one ends.',
              entry: announce('live.connected.busy', (context) => !inUse(context)),
              always: { guard: not('inUse'), target: 'idle' },
            },
          },
        },
        reconnecting: {
          description: 'Backoff and retry; the previous generation’s tools stay registered.',
          initial: 'waiting',
          states: {
            waiting: {
              entry: announce('live.reconnecting.waiting'),
              after: { retryDelay: 'attempting' },
              on: {
                RECONNECT: { target: 'attempting', actions: assign({ attempt: 0, lossForgiven: false, nextDelayMs: undefined }) },
              },
            },
            attempting: {
              entry: ['nextGeneration', announce('live.reconnecting.attempting')],
              invoke: {
                id: 'connect',
                src: 'connect',
                input: ({ context }) => ({ name: context.name, entry: context.entry, generation: context.generation }),
                onDone: { guard: 'connectedCurrentGeneration', target: '#server.live.connected', actions: 'markCached' },
                onError: connectFailed('waiting'),
              },
              on: {
                // Already trying: keep this attempt, just refill the budget.
                RECONNECT: { actions: assign({ attempt: 0, lossForgiven: false }) },
              },
            },
          },
        },
      },
    },
    fingerprint_changed: {
      description: 'Connection-relevant config changed: old generation dropped, re-admitting.',
      entry: announce('fingerprint_changed'),
      after: { restartDelay: 'admission' },
      on: { UPDATE: { actions: 'storeUpdate' } },
    },
    needs_auth: {
      description: 'The server needs authorisation; rests until AUTHENTICATED (new tokens), a config change or RECONNECT.',
      entry: announce('needs_auth'),
      on: {
        UPDATE: [{ guard: or(['updateConfigChanged', 'updateVerdictChanged']), target: 'admission', actions: 'storeUpdate' }, { actions: 'storeUpdate' }],
        RECONNECT: 'admission',
        AUTHENTICATED: 'admission',
      },
    },
    failed: {
      description: 'Backoff budget spent; rests until its config changes or RECONNECT.',
      entry: announce('failed'),
      on: {
        UPDATE: [{ guard: or(['updateConfigChanged', 'updateVerdictChanged']), target: 'admission', actions: 'storeUpdate' }, { actions: 'storeUpdate' }],
        RECONNECT: 'admission',
      },
    },
    removed: {
      description: 'Removed from the config; the actor is done.',
      entry: announce('removed'),
      type: 'final',
    },
  },
});
