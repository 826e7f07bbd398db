/**
 * The controller against published MCP servers nobody here wrote, started the
 * way a user's config starts them.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ProcessTracker } from '../../src/connection/processes.js';
import { modulePath } from '../helpers/fixtures.js';
import { pidAlive, waitFor } from '../helpers/processes.js';
import { firstText, Harness, rejection, row, toolNames, waitNewGeneration, watchReconnects } from './support.js';
import { freePort } from '../helpers/ports.js';

const h = new Harness();
/** For the HTTP server-everything the test itself runs, as a user would. */
const serverTracker = new ProcessTracker({ graceMs: 1_000 });
const everything = modulePath('@modelcontextprotocol/server-everything/dist/index.js');
const memory = modulePath('@modelcontextprotocol/server-memory/dist/index.js');
const filesystem = modulePath('@modelcontextprotocol/server-filesystem/dist/index.js');

// Observe (never alter) the session ids the controller's HTTP client sends, so
// a test can end a session behind its back the way an eviction would.
const realFetch = globalThis.fetch;
const sessionIds = new Map<string, string>();
globalThis.fetch = ((input: string | URL | Request, init?: RequestInit) => {
  const sid = new Headers(init?.headers).get('mcp-session-id');
  if (sid) sessionIds.set(String(input instanceof Request ? input.url : input), sid);
  return realFetch(input, init);
}) as typeof fetch;

afterAll(async () => {
  globalThis.fetch = realFetch;
  const serverPids = serverTracker.history();
  await h.cleanup();
  await serverTracker.killAll();
  await waitFor(() => serverPids.every((p) => !pidAlive(p)), 'the HTTP server to exit', 5_000).catch(() => {});
  expect(serverPids.filter(pidAlive)).toEqual([]);
});


describe('@modelcontextprotocol/server-everything over stdio', () => {
  it('registers its tools, skips the taskSupport: required one, validates a real outputSchema tool', async () => {
    const { c } = await h.running({ everything: { command: process.execPath, args: [everything, 'stdio'] } });
    expect(row(c, 'everything').state).toBe('connected');
    const names = toolNames(c);
    expect(names.length).toBeGreaterThan(5);
    expect(names.every((n) => n.startsWith('mcp__everything__'))).toBe(true);
    expect(names).toEqual(expect.arrayContaining(['mcp__everything__echo', 'mcp__everything__get-structured-content', 'mcp__everything__get-sum']));
    expect(c.prompts().length).toBeGreaterThan(0);
    expect(c.prompts().every((p) => p.name.startsWith('mcp__everything__'))).toBe(true);

    // Registered after initialize and announced with tools/list_changed: still reported.
    expect(names).not.toContain('mcp__everything__simulate-research-query');
    expect(row(c, 'everything').skippedTools).toContainEqual({
      rawName: 'simulate-research-query',
      reason: expect.stringContaining("taskSupport is 'required'"),
    });

    expect(firstText(await c.callTool('mcp__everything__echo', { message: 'hello everything' }))).toContain('hello everything');
    const structured = c.tools().find((t) => t.name === 'mcp__everything__get-structured-content')!;
    expect(structured.outputSchema).toBeDefined();
    const weather = await c.callTool('mcp__everything__get-structured-content', { location: 'Chicago' });
    expect(weather.isError).toBeFalsy();
    expect(weather.structuredContent).toMatchObject({ temperature: 36, humidity: 82 });
  });
});

describe('@modelcontextprotocol/server-everything over streamable HTTP', () => {
  it('connects, calls, and treats an unknown session (HTTP 400) as a lost session: new generation, retry succeeds', async () => {
    const port = await freePort();
    const child = serverTracker.spawn(process.execPath, [everything, 'streamableHttp'], { env: { ...process.env, PORT: String(port) } });
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdout?.resume();
    await waitFor(() => stderr.includes('listening on port'), 'server-everything to listen');
    const url = `http://127.0.0.1:${port}/mcp`;

    const { c } = await h.running({ 'everything-http': { type: 'http', url } });
    const before = row(c, 'everything-http');
    expect(before.state).toBe('connected');
    expect(before.skippedTools.map((s) => s.rawName)).toContain('simulate-research-query');
    expect(toolNames(c)).toContain('mcp__everything-http__echo');
    expect(firstText(await c.callTool('mcp__everything-http__echo', { message: 'via http' }))).toContain('via http');
    const toolsBefore = toolNames(c);
    const { removed, reconnectErrors } = watchReconnects(c, 'everything-http');

    // End the session behind the client's back; server-everything then answers its id with 400.
    const sid = sessionIds.get(url);
    expect(sid).toBeTypeOf('string');
    const deleted = await realFetch(url, { method: 'DELETE', headers: { 'mcp-session-id': sid! } });
    expect(deleted.ok).toBe(true);

    const lost = await rejection(c.callTool('mcp__everything-http__echo', { message: 'lost?' }));
    expect(lost.code).toBe('tool_unavailable');
    expect(lost.message).toMatch(/lost its connection \(session .* is gone: HTTP 400/);
    await waitNewGeneration(c, 'everything-http', before.generation);
    expect(reconnectErrors).toEqual([expect.stringMatching(/HTTP 400/)]);
    expect(firstText(await c.callTool('mcp__everything-http__echo', { message: 'retried' }))).toContain('retried');
    expect(sessionIds.get(url)).not.toBe(sid);
    expect(toolNames(c)).toEqual(toolsBefore);
    expect(removed).toEqual([]);
  });
});

describe('@modelcontextprotocol/server-memory', () => {
  it('registers its tools and keeps what it is told', async () => {
    const ws = h.workspace();
    const c = h.controller(ws);
    await c.addRuntimeServer('memory', { command: process.execPath, args: [memory], env: { MEMORY_FILE_PATH: join(ws.root, 'memory.jsonl') } });
    await c.start();
    expect(toolNames(c)).toEqual(expect.arrayContaining(['mcp__memory__create_entities', 'mcp__memory__read_graph']));
    expect(toolNames(c).every((n) => n.startsWith('mcp__memory__'))).toBe(true);
    const created = await c.callTool('mcp__memory__create_entities', {
      entities: [{ name: 'reconciler', entityType: 'project', observations: ['keeps servers in shape'] }],
    });
    expect(created.isError).toBeFalsy();
    const graph = await c.callTool('mcp__memory__read_graph', {});
    expect(graph.isError).toBeFalsy();
    expect(graph.structuredContent).toMatchObject({ entities: [{ name: 'reconciler', entityType: 'project' }], relations: [] });
  });
});

describe('@modelcontextprotocol/server-filesystem', () => {
  it('registers tools that all declare an outputSchema, and their results validate', async () => {
    const ws = h.workspace();
    writeFileSync(join(ws.root, 'hello.txt'), 'hello from the workspace');
    const c = h.controller(ws);
    await c.addRuntimeServer('fs', { command: process.execPath, args: [filesystem, ws.root] });
    await c.start();
    const tools = c.tools();
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['mcp__fs__read_text_file', 'mcp__fs__list_directory']));
    expect(tools.every((t) => t.outputSchema !== undefined)).toBe(true);
    const read = await c.callTool('mcp__fs__read_text_file', { path: join(ws.root, 'hello.txt') });
    expect(read.isError).toBeFalsy();
    expect(read.structuredContent).toEqual({ content: 'hello from the workspace' });
    const listing = await c.callTool('mcp__fs__list_directory', { path: ws.root });
    expect(listing.isError).toBeFalsy();
    expect(firstText(listing)).toContain('hello.txt');
  });
});
