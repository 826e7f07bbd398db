/**
 * `why` on a tool the tool budget keeps from the model (toolExposure): the
 * answer says it is registered but left out of the list, and how the model
 * still reaches it. A real stdio fixture server provides the tools.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { modulePath, stdioFixtureConfig } from '../helpers/fixtures.js';
import { Harness } from '../controller/support.js';

const h = new Harness();
afterAll(() => h.cleanup());

describe('why on a tool hidden by a budget', () => {
  it('says the budget leaves it out, and nothing of the kind without a budget', async () => {
    const ws = h.workspace();
    const c = h.controller(ws, { listingCache: false, toolExposure: { mode: 'auto', maxTools: 3, maxToolTokens: 1, pinnedTools: ['mcp__live__add_tool'] } });
    await c.addRuntimeServer('live', stdioFixtureConfig('list-changed-server'));
    await c.start();
    expect(c.exposedTools().tools.map((t) => t.name)).toEqual([]);
    expect(c.toolUnavailableMessage('mcp__live__describe_tool')).toMatch(/tool budget .* leaves it out.*search_tools/);
    // Without a budget the same tool is simply available.
    const all = h.controller(h.workspace(), { listingCache: false });
    await all.addRuntimeServer('live', stdioFixtureConfig('list-changed-server'));
    await all.start();
    expect(all.toolUnavailableMessage('mcp__live__describe_tool')).toMatch(/is available/);
    expect(all.toolUnavailableMessage('mcp__live__describe_tool')).not.toMatch(/budget/);
  });
});

describe('pinnedTools in a server entry', () => {
  it('are listed first by a budget that cannot list everything', async () => {
    const ws = h.workspace();
    const files = { command: process.execPath, args: [modulePath('@modelcontextprotocol/server-filesystem/dist/index.js'), ws.root] };
    // Three slots: the search pair and one more.
    const c = h.controller(ws, { listingCache: false, toolExposure: { mode: 'auto', maxTools: 3 } });
    await c.addRuntimeServer('files', { ...files, pinnedTools: ['move_file'] });
    await c.start();
    expect(c.tools().length).toBeGreaterThan(3);
    expect(c.exposedTools().tools.map((t) => t.name)).toEqual(['mcp__files__move_file']);
  });
});

describe('pinnedTools in a settings file', () => {
  it('pin the raw names of every server without its own list', async () => {
    const ws = h.workspace();
    const files = { command: process.execPath, args: [modulePath('@modelcontextprotocol/server-filesystem/dist/index.js'), ws.root] };
    const file = ws.writeUserSettings({ mcp: { pinnedTools: ['move_file'] }, mcpServers: { files } });
    const c = h.controller(ws, { listingCache: false, sources: [{ scope: 'user', path: file }], toolExposure: { mode: 'auto', maxTools: 3 } });
    await c.start();
    expect(c.tools().length).toBeGreaterThan(3);
    expect(c.exposedTools().tools.map((t) => t.name)).toEqual(['mcp__files__move_file']);
  });
});
