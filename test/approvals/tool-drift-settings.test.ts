/**
 * docs/tool-definitions.md: `pinToolDefinitions` set in a settings file's
 * `mcp` section is the default of every server; a server's own value wins.
 * Two real stdio fixtures each add a tool after their tools were accepted.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { stdioFixtureConfig } from '../helpers/fixtures.js';
import { waitFor } from '../helpers/processes.js';
import { Harness, row, toolNames } from '../controller/support.js';

const h = new Harness();
afterAll(() => h.cleanup());

describe('pinToolDefinitions in a settings file', () => {
  it('holds back every server’s new tools, except a server that sets its own pinToolDefinitions: false', async () => {
    const ws = h.workspace();
    const file = ws.writeUserSettings({
      mcp: { pinToolDefinitions: true },
      mcpServers: {
        pinned: stdioFixtureConfig('list-changed-server'),
        // Another env: not the same program as `pinned`, so not one shared process.
        own: { ...stdioFixtureConfig('list-changed-server'), env: { FIXTURE_NAME: 'own' }, pinToolDefinitions: false },
      },
    });
    const c = h.controller(ws, { listingCache: false, sources: [{ scope: 'user', path: file }] });
    await c.start();
    await waitFor(() => row(c, 'pinned').status === 'connected' && row(c, 'own').status === 'connected', 'both servers to connect');

    await c.callTool('mcp__pinned__add_tool', { name: 'late' });
    await c.callTool('mcp__own__add_tool', { name: 'late' });
    await waitFor(() => toolNames(c).includes('mcp__own__late'), 'the unpinned server’s new tool to register');
    await waitFor(() => row(c, 'pinned').toolDrift?.added.includes('late') === true, 'the pinned server’s new tool to be recorded as drift');
    expect(row(c, 'pinned').toolDrift).toMatchObject({ added: ['late'], held: true });
    expect(toolNames(c)).not.toContain('mcp__pinned__late');
    expect(row(c, 'own').toolDrift).toMatchObject({ added: ['late'], held: false });
  });
});

describe('a pin the user set', () => {
  it('is not lifted by a checked-in project file: its own pinToolDefinitions: false and its mcp section are ignored for that', async () => {
    const ws = h.workspace();
    const user = ws.writeUserSettings({ mcp: { pinToolDefinitions: true } });
    const project = ws.writeMcpJson({
      proj: { ...stdioFixtureConfig('list-changed-server'), env: { FIXTURE_NAME: 'proj' }, pinToolDefinitions: false },
    });
    const c = h.controller(ws, {
      listingCache: false,
      sources: [
        { scope: 'user', path: user },
        { scope: 'project', path: project },
      ],
    });
    await c.start();
    await c.approve('proj');
    await waitFor(() => row(c, 'proj').status === 'connected', 'the approved project server to connect');

    await c.callTool('mcp__proj__add_tool', { name: 'late' });
    await waitFor(() => row(c, 'proj').toolDrift?.added.includes('late') === true, 'the new tool to be recorded as drift');
    expect(row(c, 'proj').toolDrift).toMatchObject({ added: ['late'], held: true });
    expect(toolNames(c)).not.toContain('mcp__proj__late');
  });
});
