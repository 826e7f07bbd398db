/**
 * `searchTools`: tasks in an agent's words find the published servers'
 * tools, the index follows the registry (a server added, removed, relisted),
 * dormant servers are found through the listing cache, and the gate holds:
 * a tool of a pending, rejected, excluded, disabled or out-of-scope server is
 * never returned, even when its listing is cached.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { McpController } from '../../src/controller/controller.js';
import type { ServerConfig } from '../../machines/types.js';
import { modulePath, stdioFixtureConfig } from '../helpers/fixtures.js';
import { Harness, row, type Workspace } from '../controller/support.js';

const h = new Harness();
afterAll(() => h.cleanup());

const memory = modulePath('@modelcontextprotocol/server-memory/dist/index.js');
const filesystem = modulePath('@modelcontextprotocol/server-filesystem/dist/index.js');
const everything = modulePath('@modelcontextprotocol/server-everything/dist/index.js');

function servers(ws: Workspace): Record<string, ServerConfig> {
  return {
    files: { command: process.execPath, args: [filesystem, ws.root] },
    memory: { command: process.execPath, args: [memory], env: { MEMORY_FILE_PATH: join(ws.root, 'memory.jsonl') } },
  };
}

async function top(c: McpController, query: string, n = 3, servers?: string[]): Promise<string[]> {
  return (await c.searchTools(query, { limit: n, ...(servers ? { servers } : {}) })).map((m) => m.tool.name);
}

describe('searchTools', () => {
  it('finds tools from tasks phrased in other words, best first, as tools() lists them', async () => {
    const ws = h.workspace();
    ws.writeUserSettings({ mcpServers: servers(ws) });
    const c = h.controller(ws, { listingCache: false });
    await c.start();
    const matches = await c.searchTools('show what is inside a folder', { limit: 5 });
    expect(matches.map((m) => m.tool.name)).toContain('mcp__files__list_directory');
    // Scores descend, entries are the registry's own.
    for (let i = 1; i < matches.length; i++) expect(matches[i]!.score).toBeLessThanOrEqual(matches[i - 1]!.score);
    expect(matches[0]!.tool).toBe(c.tools().find((t) => t.name === matches[0]!.tool.name));

    expect((await top(c, 'remember that the user prefers tabs over spaces', 5)).some((n) => n.startsWith('mcp__memory__'))).toBe(true);
    expect(await top(c, 'rename a file')).toContain('mcp__files__move_file');
    // A typo and a stem still find it.
    expect((await top(c, 'serch files', 3))[0]).toBe('mcp__files__search_files');
    // `servers` narrows; `limit` caps.
    const onlyMemory = await c.searchTools('read', { servers: ['memory'], limit: 20 });
    expect(onlyMemory.length).toBeGreaterThan(0);
    expect(onlyMemory.every((m) => m.tool.server === 'memory')).toBe(true);
    expect(await c.searchTools('file', { limit: 2 })).toHaveLength(2);
    expect(await c.searchTools('the of and')).toEqual([]);
  });

  it('follows the registry: an added server is found, a removed one is gone, without a rebuild', async () => {
    const ws = h.workspace();
    const c = h.controller(ws, { listingCache: false });
    await c.addRuntimeServer('memory', servers(ws).memory!);
    await c.start();
    expect(await top(c, 'list directory contents', 20)).not.toContain('mcp__files__list_directory');
    await c.addRuntimeServer('files', servers(ws).files!);
    await waitConnected(c, 'files');
    expect(await top(c, 'list directory contents', 3)).toContain('mcp__files__list_directory');
    await c.removeRuntimeServer('files');
    const after = await c.searchTools('list directory contents', { limit: 20 });
    expect(after.every((m) => m.tool.server !== 'files')).toBe(true);
    expect(c.tools().some((t) => t.server === 'files')).toBe(false);
  });

  it('finds a dormant server’s tools through the listing cache, without starting it', async () => {
    const ws = h.workspace();
    const cache = join(ws.home, 'listing-cache');
    const config = servers(ws).memory!;
    const warm = h.controller(ws, { listingCache: cache });
    await warm.addRuntimeServer('memory', config);
    await warm.start();
    await warm.dispose();

    const c = h.controller(ws, { listingCache: cache, startup: 'lazy' });
    await c.addRuntimeServer('memory', config);
    await c.start();
    expect(row(c, 'memory').state).toBe('dormant');
    expect(await top(c, 'connect two entities with a relation')).toContain('mcp__memory__create_relations');
    expect(c.pids()).toEqual([]);
  });

  it('never returns a tool of a pending, rejected, excluded or disabled server, even with its listing cached', async () => {
    const ws = h.workspace();
    const cache = join(ws.home, 'listing-cache');
    const every: ServerConfig = { command: process.execPath, args: [everything, 'stdio'] };
    const basic = stdioFixtureConfig('basic-server');
    // Fill the cache for every config first, so nothing but the gate keeps their tools out.
    const warm = h.controller(ws, { listingCache: cache });
    await warm.addRuntimeServer('pending', every);
    await warm.addRuntimeServer('rejected', basic);
    await warm.addRuntimeServer('excluded', { ...basic, args: [...basic.args!, '--x'] });
    await warm.start();
    await warm.dispose();

    ws.writeUserSettings({
      mcpServers: { memory: servers(ws).memory, excluded: { ...basic, args: [...basic.args!, '--x'] }, disabled: { ...basic, disabled: true } },
      mcp: { excluded: ['excluded'] },
    });
    ws.writeMcpJson({ pending: every, rejected: basic });
    const c = h.controller(ws, { listingCache: cache });
    await c.reject('rejected');
    await c.start();
    expect(row(c, 'pending').reason).toBe('pending_approval');
    expect(row(c, 'memory').state).toBe('connected');

    const gated = new Set(['pending', 'rejected', 'excluded', 'disabled']);
    for (const query of ['echo', 'echoes its text argument', 'add two numbers', 'sum', 'environment variables', 'print the process id', 'long running operation']) {
      const found = await c.searchTools(query, { limit: 50 });
      expect(found.filter((m) => gated.has(m.tool.server)), query).toEqual([]);
    }
    // A scope that names only gated servers finds nothing.
    expect(await c.searchTools('echo', { servers: ['pending', 'rejected'] })).toEqual([]);

    // Control: once approved, the same query finds the server's tools.
    await c.approve('pending');
    await waitConnected(c, 'pending');
    expect(await top(c, 'echo back a message', 3)).toContain('mcp__pending__echo');
  });
});

async function waitConnected(c: McpController, server: string): Promise<void> {
  const { waitState } = await import('../controller/support.js');
  await waitState(c, server, 'connected');
}
