/**
 * `client-update` is coalesced to one event per turn of the event loop
 * (docs/client-update.md): a start of N servers, each making several
 * changes a status row shows (connecting, connected, its tools registered),
 * sends far fewer events than changes, and the last one carries the rows as
 * `status()` shows them. Nothing is sent after `dispose()`. Counted, never
 * timed; real light fixture servers.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { McpControllerEvents } from '../../src/controller/types.js';
import { stdioFixtureConfig } from '../helpers/fixtures.js';
import { waitFor } from '../helpers/processes.js';
import { Harness } from './support.js';

const SERVERS = 20;
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('controller: client-update', () => {
  const h = new Harness();
  afterAll(() => h.cleanup());

  it('sends far fewer events than a start of 20 servers makes changes, the last with the final rows, and none after dispose()', async () => {
    const ws = h.workspace();
    const names = Array.from({ length: SERVERS }, (_, i) => `s${String(i + 1).padStart(2, '0')}`);
    ws.writeUserSettings({ mcpServers: Object.fromEntries(names.map((n) => [n, stdioFixtureConfig('light-server')])) });
    const c = h.controller(ws, { listingCache: false, logDir: false, readyTimeoutMs: 120_000, connectTimeoutMs: 120_000 });
    const updates: Array<McpControllerEvents['client-update']> = [];
    // The changes: each state a server enters and each change of its tools (the old code sent a client-update for about each).
    let changes = 0;
    c.on('client-update', (e) => updates.push(e));
    c.on('server-state', () => changes++);
    c.on('tools-changed', () => changes++);
    await c.start();
    await waitFor(() => c.tools().length === SERVERS * 5, `the ${SERVERS} servers' tools (${c.tools().length} now)`, 120_000);
    await turn();

    // At least connecting, connected and the tools per server: on the old code one event each.
    expect(changes).toBeGreaterThanOrEqual(3 * SERVERS);
    // Changes that land in one turn share an event: at worst about one per server (each one's connect
    // landing in a turn of its own) plus the start's first; at most half the changes (the old code: one each).
    expect(updates.length).toBeGreaterThan(0);
    expect(updates.length).toBeLessThanOrEqual(changes / 2);
    expect(updates.at(-1)!.status).toEqual(c.status());
    expect(c.status().every((r) => r.state === 'connected')).toBe(true);
    // Every server's registered tools were named by some event.
    expect(new Set(updates.flatMap((u) => u.registryChanged))).toEqual(new Set(names));

    // One edit-free turn sends nothing.
    const before = updates.length;
    await turn();
    expect(updates.length).toBe(before);

    // dispose() sends the final rows (nothing registered, nothing running) last, and nothing comes after it.
    await c.dispose();
    const atDispose = updates.length;
    expect(atDispose).toBeGreaterThan(before);
    expect(updates.at(-1)!.status.every((r) => r.pid === undefined && r.tools.length === 0)).toBe(true);
    await turn();
    await turn();
    expect(updates.length).toBe(atDispose);
  });
});
