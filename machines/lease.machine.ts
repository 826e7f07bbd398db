/**
 * A cluster singleton's lease as one replica sees it (docs/cluster.md): a
 * server marked `singleton: true` runs on the replica that holds its Redis
 * lease; every other replica forwards its calls there. The replica's I/O
 * (src/cluster/singletons.ts) tells this machine what Redis said; the
 * server's placement and the reason a replica does not run it are
 * projections of the state ({@link leaseViewOf}), never a separate table.
 */
import { assign, setup } from 'xstate';

/** Events: what the lease's I/O learnt. */
export type LeaseEvent =
  /** This replica took the lease with fencing token `token`. */
  | { type: 'ACQUIRED'; token: number }
  /** Another replica holds it (its id, its token, where it answers if announced). */
  | { type: 'HELD_ELSEWHERE'; replica: string; token: number; url?: string }
  /** Nobody holds it and this replica does not need it. */
  | { type: 'FREE' }
  /** Our renewal was refused, or it expired before one got through: the server was stopped here. */
  | { type: 'LOST' }
  /** We gave it up (nobody here needs the server, or the replica stops). */
  | { type: 'RELEASED' }
  /** Redis did not answer. */
  | { type: 'UNREACHABLE'; error: string };

/** What the machine remembers. */
export interface LeaseContext {
  server: string;
  /** Our token while `holding`; the holder's while `remote`; the token lost while `lost`. */
  token: number | undefined;
  /** The holder's replica id while `remote`. */
  holder: string | undefined;
  holderUrl: string | undefined;
  error: string | undefined;
}

/** The lease machine; input: the server's name. */
export const leaseMachine = setup({
  types: {} as { context: LeaseContext; events: LeaseEvent; input: { server: string } },
  actions: {
    hold: assign(({ event }) => (event.type === 'ACQUIRED' ? { token: event.token, holder: undefined, holderUrl: undefined, error: undefined } : {})),
    elsewhere: assign(({ event }) =>
      event.type === 'HELD_ELSEWHERE' ? { token: event.token, holder: event.replica, holderUrl: event.url, error: undefined } : {},
    ),
    forget: assign({ token: undefined, holder: undefined, holderUrl: undefined, error: undefined }),
    unreachable: assign(({ event }) => (event.type === 'UNREACHABLE' ? { error: event.error } : {})),
  },
}).createMachine({
  id: 'lease',
  context: ({ input }) => ({ server: input.server, token: undefined, holder: undefined, holderUrl: undefined, error: undefined }),
  initial: 'free',
  on: {
    ACQUIRED: { target: '.holding', actions: 'hold' },
    HELD_ELSEWHERE: { target: '.remote', actions: 'elsewhere' },
    FREE: { target: '.free', actions: 'forget' },
  },
  states: {
    free: { description: 'Nobody here needs the server and this replica does not hold its lease.' },
    holding: {
      description: 'This replica holds the lease: the server may run here, under our fencing token.',
      on: {
        LOST: { target: 'lost' },
        RELEASED: { target: 'free', actions: 'forget' },
        // A Redis outage does not end a lease by itself: it runs until its TTL, and the I/O sends LOST then.
      },
    },
    remote: {
      description: 'Another replica holds the lease: the server runs there and its calls are forwarded.',
      on: { UNREACHABLE: { target: 'unknown', actions: 'unreachable' } },
    },
    lost: {
      description: 'Our lease ended (refused or expired) and the server was stopped here; who holds it now is not known yet.',
      on: { UNREACHABLE: { target: 'unknown', actions: 'unreachable' } },
    },
    unknown: {
      description: 'Redis does not answer: nobody here knows who holds the lease, so the server neither runs here nor is forwarded.',
    },
  },
});

/** Where a singleton runs, seen from this replica: the projection of the lease machine's state. */
export type LeaseView =
  | { placement: 'here'; token: number }
  | { placement: 'remote'; replica: string; token: number; url: string | undefined; reason: string }
  | { placement: 'none'; reason: string };

/** Anything with the lease machine's state value and context. */
export interface LeaseSnapshotLike {
  value: unknown;
  context: LeaseContext;
}

/**
 * The projection: `here` while holding, `remote` (with the reason text
 * "runs on replica X (singleton lease, token N)") while another replica
 * holds it, else `none` with why it runs nowhere the replica knows of.
 */
export function leaseViewOf(snapshot: LeaseSnapshotLike): LeaseView {
  const { context: c } = snapshot;
  switch (snapshot.value) {
    case 'holding':
      return { placement: 'here', token: c.token ?? 0 };
    case 'remote':
      return { placement: 'remote', replica: c.holder ?? '?', token: c.token ?? 0, url: c.holderUrl, reason: `runs on replica ${c.holder ?? '?'} (singleton lease, token ${c.token ?? '?'})` };
    case 'lost':
      return { placement: 'none', reason: `this replica lost the singleton lease (token ${c.token ?? '?'}) and stopped the server; another replica takes it over` };
    case 'unknown':
      return { placement: 'none', reason: `the singleton lease cannot be read (${c.error ?? 'Redis does not answer'}); the server runs nowhere this replica knows of until Redis answers` };
    default:
      return { placement: 'none', reason: 'singleton: no replica holds its lease yet; the first replica a session needs it on takes it' };
  }
}
