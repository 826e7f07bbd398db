/**
 * The pool tells its sessions about prompt changes from the coalesced
 * `client-update` (docs/client-update.md): a server's own prompt change (a
 * `prompts/list_changed` re-list) reaches the session once, in the one
 * `client-update` that names that server in `registryChanged`; a server whose
 * prompts vanish (removed from the config) is noticed too. Real fixture
 * processes; counted, never timed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMcpController, type McpController } from '../../src/controller/controller.js';
import type { McpControllerEvents } from '../../src/controller/types.js';
import { GatewayPool } from '../../src/gateway/pool.js';
import { fixturePath } from '../helpers/fixtures.js';
import { waitFor } from '../helpers/processes.js';
import { closeInProcessPool, MARKER, Workspace } from './support.js';

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('gateway pool: prompt changes from the coalesced client-update', () => {
  const ws = new Workspace();
  let controller: McpController;
  let pool: GatewayPool;
  const live = (): Record<string, unknown> => ({ command: process.execPath, args: [fixturePath('list-changed-server')], env: { [MARKER]: ws.mark } });
  const changes = { tools: 0, prompts: 0 };
  const updates: Array<McpControllerEvents['client-update']> = [];

  beforeAll(async () => {
    ws.writeUser({ p1: live(), p2: live(), a: ws.server() });
    controller = createMcpController({ cwd: ws.root, userConfigPath: ws.userConfig, approvals: ws.approvals, env: ws.env(), watch: false, listingCache: false, processStateFile: false, logDir: false });
    pool = new GatewayPool(controller);
    await pool.start();
    await waitFor(() => controller.status().every((r) => r.state === 'connected'), 'every server to connect', 60_000);
    pool.attach(undefined, 'test', { toolsChanged: () => changes.tools++, promptsChanged: () => changes.prompts++ });
    controller.on('client-update', (e) => updates.push(e));
    // The start's last update may still be pending: let it go out before anything is counted.
    await turn();
  });

  afterAll(async () => {
    await closeInProcessPool(pool, controller, ws.dir);
    expect(await ws.cleanup(), 'processes left behind').toBe(0);
  });

  it("a server's own new prompt reaches the session once, from the one client-update naming it", async () => {
    const before = changes.prompts;
    const from = updates.length;
    await controller.callTool('mcp__p1__add_prompt', { name: 'later' });
    await waitFor(() => changes.prompts > before, 'the session to hear of the new prompt', 60_000);
    expect(controller.prompts().map((p) => p.name)).toContain('mcp__p1__later');
    await turn();
    await turn();
    expect(changes.prompts).toBe(before + 1);
    // The registry's change and the re-list's own update land in one turn: one event (two on the old code).
    expect(updates.slice(from)).toHaveLength(1);
    expect(updates.slice(from).flatMap((u) => u.registryChanged)).toEqual(['p1']);
  });

  it('a server removed from the config: the session hears its prompts went', async () => {
    const before = changes.prompts;
    ws.writeUser({ p1: live(), a: ws.server() });
    await controller.reload();
    await waitFor(() => !controller.prompts().some((p) => p.server === 'p2'), "p2's prompts to go", 60_000);
    await waitFor(() => changes.prompts > before, 'the session to hear of it', 60_000);
    await turn();
    expect(changes.prompts).toBe(before + 1);
  });
});
