/**
 * HOLD / RELEASE in the server machine, the part of the pool's reference
 * counts that is pure: replayed with `transition()` and synthetic done and
 * delayed events, so no process and no timer is involved.
 */
import { describe, expect, it } from 'vitest';
import { initialTransition, transition, type AnyEventObject, type SnapshotFrom } from 'xstate';
import { serverMachine, type ServerInput } from '../../machines/server.machine.js';
import { stateNameOf } from '../../machines/reason.js';
import type { DesiredServer, LifecyclePolicy } from '../../machines/types.js';
import { approving, entry, openGating } from '../machines/fixtures.js';

type Snap = SnapshotFrom<typeof serverMachine>;

const AFTER_IDLE = { type: 'xstate.after.idleDelay.server.live.connected.idle' };
const connected = (s: Snap) => ({ type: 'xstate.done.actor.connect', output: { generation: s.context.generation } });

function start(lifecycle: Partial<LifecyclePolicy>, e: DesiredServer = entry('s'), gating = openGating()): Snap {
  const input: ServerInput = { name: 's', entry: e, gating, lifecycle: { idleTimeoutMs: 200, ...lifecycle } };
  return initialTransition(serverMachine, input)[0];
}

/** Send events in order; a function event is built from the snapshot it is sent to. */
function run(s: Snap, ...events: Array<AnyEventObject | ((s: Snap) => AnyEventObject)>): Snap {
  for (const ev of events) s = transition(serverMachine, s, (typeof ev === 'function' ? ev(s) : ev) as never)[0];
  return s;
}

describe('server machine holds', () => {
  it('on demand, an admitted server nobody holds rests dormant; HOLD starts it, and once connected it stays without calls', () => {
    const s = start({ onDemand: true });
    expect(stateNameOf(s)).toBe('dormant');
    expect(s.children.connect).toBeUndefined();
    const held = run(s, { type: 'HOLD' });
    expect(stateNameOf(held)).toBe('connecting');
    expect(stateNameOf(run(held, connected))).toBe('connected');
  });

  it('a held server is never idle-stopped; after RELEASE its idle timeout stops it into dormant, and a new HOLD first keeps it', () => {
    const up = run(start({ onDemand: true }), { type: 'HOLD' }, connected);
    expect(stateNameOf(run(up, AFTER_IDLE))).toBe('connected');
    expect(stateNameOf(run(up, { type: 'RELEASE' }, AFTER_IDLE))).toBe('dormant');
    expect(stateNameOf(run(up, { type: 'RELEASE' }, { type: 'HOLD' }, AFTER_IDLE))).toBe('connected');
  });

  it("a held server still idles out on its own config's idleTimeoutMs (not the host default), and its next call wakes it", () => {
    const own = entry('s', { config: { command: 'node', args: ['s.js'], idleTimeoutMs: 60_000 } });
    const up = run(start({ onDemand: true }, own), { type: 'HOLD' }, connected);
    const stopped = run(up, AFTER_IDLE);
    expect(stateNameOf(stopped)).toBe('dormant');
    expect(stopped.context.held).toBe(true);
    expect(stateNameOf(run(stopped, { type: 'CALL_STARTED' }))).toBe('connecting');
  });

  it('released while it starts, it goes back to dormant once connected', () => {
    expect(stateNameOf(run(start({ onDemand: true }), { type: 'HOLD' }, { type: 'RELEASE' }, connected))).toBe('dormant');
  });

  it('HOLD passes no gate: a pending server stays pending, and starts once approved because it is held', () => {
    const gated = entry('s', { scope: 'project' });
    const pending = run(start({ onDemand: true }, gated), { type: 'HOLD' });
    expect(stateNameOf(pending)).toBe('pending_approval');
    expect(stateNameOf(run(pending, { type: 'UPDATE', entry: gated, gating: approving(gated) }))).toBe('connecting');
    // Not held: approval leaves it dormant.
    expect(stateNameOf(run(start({ onDemand: true }, gated), { type: 'UPDATE', entry: gated, gating: approving(gated) }))).toBe('dormant');
  });

  it('a lazy server with a cached listing stays dormant when held, until its first call', () => {
    const lazy = { ...entry('s', { config: { command: 'node', startup: 'lazy' } }), cached: true };
    const held = run(start({ onDemand: true }, lazy), { type: 'HOLD' });
    expect(stateNameOf(held)).toBe('dormant');
    expect(stateNameOf(run(held, { type: 'CALL_STARTED' }))).toBe('connecting');
  });

  it('without onDemand nothing changes: an eager server connects on admission', () => {
    expect(stateNameOf(start({}))).toBe('connecting');
  });
});
