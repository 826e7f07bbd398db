/**
 * Status reads its facts from the machines (SPEC §4): removed names from the
 * reconciler's context, last errors from each server actor's context — also
 * the errors only the controller sees, which it reports to the actor.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { AnyActorRef } from 'xstate';
import type { McpController } from '../../src/controller/controller.js';
import { stdioFixtureConfig } from '../helpers/fixtures.js';
import { Harness, row, toolNames, waitState } from './support.js';

const h = new Harness();
afterAll(() => h.cleanup());

/** The `lastError` in the context of `name`'s server actor. */
function machineError(c: McpController, name: string): string | undefined {
  const ref = c.actor.getSnapshot().children[name] as AnyActorRef | undefined;
  return (ref?.getSnapshot().context as { lastError?: string } | undefined)?.lastError;
}

describe('removed servers', () => {
  it('come from the reconciler; after dispose status still lists only those removed from the config', async () => {
    const { c } = await h.running({ kept: { ...stdioFixtureConfig('basic-server'), disabled: true }, gone: { ...stdioFixtureConfig('basic-server'), disabled: true } });
    await c.removeRuntimeServer('gone');
    expect(c.actor.getSnapshot().context.removed).toEqual(['gone']);
    expect(c.status().map((r) => [r.name, r.state])).toEqual([
      ['gone', 'removed'],
      ['kept', 'disabled'],
    ]);

    await c.dispose();
    // Disposing ends the servers; it removes none from the config, and the reconciler says so.
    expect([...c.actor.getSnapshot().context.removed]).toEqual(['gone']);
    expect(c.status().map((r) => [r.name, r.state])).toEqual([['gone', 'removed']]);
    expect(c.unavailableReason('gone')).toBe('removed');
    expect(c.unavailableReason('kept')).toBeUndefined();
  });
});

describe('last errors', () => {
  it('a filter the registry refuses is reported to the server actor: it stays connected, its tools stay, status shows why', async () => {
    const ws = h.workspace();
    const c = h.controller(ws);
    const dup = stdioFixtureConfig('duplicate-tools-server');
    // Hiding the duplicate makes the listing acceptable.
    await c.addRuntimeServer('dup', { ...dup, excludeTools: ['echo'] });
    await c.start();
    const before = row(c, 'dup');
    expect(before).toMatchObject({ state: 'connected', lastError: undefined });
    expect(toolNames(c)).toEqual(['mcp__dup__ping']);

    // Lifting the filter lets the duplicate through: no reconnect, the previous tools stay.
    await c.addRuntimeServer('dup', dup);
    const after = row(c, 'dup');
    expect(after.lastError).toMatch(/"echo" more than once/);
    expect(machineError(c, 'dup')).toBe(after.lastError);
    expect(after).toMatchObject({ state: 'connected', generation: before.generation, pid: before.pid });
    expect(toolNames(c)).toEqual(['mcp__dup__ping']);
    expect(c.toolUnavailableMessage('mcp__dup__nope')).toMatch(/connected but does not provide mcp__dup__nope \(.*more than once/);
  });

  it('a failure reaches the machine with the event that moves it; a re-added server starts without one', async () => {
    const { c } = await h.running({ ghost: { command: 'mcp-reconciler-no-such-command-xyz' } });
    await waitState(c, 'ghost', 'failed');
    expect(machineError(c, 'ghost')).toMatch(/command not found/);
    expect(row(c, 'ghost').lastError).toBe(machineError(c, 'ghost'));

    await c.removeRuntimeServer('ghost');
    await c.addRuntimeServer('ghost', { ...stdioFixtureConfig('basic-server'), disabled: true });
    expect(machineError(c, 'ghost')).toBeUndefined();
    expect(row(c, 'ghost')).toMatchObject({ state: 'disabled', lastError: undefined });
  });
});
