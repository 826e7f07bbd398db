/**
 * Projections of a server actor's state (SPEC §7): its public state name,
 * the reason it is unavailable, and its public status. They read only the
 * snapshot's state value — never a separate table — so the explanation can
 * not drift from what the machine does.
 */
import type { StateValue } from 'xstate';

/** The 14 public state names of a server (SPEC §5, plus `dormant`, SPEC §12). */
export type ServerStateName =
  | 'pending_approval'
  | 'rejected'
  | 'excluded'
  | 'not_allowed'
  | 'disabled'
  | 'untrusted'
  | 'connecting'
  | 'connected'
  | 'dormant'
  | 'fingerprint_changed'
  | 'reconnecting'
  | 'needs_auth'
  | 'failed'
  | 'removed';

/** All public state names, in SPEC §5 order. */
export const SERVER_STATE_NAMES: readonly ServerStateName[] = [
  'pending_approval',
  'rejected',
  'excluded',
  'not_allowed',
  'disabled',
  'untrusted',
  'connecting',
  'connected',
  'dormant',
  'fingerprint_changed',
  'reconnecting',
  'needs_auth',
  'failed',
  'removed',
];

/** Why a server's actor is unavailable: a projection of its state ({@link reasonOf}). */
export type ActorReason =
  | 'not_allowed'
  | 'excluded'
  | 'pending_approval'
  | 'rejected'
  | 'disabled'
  | 'untrusted'
  | 'reconnecting'
  | 'failed'
  | 'needs_auth'
  | 'removed'
  /** Still connecting past its start timeout; it keeps starting in the background. */
  | 'starting_slowly';

/**
 * Why a server or its tools are unavailable (SPEC §7): an
 * {@link ActorReason}, or `config_invalid` for a config entry that was
 * refused (invalid, or a variable it needs is unset). Such an entry never
 * gets an actor, so that reason is no machine state: the controller derives
 * it from the config-error report, never from a snapshot.
 */
export type Reason = ActorReason | 'config_invalid';

/** Status shown to users (SPEC §7); `dormant`: tools usable, no process until the first call. */
export type PublicStatus = 'pending' | 'connecting' | 'connected' | 'dormant' | 'failed' | 'needs-auth' | 'disabled';

/** Anything with a server machine's state value (a snapshot of `serverMachine` or of a provided copy). */
export interface ServerSnapshotLike {
  value: StateValue;
}

const NAMES = new Set<string>(SERVER_STATE_NAMES);

/**
 * The public state name of a server snapshot. The machine groups
 * `connecting`, `connected` and `reconnecting` under `live`
 * (`{ live: 'connected' }`, `{ live: { reconnecting: 'waiting' } }`); this
 * flattens that to the SPEC §5 name. Throws on a value that is not a server
 * machine's (a programming error, not a user one).
 */
export function stateNameOf(snapshot: ServerSnapshotLike): ServerStateName {
  const value = snapshot.value;
  if (typeof value === 'string') {
    if (NAMES.has(value)) return value as ServerStateName;
  } else if (value && typeof value === 'object' && 'live' in value) {
    const inner = value.live;
    // The first key without an array of them: this runs at every transition of every server.
    let name: string | undefined = typeof inner === 'string' ? inner : undefined;
    if (inner && typeof inner === 'object') for (const key in inner) if (Object.hasOwn(inner, key)) { name = key; break; }
    if (name === 'connecting' || name === 'connected' || name === 'reconnecting' || name === 'dormant') return name;
  }
  throw new Error(`not a server machine state: ${JSON.stringify(value)}`);
}

/**
 * `unavailableReason` (SPEC §7): `undefined` for `connecting`, `connected`
 * and `dormant` (admitted; tools are or will shortly be there — a dormant
 * server's cached tools are callable, the call starts it),
 * `'reconnecting'` for `reconnecting` and `fingerprint_changed` (a new
 * generation is on its way), otherwise the state's own name.
 */
export function reasonOf(snapshot: ServerSnapshotLike): ActorReason | undefined {
  if (isStartingSlowly(snapshot)) return 'starting_slowly';
  return reasonOfState(stateNameOf(snapshot));
}

/**
 * A first connect that has run past its start timeout
 * (`live.connecting.slow`): public state `connecting`, reason
 * `starting_slowly`, and settled as far as `start()` is concerned.
 */
export function isStartingSlowly(snapshot: ServerSnapshotLike): boolean {
  const live = typeof snapshot.value === 'object' && snapshot.value ? (snapshot.value as { live?: unknown }).live : undefined;
  const connecting = typeof live === 'object' && live ? (live as { connecting?: unknown }).connecting : undefined;
  return connecting === 'slow';
}

/** {@link reasonOf} for a state name. */
export function reasonOfState(state: ServerStateName): ActorReason | undefined {
  switch (state) {
    case 'connecting':
    case 'connected':
    case 'dormant':
      return undefined;
    case 'fingerprint_changed':
    case 'reconnecting':
      return 'reconnecting';
    default:
      return state;
  }
}

/**
 * Public status (SPEC §7):
 *
 * | state | status |
 * |---|---|
 * | pending_approval | `pending` (waiting for the user's decision) |
 * | connecting, reconnecting, fingerprint_changed | `connecting` |
 * | connected | `connected` |
 * | dormant | `dormant` (tools usable; the first call starts the server) |
 * | failed | `failed` |
 * | needs_auth | `needs-auth` |
 * | disabled, excluded, not_allowed, rejected, untrusted, removed | `disabled` (held off by config, gating or a decision) |
 */
export function publicStatusOf(snapshot: ServerSnapshotLike): PublicStatus {
  return publicStatusOfState(stateNameOf(snapshot));
}

/** {@link publicStatusOf} for a state name. */
export function publicStatusOfState(state: ServerStateName): PublicStatus {
  switch (state) {
    case 'pending_approval':
      return 'pending';
    case 'connecting':
    case 'reconnecting':
    case 'fingerprint_changed':
      return 'connecting';
    case 'connected':
      return 'connected';
    case 'dormant':
      return 'dormant';
    case 'failed':
      return 'failed';
    case 'needs_auth':
      return 'needs-auth';
    default:
      return 'disabled';
  }
}

/**
 * Whether a server in `state` is on its way to a connection: `connecting`,
 * `reconnecting` or `fingerprint_changed` (public status `connecting`). Such
 * a server has not settled for `start()`, and a call it cannot take now is
 * worth retrying in a moment.
 */
export function isInTransit(state: ServerStateName): boolean {
  return publicStatusOfState(state) === 'connecting';
}

/**
 * True in `connecting`, `connected` and `reconnecting`: a connection is open
 * or being opened. In every other state the server has no client and no
 * process — `dormant` included, although the machine keeps it under `live`
 * (admitted, tools registered).
 */
export function isLive(snapshot: ServerSnapshotLike): boolean {
  const state = stateNameOf(snapshot);
  return state === 'connecting' || state === 'connected' || state === 'reconnecting';
}

/**
 * Whether a server in `state` may have tools in the registry: `connected`
 * (its current generation's), `reconnecting` (the last connected
 * generation's, kept so the tool list does not flicker), `connecting` and
 * `dormant` (the cached listing, or the last live one after an idle stop —
 * none when nothing is cached). Every other state holds none: leaving the
 * admitted states runs `dropTools`.
 */
export function holdsTools(state: ServerStateName): boolean {
  return state === 'connected' || state === 'reconnecting' || state === 'connecting' || state === 'dormant';
}
