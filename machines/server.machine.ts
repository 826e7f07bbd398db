/**
 * One MCP server's life (SPEC §5) as a pure statechart. All I/O is injected:
 * `src/` provides the `connect` / `session` actors and the `dropTools` /
 * `disconnect` / `applyFilter` actions with `.provide()`.
 *
 * Shape (the public, flat state names come from `stateNameOf` in reason.ts):
 *
 * ```
 * admission (transient) ─▶ disabled | untrusted | excluded | not_allowed
 *                          | rejected | pending_approval | live
 * live (exit: dropTools, disconnect)
 *   connecting ─▶ connected ⇄ reconnecting { waiting ─▶ attempting }
 * fingerprint_changed ─▶ admission      needs_auth, failed: resting
 * removed (final)
 * ```
 *
 * The three connection states are grouped under `live` so that leaving the
 * live set always unregisters tools and closes the client (one exit action,
 * no transition can forget it), while moving between them keeps the previous
 * generation's tools registered. Their snapshot values are therefore
 * `{ live: 'connecting' }`, `{ live: 'connected' }` and
 * `{ live: { reconnecting: 'waiting' | 'attempting' } }`. A retry after a lost
 * connection happens inside `reconnecting` (substate `attempting`), so
 * `connecting` always means a first connection that holds no tools yet.
 *
 * UPDATE (new entry and gating from the parent):
 * - live, no longer admitted → leaves live (dropTools, disconnect) to its verdict state;
 * - live, fingerprint changed → `fingerprint_changed` (dropTools, disconnect) → admission → new generation;
 * - live, other config change (filters, description, timeout) → `applyFilter`, no reconnect;
 * - live, nothing relevant changed → stays exactly where it is (no churn);
 * - resting verdict state → admission again (a no-op when the verdict stays);
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
 * RECONNECT: from `failed` / `needs_auth` re-runs admission with a fresh
 * budget; while reconnecting it refills the budget and retries now, keeping
 * the old tools. Every admission into `live` starts with a fresh budget.
 */
import { and, assign, fromCallback, fromPromise, not, or, setup, type ActorRefFrom, type SnapshotFrom } from 'xstate';
import { admissionOf, type AdmissionVerdict } from './admission.js';
import { DEFAULT_BACKOFF, type BackoffPolicy, type DesiredServer, type GatingState } from './types.js';

/** Input of one server actor. */
export interface ServerInput {
  name: string;
  entry: DesiredServer;
  gating: GatingState;
  /** Overrides of the SPEC §5 backoff defaults. */
  backoff?: Partial<BackoffPolicy>;
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
  lastError?: string;
  /** The wait before the next attempt, when one is scheduled. */
  nextDelayMs?: number;
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

/** Events a server actor accepts (besides the invoked actors' own done/error events). */
export type ServerEvent = UpdateEvent | { type: 'RECONNECT' } | { type: 'REMOVE' } | ConnectionLostEvent;

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

/**
 * The server actor logic (SPEC §5). Provide the I/O with
 * `serverMachine.provide({ actors: { connect, session }, actions: { dropTools, disconnect, applyFilter } })`.
 * Named delays `retryDelay`, `healthyDelay` and `restartDelay` may be overridden too.
 */
export const serverMachine = setup({
  types: {
    context: {} as ServerContext,
    events: {} as ServerEvent,
    input: {} as ServerInput,
  },
  actors: {
    /** Opens generation `input.generation`; default stub always fails. */
    connect: fromPromise<ConnectOutput, ConnectInput>(async () => {
      throw new Error('no connect actor provided');
    }),
    /** Watches a connected generation and sends CONNECTION_LOST; default stub does nothing. */
    session: fromCallback<ConnectionLostEvent, SessionInput>(() => undefined),
  },
  actions: {
    /** Unregister every tool and prompt of the server (idempotent). */
    dropTools: (_, _params: { name: string }) => {},
    /** Close the server's client and process, whatever generation (idempotent). */
    disconnect: (_, _params: { name: string }) => {},
    /** Re-apply include/exclude filters and description to the live tool list. */
    applyFilter: (_, _params: { name: string; entry: DesiredServer }) => {},
    storeUpdate: assign(({ event }) => (event.type === 'UPDATE' ? { entry: event.entry, gating: event.gating } : {})),
    nextGeneration: assign({ generation: ({ context }) => context.generation + 1 }),
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
    updateConfigChanged: ({ context, event }) => event.type === 'UPDATE' && event.entry.hash !== context.entry.hash,
    updateVerdictChanged: ({ context, event }) =>
      event.type === 'UPDATE' && admissionOf(event.entry, event.gating) !== admissionOf(context.entry, context.gating),
    // Typed loosely: setup() does not see invoke done events, and a synthetic or late one may carry anything.
    connectedCurrentGeneration: ({ context, event }) => (event as { output?: Partial<ConnectOutput> }).output?.generation === context.generation,
    lostCurrentGeneration: ({ context, event }) => event.type === 'CONNECTION_LOST' && event.generation === context.generation,
    needsAuth: ({ event }) => isNeedsAuth((event as Failure).error),
    permanent: ({ event }) => isPermanent(event as Failure),
    budgetSpent: ({ context, event }) => !forgivesLoss(context, event as Failure) && context.attempt + 1 >= context.backoff.attempts,
    reconnectAtOnce: ({ context, event }) => reconnectsAtOnce(context, event as Failure),
  },
  delays: {
    /** Backoff wait before the next attempt (`context.nextDelayMs`). */
    retryDelay: ({ context }) => context.nextDelayMs ?? context.backoff.initialMs,
    /** How long a connection must stay up to reset the budget. */
    healthyDelay: ({ context }) => context.backoff.healthyMs,
    /** Pause in `fingerprint_changed` before re-admission; 0 keeps the state observable without waiting. */
    restartDelay: 0,
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
  }),
  initial: 'admission',
  on: {
    REMOVE: { target: '.removed' },
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
        {
          target: 'live',
          // Every admission starts with a fresh budget.
          actions: assign({ attempt: 0, healthy: false, lossForgiven: false, nextDelayMs: undefined }),
        },
      ],
    },
    // Resting verdict states: nothing runs; any UPDATE re-runs admission (no side effects when the verdict stays).
    disabled: { description: 'config has disabled: true', on: { UPDATE: { target: 'admission', actions: 'storeUpdate' } } },
    untrusted: { description: 'gated scope in an untrusted folder', on: { UPDATE: { target: 'admission', actions: 'storeUpdate' } } },
    excluded: { description: 'listed in mcp.excluded', on: { UPDATE: { target: 'admission', actions: 'storeUpdate' } } },
    not_allowed: { description: 'not in the effective allowed list', on: { UPDATE: { target: 'admission', actions: 'storeUpdate' } } },
    rejected: { description: 'the user rejected this config hash', on: { UPDATE: { target: 'admission', actions: 'storeUpdate' } } },
    pending_approval: { description: 'waiting for a decision on this config hash', on: { UPDATE: { target: 'admission', actions: 'storeUpdate' } } },
    live: {
      description: 'A connection is open or being opened; leaving drops tools and disconnects.',
      initial: 'connecting',
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
      },
      states: {
        connecting: {
          description: 'First connection of this admission; no tools yet.',
          entry: 'nextGeneration',
          invoke: {
            id: 'connect',
            src: 'connect',
            input: ({ context }) => ({ name: context.name, entry: context.entry, generation: context.generation }),
            onDone: { guard: 'connectedCurrentGeneration', target: 'connected' },
            onError: [
              { guard: 'needsAuth', target: '#server.needs_auth', actions: 'recordError' },
              { guard: 'permanent', target: '#server.failed', actions: 'recordError' },
              { guard: 'budgetSpent', target: '#server.failed', actions: 'recordFailure' },
              { target: 'reconnecting.waiting', actions: 'recordFailure' },
            ],
          },
        },
        connected: {
          description: 'Tools of the current generation are registered.',
          entry: assign({ healthy: false, nextDelayMs: undefined }),
          invoke: {
            id: 'session',
            src: 'session',
            input: ({ context }) => ({ name: context.name, generation: context.generation }),
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
        },
        reconnecting: {
          description: 'Backoff and retry; the previous generation’s tools stay registered.',
          initial: 'waiting',
          states: {
            waiting: {
              after: { retryDelay: 'attempting' },
              on: {
                RECONNECT: { target: 'attempting', actions: assign({ attempt: 0, lossForgiven: false, nextDelayMs: undefined }) },
              },
            },
            attempting: {
              entry: 'nextGeneration',
              invoke: {
                id: 'connect',
                src: 'connect',
                input: ({ context }) => ({ name: context.name, entry: context.entry, generation: context.generation }),
                onDone: { guard: 'connectedCurrentGeneration', target: '#server.live.connected' },
                onError: [
                  { guard: 'needsAuth', target: '#server.needs_auth', actions: 'recordError' },
                  { guard: 'permanent', target: '#server.failed', actions: 'recordError' },
                  { guard: 'budgetSpent', target: '#server.failed', actions: 'recordFailure' },
                  { target: 'waiting', actions: 'recordFailure' },
                ],
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
      after: { restartDelay: 'admission' },
      on: { UPDATE: { actions: 'storeUpdate' } },
    },
    needs_auth: {
      description: 'The server needs authorisation; rests until its config changes or RECONNECT.',
      on: {
        UPDATE: [{ guard: or(['updateConfigChanged', 'updateVerdictChanged']), target: 'admission', actions: 'storeUpdate' }, { actions: 'storeUpdate' }],
        RECONNECT: 'admission',
      },
    },
    failed: {
      description: 'Backoff budget spent; rests until its config changes or RECONNECT.',
      on: {
        UPDATE: [{ guard: or(['updateConfigChanged', 'updateVerdictChanged']), target: 'admission', actions: 'storeUpdate' }, { actions: 'storeUpdate' }],
        RECONNECT: 'admission',
      },
    },
    removed: {
      description: 'Removed from the config; the actor is done.',
      type: 'final',
    },
  },
});
