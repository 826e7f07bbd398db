import type { AnyActorRef, InspectionEvent, StateValue } from 'xstate';
import { reasonOf, stateNameOf } from '../../machines/reason.js';
import type { AuthHooks } from './auth.js';
import type { ServerStateName } from './types.js';
import type { Workspace } from './workspace.js';

/**
 * Server state changes as the host hears of them (SPEC §9): each transition
 * of a server actor, read from the reconciler's inspection stream, becomes
 * one `server-state` event, a supervisor line in the server's log, a wake-up
 * for OAuth, and a `client-update`. It also keeps the host's holds: a held
 * server's new actor (first spawn, re-added, replaced) is told HOLD too.
 */
export class Transitions {
  private readonly stateCache = new Map<string, ServerStateName>();
  private readonly transitionKeys = new Map<string, string>();
  /** Servers a host holds, and the actor each was last told: a re-spawned actor is told again. */
  private readonly holds = new Map<string, AnyActorRef | undefined>();

  constructor(
    private readonly ws: Workspace,
    private readonly auth: AuthHooks,
  ) {}

  /** Hold `server` (see `McpController.hold`); idempotent. */
  hold(server: string): void {
    if (this.holds.has(server)) return;
    this.holds.set(server, undefined);
    const ref = this.ws.server(server);
    if (ref) this.tellHold(server, ref);
  }

  /** Let go of `server` (see `McpController.release`); idempotent, a no-op once disposing. */
  release(server: string): void {
    if (!this.holds.delete(server) || this.ws.disposing) return;
    const ref = this.ws.server(server);
    if (ref?.getSnapshot().status === 'active') ref.send({ type: 'RELEASE' });
  }

  /** Drop the hold on `server` and stop it now into `dormant` (see `McpController.park`). */
  park(server: string): void {
    this.holds.delete(server);
    if (this.ws.disposing) return;
    const ref = this.ws.server(server);
    if (ref?.getSnapshot().status === 'active') ref.send({ type: 'PARK' });
  }

  /** The reconciler's inspection stream: each server actor's snapshots. */
  observe(ev: InspectionEvent): void {
    if (ev.type !== '@xstate.snapshot') return;
    const snapshot = ev.snapshot as { machine?: { id?: string } };
    if (snapshot.machine?.id !== 'server') return;
    const name = (ev.actorRef as AnyActorRef).id;
    // A held server's new actor (first spawn, re-added, replaced) is held too; the event is queued, never nested.
    if (this.holds.has(name) && this.holds.get(name) !== ev.actorRef) this.tellHold(name, ev.actorRef as AnyActorRef);
    const state = stateNameOf(ev.snapshot as never);
    const ctx = (ev.snapshot as unknown as { context: { generation: number; attempt: number } }).context;
    // Every transition counts (SPEC §9), including the sub-states of `reconnecting`
    // and a new generation; a snapshot that only changed context otherwise does not.
    const path = statePath((ev.snapshot as unknown as { value: StateValue }).value);
    const key = `${path}#${ctx.generation}`;
    if (this.transitionKeys.get(name) === key) return;
    this.transitionKeys.set(name, key);
    const previous = this.stateCache.get(name);
    this.stateCache.set(name, state);
    this.auth.onState(name, state);
    if (state !== previous) this.logTransition(name, state, ctx.attempt, (ev.snapshot as unknown as { context: { lastError?: string } }).context.lastError);
    this.ws.emitter.emit('server-state', {
      name,
      state,
      previous,
      reason: reasonOf(ev.snapshot as never),
      generation: ctx.generation,
      path,
      attempt: ctx.attempt,
    });
    this.ws.clientUpdate();
  }

  /** The supervisor's line in the server's log: the new state, and the error that moved it there. */
  private logTransition(name: string, state: ServerStateName, attempt: number, lastError: string | undefined): void {
    const log = this.ws.serverLog;
    if (!log) return;
    const failing = state === 'failed' || state === 'reconnecting';
    // The process is gone in every other state: its unfinished last line comes before the reason.
    if (state !== 'connecting' && state !== 'connected') log.endStderr(name);
    const text = `${state}${state === 'connecting' && attempt > 1 ? ` (attempt ${attempt})` : ''}${failing && lastError ? `: ${lastError}` : ''}`;
    log.supervisor(name, text, state === 'failed' ? 'error' : failing ? 'warning' : 'info');
  }

  private tellHold(server: string, ref: AnyActorRef): void {
    this.holds.set(server, ref);
    if (ref.getSnapshot().status === 'active') ref.send({ type: 'HOLD' });
  }
}

/** `live.reconnecting.waiting` for `{ live: { reconnecting: 'waiting' } }`. */
function statePath(value: StateValue): string {
  if (typeof value === 'string') return value;
  const [key, inner] = Object.entries(value)[0] ?? ['', ''];
  return inner === undefined || inner === '' ? key : `${key}.${statePath(inner as StateValue)}`;
}

