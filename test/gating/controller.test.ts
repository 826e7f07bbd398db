/**
 * Gating only narrows as trust drops, through a real controller with real
 * fixture servers and a real watcher (SPEC §2.3, docs/library.md): a checked-in
 * `.mcp.json` cannot un-exclude or re-allow a server the user gated, in a
 * trusted folder or not, at start and on hot reload; and `config` reports
 * the same verdicts.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { McpController } from '../../src/controller/controller.js';
import { runCliCaptured } from '../helpers/cli.js';
import { pidAlive } from '../helpers/processes.js';
import { basic, Harness, row, toolsOf, waitReconciled, waitState, type Workspace } from '../reload/support.js';

const h = new Harness();
afterAll(() => h.cleanup());

/** `name` is gated for `state`: no process, no tool. */
function expectGated(c: McpController, name: string, state: 'excluded' | 'not_allowed'): void {
  expect(row(c, name)).toMatchObject({ state });
  expect(row(c, name)?.pid).toBeUndefined();
  expect(toolsOf(c, name)).toEqual([]);
}

/** The `config --json` verdicts of this workspace. */
async function configVerdicts(ws: Workspace): Promise<Record<string, string>> {
  const env = { HOME: ws.root, XDG_CONFIG_HOME: ws.root, PATH: process.env.PATH };
  const r = await runCliCaptured(['config', '--json', '--cwd', ws.root, '--user-config', ws.userFile, '--approvals', ws.approvalsFile], env, ws.root);
  expect(r.code, r.stderr).toBe(0);
  const doc = JSON.parse(r.stdout) as { servers: Array<{ name: string; verdict: string }> };
  return Object.fromEntries(doc.servers.map((s) => [s.name, s.verdict]));
}

describe('a checked-in .mcp.json cannot loosen the user’s gate', () => {
  for (const trusted of [true, false]) {
    it(`\`mcp.excluded: []\` in .mcp.json does not un-exclude a user-excluded server (${trusted ? 'trusted' : 'untrusted'} folder), at start and on reload`, async () => {
      const ws = h.workspace();
      ws.user({ a: basic('1'), b: basic('2') }, { mcp: { excluded: ['a'] } });
      ws.write(ws.projectFile, { mcp: { excluded: [] } });
      const c = await h.start(ws, { isTrustedFolder: () => trusted });

      await waitState(c, 'b', 'connected');
      expectGated(c, 'a', 'excluded');
      expect(c.pids()).toHaveLength(1);

      // A reload that brings a project server along (so a reconcile is sure to run) changes nothing for `a`.
      const before = c.reconciles;
      ws.write(ws.projectFile, { mcp: { excluded: [], allowed: ['a', 'b', 'p'] }, mcpServers: { p: basic('3') } });
      await waitReconciled(c, before, 'the .mcp.json edit to be reconciled');
      await waitState(c, 'p', trusted ? 'pending_approval' : 'untrusted');
      expectGated(c, 'a', 'excluded');
      expect(row(c, 'b')?.state).toBe('connected');
      expect(c.pids().filter(pidAlive)).toHaveLength(1);

      // The `config` command reports the same verdicts as the controller (which trusts the folder).
      if (trusted) expect(await configVerdicts(ws)).toEqual({ a: 'excluded', b: 'admitted', p: 'pending_approval' });
    });
  }

  it('a trusted .mcp.json can narrow `allowed` but never re-allow what the user’s list left out', async () => {
    const ws = h.workspace();
    ws.user({ a: basic('1'), b: basic('2'), c: basic('3') }, { mcp: { allowed: ['b', 'c'] } });
    // Asks for `a` (the user did not allow it) and leaves out `c` (a narrowing, which counts).
    ws.write(ws.projectFile, { mcp: { allowed: ['a', 'b'] } });
    const c = await h.start(ws, { isTrustedFolder: () => true });

    await waitState(c, 'b', 'connected');
    expectGated(c, 'a', 'not_allowed');
    expectGated(c, 'c', 'not_allowed');
    expect(await configVerdicts(ws)).toEqual({ a: 'not_allowed', b: 'admitted', c: 'not_allowed' });
  });
});
