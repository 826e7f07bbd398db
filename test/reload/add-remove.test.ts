/**
 * `add` / `remove` reach a running controller through its ordinary hot
 * reload: an added server starts (a project-scope one waits for approval),
 * a removed one stops.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { addServer, removeServer } from '../../src/config/edit.js';
import { fixturePath } from '../helpers/fixtures.js';
import { pidAlive, waitFor } from '../helpers/processes.js';
import { collect, Harness, row, SLOW, toolsOf, waitState } from './support.js';

const h = new Harness();
afterAll(() => h.cleanup());

describe('add / remove while a controller runs', () => {
  it('a local add connects, a project add waits for approval, a remove stops the server', async () => {
    const ws = h.workspace('mcpr-add-');
    // HOME is the workspace (support.ts), so ~/.claude.json is <root>/.claude.json.
    const c = await h.start(ws, { preset: 'claude-code', userConfigPath: undefined });
    const where = { preset: 'claude-code', cwd: ws.root, home: ws.root, env: { HOME: ws.root } };
    const prompts = collect(c, 'pending-approval');

    const added = await addServer({ ...where, name: 'added', server: { command: process.execPath, args: [fixturePath('basic-server')] } });
    expect(added.scope).toBe('local');
    const up = await waitState(c, 'added', 'connected');
    expect(up.scope).toBe('local');
    expect(toolsOf(c, 'added').length).toBeGreaterThan(0);

    await addServer({ ...where, scope: 'project', name: 'proj', server: { command: process.execPath, args: [fixturePath('basic-server')] } });
    await waitFor(() => prompts.some((e) => e.servers.includes('proj')), 'a pending-approval naming proj', SLOW);
    expect(row(c, 'proj')).toMatchObject({ state: 'pending_approval', pid: undefined });

    await removeServer({ ...where, name: 'added' });
    await waitFor(() => c.unavailableReason('added') === 'removed', 'added to be removed', SLOW);
    await waitFor(() => !pidAlive(up.pid!), "added's process to exit", SLOW);
    expect(toolsOf(c, 'added')).toEqual([]);
  });
});
