/**
 * Shared fixtures for the machine tests: desired entries, gating states, and
 * a simulated world (connections + tool registry) driven only by the actors
 * and actions the machines are provided with.
 */
import { fromCallback, fromPromise } from 'xstate';
import type { ConnectInput, ConnectionLostEvent, ConnectOutput, SessionInput } from '../../machines/server.machine.js';
import { serverMachine } from '../../machines/server.machine.js';
import type { DesiredServer, GatingState, Scope, ServerConfig } from '../../machines/types.js';

/** An entry with hand-made fingerprint and hash (the machines only compare them). */
export function entry(name: string, opts: { scope?: Scope; fp?: string; hash?: string; config?: ServerConfig } = {}): DesiredServer {
  const fp = opts.fp ?? 'fp1';
  return {
    name,
    scope: opts.scope ?? 'user',
    source: `/tmp/${name}.json`,
    config: opts.config ?? { command: 'node', args: [name] },
    fingerprint: fp,
    hash: opts.hash ?? `${fp}-h`,
  };
}

/** Trusted folder, nothing excluded, no decisions. */
export function openGating(extra: Partial<GatingState> = {}): GatingState {
  return { excluded: [], trusted: true, approvals: {}, ...extra };
}

/** A gating that approves `e`'s current hash. */
export function approving(e: DesiredServer, gating: GatingState = openGating()): GatingState {
  return { ...gating, approvals: { ...gating.approvals, [e.name]: { hash: e.hash, decision: 'approved' } } };
}

/** Let promise-based stub actors settle (no timers involved). */
export async function flush(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await Promise.resolve();
}

interface Pending {
  input: ConnectInput;
  resolve: (v: ConnectOutput) => void;
  reject: (e: unknown) => void;
}

/**
 * A simulated world for real actors: `connect` opens a connection and
 * registers tools (as the real connect actor commits a generation before
 * resolving), `dropTools` / `disconnect` undo that, `session` lets the test
 * drop a connection. `mode: 'auto'` resolves (or fails, per `failWith`)
 * connects by itself; `mode: 'manual'` leaves them to the test.
 */
export class World {
  /** name → generation whose tools are registered. */
  readonly tools = new Map<string, number>();
  /** name → generation of the open client. */
  readonly connections = new Map<string, number>();
  readonly connectCalls: ConnectInput[] = [];
  readonly log: string[] = [];
  readonly pending: Pending[] = [];
  private readonly sessions = new Map<string, { generation: number; sendBack: (e: ConnectionLostEvent) => void }>();
  /** In auto mode: an error to fail the next connects with (per name), or undefined to succeed. */
  failWith = new Map<string, unknown>();

  constructor(readonly mode: 'auto' | 'manual' = 'auto') {}

  /** `serverMachine` (or the given copy) provided with this world's actors and actions. */
  provide(machine = serverMachine) {
    return machine.provide({
      actors: {
        connect: fromPromise<ConnectOutput, ConnectInput>(({ input }) => {
          this.connectCalls.push(input);
          this.log.push(`connect ${input.name}#${input.generation}`);
          return new Promise<ConnectOutput>((resolve, reject) => {
            const commit = (v: ConnectOutput) => {
              this.connections.set(input.name, input.generation);
              this.tools.set(input.name, input.generation);
              resolve(v);
            };
            if (this.mode === 'manual') {
              this.pending.push({ input, resolve: commit, reject });
              return;
            }
            const err = this.failWith.get(input.name);
            if (err !== undefined) reject(err);
            else commit({ generation: input.generation });
          });
        }),
        session: fromCallback<ConnectionLostEvent, SessionInput>(({ input, sendBack }) => {
          this.sessions.set(input.name, { generation: input.generation, sendBack });
          return () => {
            if (this.sessions.get(input.name)?.generation === input.generation) this.sessions.delete(input.name);
          };
        }),
      },
      actions: {
        dropTools: (_, params) => {
          this.log.push(`dropTools ${params.name}`);
          this.tools.delete(params.name);
        },
        disconnect: (_, params) => {
          this.log.push(`disconnect ${params.name}`);
          this.connections.delete(params.name);
        },
        applyFilter: (_, params) => {
          this.log.push(`applyFilter ${params.name} ${params.entry.hash}`);
        },
      },
    });
  }

  /** Forget everything, so one provided machine can serve many runs (providing is not free). */
  reset(): void {
    this.tools.clear();
    this.connections.clear();
    this.connectCalls.length = 0;
    this.log.length = 0;
    this.pending.length = 0;
    this.sessions.clear();
    this.failWith.clear();
  }

  /** The connection of `name` drops (its session reports it). */
  lose(name: string, opts: { sessionLost?: boolean; error?: string; permanent?: boolean } = {}): void {
    const s = this.sessions.get(name);
    if (!s) throw new Error(`no session for ${name}`);
    this.connections.delete(name);
    s.sendBack({ type: 'CONNECTION_LOST', generation: s.generation, ...opts });
  }

  /** Whether a session actor is watching `name`. */
  watching(name: string): boolean {
    return this.sessions.has(name);
  }

  /** Settle the oldest pending manual connect. */
  settle(outcome: 'ok' | { error: unknown }): ConnectInput {
    const p = this.pending.shift();
    if (!p) throw new Error('no pending connect');
    if (outcome === 'ok') p.resolve({ generation: p.input.generation });
    else p.reject(outcome.error);
    return p.input;
  }

  /** Log lines that disconnect or drop tools for `name`. */
  teardowns(name: string): string[] {
    return this.log.filter((l) => l === `dropTools ${name}` || l === `disconnect ${name}`);
  }
}
