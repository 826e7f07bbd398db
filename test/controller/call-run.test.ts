/**
 * A run of tool calls on a connected server (SPEC §12): the server's machine
 * counts the run, not each call — it moves `connected.idle` → `busy` once and
 * back once, after the last call ends — and status readers (`client-update`)
 * hear nothing from the calls themselves (a status row does not show
 * idle/busy). Events are counted, never timed.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { stdioFixtureConfig } from '../helpers/fixtures.js';
import { waitFor } from '../helpers/processes.js';
import { firstText, Harness, waitState } from './support.js';

describe('controller: a run of tool calls', () => {
  const h = new Harness();
  afterAll(() => h.cleanup());

  it('moves the server busy once and idle once, and sends no client-update per call', async () => {
    const { c } = await h.running({ s: stdioFixtureConfig('basic-server') }, { listingCache: false });
    await waitState(c, 's', 'connected');
    const paths: string[] = [];
    let updates = 0;
    c.on('server-state', (e) => {
      if (e.name === 's') paths.push(e.path);
    });
    c.on('client-update', () => updates++);
    for (let i = 0; i < 5; i++) expect(firstText(await c.callTool('mcp__s__echo', { text: `n${i}` }))).toContain(`n${i}`);
    await waitFor(() => paths.at(-1) === 'live.connected.idle', 'the server to go idle after the run');
    expect(paths).toEqual(['live.connected.busy', 'live.connected.idle']);
    expect(updates).toBe(0);
  });
});
