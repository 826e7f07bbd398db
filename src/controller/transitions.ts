import type { Actor } from 'xstate';
import type { reconcilerMachine } from '../../machines/reconciler.machine.js';
import type { ServerActorRef, ServerTransition } from '../../machines/server.machine.js';
import type { AuthHooks } from './auth.js';
import type { ServerStateName } from './types.js';
import type { Workspace } from './workspace.js';

/**
 * Server state changes as the host hears of them (SPEC §9): each transition
 * a server actor emits becomes one `server-state` event, a supervisor line
 * in the server's log, a wake-up for OAuth, and a `client-update`. The
 * reconciler announces each actor it spawns before the actor starts, so the
 * first transition is heard too. It also keeps the host's holds: a held
 * server's new actor (first spawn, re-added, replaced) is told HOLD too.
 */
export class Transitions {
  private readonly stateCache = new Map<string, ServerStateName>();
  private readonly transitionKeys = new Map<string, string>();
  /** What a status row shows of each server's last transition (see {@link heard}). */
  private readonly rowKeys = new Map<string, string>();
  /** Servers a host holds; each new actor of one is told HOLD. */
  private readonly holds = new Set<string>();

  constructor(
    private readonly ws: Workspace,
    private readonly auth: AuthHooks,
  ) {}

  /** Listen to every server actor `reconciler` spawns from now on (call before starting it). */
  follow(reconciler: Actor<typeof reconcilerMachine>): void {
    reconciler.on('server-spawned', ({ name }) => {
      const ref = this.ws.server(name);
      if (ref) this.listen(name, ref);
    });
  }

  /** Hold `server` (see `McpController.hold`); idempotent. */
  hold(server: string): void {
    if (this.holds.has(server)) return;
    this.holds.add(server);
    const ref = this.ws.server(server);
    if (ref) tellHold(ref);
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

  /** A new actor for `name`, not started yet: its transitions from the first, and its hold. */
  private listen(name: string, ref: ServerActorRef): void {
    // A new actor's first transition always updates the rows (its config may differ from the last one's).
    this.rowKeys.delete(name);
    ref.on('transition', (t) => this.heard(name, t));
    // Queued behind the actor's first step, never nested in it.
    if (this.holds.has(name)) tellHold(ref);
  }

  private heard(name: string, t: ServerTransition): void {
    // Every transition counts (SPEC §9), including the sub-states of `reconnecting`
    // and a new generation; a state re-entered in the same generation does not.
    const key = `${t.path}#${t.generation}`;
    if (this.transitionKeys.get(name) === key) return;
    this.transitionKeys.set(name, key);
    const previous = this.stateCache.get(name);
    this.stateCache.set(name, t.state);
    this.auth.onState(name, t.state);
    if (t.state !== previous) this.logTransition(name, t.state, t.attempt, t.lastError);
    this.ws.emitter.emit('server-state', {
      name,
      state: t.state,
      previous,
      reason: t.reason,
      generation: t.generation,
      path: t.path,
      attempt: t.attempt,
    });
    // A status row shows the state, reason, generation, attempt and last error, not the leaf: a move that
    // changes none of them (`connected.idle` ⇄ `connected.busy`, at every tool call) leaves the rows as they were.
    const rowKey = `${t.state}\0${t.reason ?? ''}\0${t.generation}\0${t.attempt}\0${t.lastError ?? ''}`;
    if (this.rowKeys.get(name) === rowKey) return;
    this.rowKeys.set(name, rowKey);
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
}

function tellHold(ref: ServerActorRef): void {
  if (ref.getSnapshot().status === 'active') ref.send({ type: 'HOLD' });
}
