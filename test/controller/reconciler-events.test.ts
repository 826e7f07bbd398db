/**
 * What the controller sends the reconciler (SPEC §4): the event that names
 * the change — APPROVAL for a decision, GATING for an `mcp.excluded` edit,
 * TRUST for the folder's trust, CONFIG for a server edit — never a CONFIG
 * for everything. `reconcilerEvents` is checked on its own, then through a
 * real controller, whose reconciler's received events are read with an
 * inspector on its actor system.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { AnyEventObject } from 'xstate';
import type { ReconcilerEvent } from '../../machines/reconciler.machine.js';
import type { GatingState } from '../../machines/types.js';
import type { McpController } from '../../src/controller/controller.js';
import { reconcilerEvents, type ReconcilerLevels } from '../../src/controller/desired.js';
import { desiredServer, stdioFixtureConfig } from '../helpers/fixtures.js';
import { Harness, row, waitState } from './support.js';

const h = new Harness();
afterAll(() => h.cleanup());

const LEVEL_EVENTS = new Set(['CONFIG', 'GATING', 'APPROVAL', 'TRUST']);

/** The CONFIG / GATING / APPROVAL / TRUST events `c`'s reconciler receives from now on. */
function received(c: McpController): AnyEventObject[] {
  const events: AnyEventObject[] = [];
  c.actor.system.inspect((ev) => {
    if (ev.type === '@xstate.event' && ev.actorRef === c.actor && LEVEL_EVENTS.has(ev.event.type)) events.push(ev.event);
  });
  return events;
}

/** Drain `events` and return their types. */
function take(events: AnyEventObject[]): string[] {
  return events.splice(0).map((e) => e.type);
}

describe('reconcilerEvents', () => {
  const user = desiredServer('u', stdioFixtureConfig('basic-server'), 'user');
  const proj = desiredServer('p', stdioFixtureConfig('basic-server'), 'project');
  const gating: GatingState = { excluded: [], trusted: true, approvals: {} };
  const base: ReconcilerLevels = { desired: { u: user, p: proj }, gating };
  const approved = { hash: proj.hash, decision: 'approved' as const };
  const next = (g: Partial<GatingState>, desired = base.desired): ReconcilerLevels => ({ desired, gating: { ...gating, ...g } });
  const types = (events: ReconcilerEvent[]) => events.map((e) => e.type);

  it('sends CONFIG first, then nothing while nothing changed (lists compared as sets)', () => {
    expect(reconcilerEvents(undefined, base)).toEqual([{ type: 'CONFIG', desired: base.desired, gating }]);
    expect(reconcilerEvents(base, next({}))).toEqual([]);
    const twice = next({ excluded: ['u', 'x'] });
    expect(reconcilerEvents(twice, next({ excluded: ['x', 'u', 'x'] }))).toEqual([]);
    // A listing-cache flag is no change for the machines.
    expect(reconcilerEvents(base, next({}, { u: { ...user, cached: true }, p: proj }))).toEqual([]);
  });

  it('names the one kind of change', () => {
    expect(reconcilerEvents(base, next({ excluded: ['u'] }))).toEqual([{ type: 'GATING', gating: next({ excluded: ['u'] }).gating }]);
    expect(types(reconcilerEvents(base, next({ allowed: [] })))).toEqual(['GATING']);
    expect(types(reconcilerEvents(next({ allowed: [] }), base))).toEqual(['GATING']);
    expect(reconcilerEvents(base, next({ trusted: false }))).toEqual([{ type: 'TRUST', trusted: false }]);
    expect(reconcilerEvents(base, next({ approvals: { p: approved } }))).toEqual([{ type: 'APPROVAL', name: 'p', decision: approved }]);
    // A decision that goes away is an APPROVAL without one; several decisions, one event each.
    expect(reconcilerEvents(next({ approvals: { p: approved } }), base)).toEqual([{ type: 'APPROVAL', name: 'p', decision: undefined }]);
    const both = next({ approvals: { p: approved, u: { hash: user.hash, decision: 'rejected' } } });
    expect(reconcilerEvents(base, both).map((e) => (e as { name?: string }).name)).toEqual(['p', 'u']);
  });

  it('sends GATING when several kinds of gating change at once, CONFIG when any server changed', () => {
    expect(types(reconcilerEvents(base, next({ trusted: false, approvals: { p: approved } })))).toEqual(['GATING']);
    expect(types(reconcilerEvents(base, next({ trusted: false, excluded: ['u'] })))).toEqual(['GATING']);
    const edited = desiredServer('u', stdioFixtureConfig('basic-server', { args: ['--edited'] }), 'user');
    expect(types(reconcilerEvents(base, next({ excluded: ['u'] }, { u: edited, p: proj })))).toEqual(['CONFIG']);
    expect(types(reconcilerEvents(base, next({}, { u: user })))).toEqual(['CONFIG']);
    // The same config moved to another scope is another entry (its gating differs).
    expect(types(reconcilerEvents(base, next({}, { u: { ...user, scope: 'cli' }, p: proj })))).toEqual(['CONFIG']);
    // startup is outside both hashes, and still a change for the machines.
    const lazy = desiredServer('u', { ...stdioFixtureConfig('basic-server'), startup: 'lazy' }, 'user');
    expect(lazy.hash).toBe(user.hash);
    expect(types(reconcilerEvents(base, next({}, { u: lazy, p: proj })))).toEqual(['CONFIG']);
  });
});

describe('a live controller sends the reconciler the event that names the change', () => {
  it('approval → APPROVAL, excluded edit → GATING, trust change → TRUST, server edit → CONFIG', async () => {
    const ws = h.workspace();
    let trusted = true;
    const user = stdioFixtureConfig('basic-server');
    ws.writeUserSettings({ mcpServers: { u: user } });
    ws.writeMcpJson({ p: stdioFixtureConfig('basic-server') });
    const c = h.controller(ws, { isTrustedFolder: () => trusted });
    const events = received(c);
    await c.start();
    expect(take(events)).toEqual(['CONFIG']);
    await waitState(c, 'u', 'connected');
    expect(row(c, 'p').state).toBe('pending_approval');

    // A reload that finds nothing new sends nothing.
    await c.reload();
    expect(take(events)).toEqual([]);

    await c.approve('p');
    expect(events).toEqual([{ type: 'APPROVAL', name: 'p', decision: { hash: expect.any(String), decision: 'approved' } }]);
    take(events);
    await waitState(c, 'p', 'connected');

    ws.writeUserSettings({ mcpServers: { u: user }, mcp: { excluded: ['u'] } });
    await c.reload();
    expect(take(events)).toEqual(['GATING']);
    await waitState(c, 'u', 'excluded');
    expect(row(c, 'p').state).toBe('connected');

    trusted = false;
    await c.reload();
    expect(events).toEqual([{ type: 'TRUST', trusted: false }]);
    take(events);
    await waitState(c, 'p', 'untrusted');

    ws.writeUserSettings({ mcpServers: { u: { ...user, args: [...(user.args ?? []), '--edited'] } }, mcp: { excluded: ['u'] } });
    await c.reload();
    expect(take(events)).toEqual(['CONFIG']);
    expect(row(c, 'u').state).toBe('excluded');
    expect(row(c, 'p').state).toBe('untrusted');
  });
});
