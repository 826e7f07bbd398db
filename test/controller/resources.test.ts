/**
 * Resources through the controller (SPEC §13), with real servers: listed
 * and read (templates too), re-listed on list_changed, owned by one server
 * when two list a URI, never listed for a server pending approval (reading
 * one says why), and subscriptions that survive a reconnect.
 */
import { join } from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { ErrorCode, ListResourcesRequestSchema, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it } from 'vitest';
import type { ResourceChange } from '../../src/controller/types.js';
import { modulePath, stdioFixtureConfig } from '../helpers/fixtures.js';
import { waitFor } from '../helpers/processes.js';
import { firstText, Harness, rejection, row, toolNames, waitState } from './support.js';
import { resourceText } from '../connection/resource-support.js';

const h = new Harness();
afterAll(() => h.cleanup());


describe('controller resources', () => {
  it('lists resources and templates of a connected server and reads both', async () => {
    const { c } = await h.running({ notes: stdioFixtureConfig('resource-server', { env: { INSTANCE: 'N' } }) });
    expect(c.resources()).toEqual([
      { uri: 'note://static/hello', name: 'hello', description: 'A static note.', mimeType: 'text/plain', server: 'notes', generation: 1 },
    ]);
    expect(c.resourceTemplates().map((t) => [t.uriTemplate, t.server])).toEqual([['note://notes/{id}', 'notes']]);
    expect(c.status().find((r) => r.name === 'notes')).toMatchObject({ resources: ['note://static/hello'], resourceTemplates: ['note://notes/{id}'], cached: false });
    expect(resourceText(await c.readResource('note://static/hello'))).toBe('hello from N');
    expect(resourceText(await c.readResource('note://notes/3'))).toBe('note 3 from N');
    const unknown = await rejection(c.readResource('other://nothing'));
    expect(unknown.code).toBe('unknown_tool');
    expect(unknown.message).toMatch(/Resource other:\/\/nothing is not provided by any available MCP server/);
  });

  it('re-lists on resources/list_changed and tells resources-changed', async () => {
    const ws = h.workspace();
    const c = h.controller(ws);
    const changes: ResourceChange[] = [];
    c.on('resources-changed', (e) => changes.push(e));
    await c.addRuntimeServer('growing', stdioFixtureConfig('resource-server'));
    await c.start();
    expect(changes.map((e) => e.added)).toEqual([['note://static/hello']]);
    await c.callTool('mcp__growing__add_resource', { name: 'fresh' });
    await waitFor(() => c.resources().some((r) => r.uri === 'note://dynamic/fresh'), 'the new resource to be listed');
    expect(changes.at(-1)).toMatchObject({ server: 'growing', added: ['note://dynamic/fresh'], removed: [], updated: [] });
    expect(resourceText(await c.readResource('note://dynamic/fresh'))).toBe('dynamic fresh');
  });

  it('gives a URI two servers list to the first in code-point order, reports the conflict, and lets a narrower view read the other', async () => {
    const ws = h.workspace();
    const warnings: string[] = [];
    const c = h.controller(ws, { logger: { warn: (m: string) => warnings.push(m) } });
    await c.addRuntimeServer('b', stdioFixtureConfig('resource-server', { env: { INSTANCE: 'B', SHARED: '1' } }));
    await c.addRuntimeServer('a', stdioFixtureConfig('resource-server', { env: { INSTANCE: 'A', SHARED: '1' } }));
    const conflicts: ResourceChange['conflicts'][] = [];
    c.on('resources-changed', (e) => conflicts.push(e.conflicts));
    await c.start();
    expect(c.resources().map((r) => [r.uri, r.server])).toEqual([
      ['note://static/hello', 'a'],
      ['note://shared/readme', 'a'],
    ]);
    expect(resourceText(await c.readResource('note://shared/readme'))).toBe('readme from A');
    expect(resourceText(await c.readResource('note://shared/readme', { servers: ['b'] }))).toBe('readme from B');
    expect(c.resources(['b']).map((r) => r.server)).toEqual(['b', 'b']);
    expect(conflicts.at(-1)).toContainEqual({ uri: 'note://shared/readme', owner: 'a', servers: ['a', 'b'] });
    expect(warnings.some((w) => /resource conflict: .*note:\/\/shared\/readme; reads go to "a"/.test(w))).toBe(true);
  });

  it('never lists a resource of a server pending approval, and reading it gives the reason and the fix', async () => {
    const ws = h.workspace();
    const cacheDir = join(ws.home, 'listing-cache');
    ws.writeMcpJson({ notes: stdioFixtureConfig('resource-server') });
    // One session approved it, so its listing is cached; the approval was not kept.
    const first = h.controller(ws, { listingCache: cacheDir });
    await first.start();
    await first.approve('notes', { persist: false });
    await waitState(first, 'notes', 'connected');
    expect(first.resources().map((r) => r.uri)).toEqual(['note://static/hello']);
    await first.dispose();

    const c = h.controller(ws, { listingCache: cacheDir });
    await c.start();
    expect(row(c, 'notes').state).toBe('pending_approval');
    expect(c.resources()).toEqual([]);
    expect(c.resourceTemplates()).toEqual([]);
    const err = await rejection(c.readResource('note://static/hello'));
    expect(err.code).toBe('tool_unavailable');
    expect(err.message).toMatch(/Resource note:\/\/static\/hello is unavailable: MCP server "notes" is waiting for your approval\. To fix: approve it with `mcp-reconciler approve notes`/);
    expect((await rejection(c.subscribeResource('note://notes/1', () => {}))).code).toBe('tool_unavailable');
    expect(c.pids()).toEqual([]);

    // Without a cached listing nothing says whose URI it is: every unavailable server is named with its reason.
    const cold = h.controller(ws, { listingCache: false });
    await cold.start();
    const unknown = await rejection(cold.readResource('note://static/hello'));
    expect(unknown.code).toBe('unknown_tool');
    expect(unknown.message).toMatch(/not available and may provide it: "notes" is waiting for your approval \(to fix: approve it with `mcp-reconciler approve notes`/);
  });

  it('keeps a subscription through a reconnect: the new process is subscribed again and its updates arrive', async () => {
    const { c } = await h.running({ notes: stdioFixtureConfig('resource-server') });
    const updates: string[] = [];
    const unsubscribe = await c.subscribeResource('note://static/hello', (u) => updates.push(`${u.server} ${u.uri}`));
    await c.callTool('mcp__notes__touch', { uri: 'note://static/hello' });
    await waitFor(() => updates.length === 1, 'the first update');

    const before = row(c, 'notes');
    process.kill(before.pid!, 'SIGKILL');
    await waitFor(() => row(c, 'notes').state === 'connected' && row(c, 'notes').generation > before.generation, 'a new generation to connect');
    h.record(c);
    const subscribedNow = async (): Promise<string[]> => JSON.parse(firstText(await c.callTool('mcp__notes__subscribed', {})));
    let now: string[] = [];
    await waitFor(async () => (now = await subscribedNow()).length > 0, 'the new process to be subscribed');
    expect(now).toEqual(['note://static/hello']);
    await c.callTool('mcp__notes__touch', { uri: 'note://static/hello' });
    await waitFor(() => updates.length === 2, 'the update from the new process');
    expect(updates).toEqual(['notes note://static/hello', 'notes note://static/hello']);

    await unsubscribe();
    expect(await subscribedNow()).toEqual([]);
    await unsubscribe(); // idempotent
  });

  it('refuses a subscription the server does not offer', async () => {
    const ws = h.workspace();
    const plain = new McpServer({ name: 'plain', version: '1.0.0' });
    plain.registerResource('doc', 'doc://one', {}, (uri) => ({ contents: [{ uri: uri.href, text: 'one' }] }));
    const c = h.controller(ws, { sdkServers: { plain } });
    await c.start();
    expect(resourceText(await c.readResource('doc://one'))).toBe('one');
    const err = await rejection(c.subscribeResource('doc://one', () => {}));
    expect(err.code).toBe('tool_unavailable');
    expect(err.message).toMatch(/does not offer subscriptions/);
  });

  it('connects a server whose resource listing fails with its tools and no resources, saying why', async () => {
    const ws = h.workspace();
    const broken = new Server({ name: 'broken-resources', version: '1.0.0' }, { capabilities: { tools: {}, resources: {} } });
    broken.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [{ name: 'ping', inputSchema: { type: 'object' as const } }] }));
    broken.setRequestHandler(ListResourcesRequestSchema, () => {
      throw new McpError(ErrorCode.InternalError, 'resource index unavailable');
    });
    const warnings: string[] = [];
    const c = h.controller(ws, { sdkServers: { broken }, logger: { warn: (m: string) => warnings.push(m) } });
    await c.start();
    expect(row(c, 'broken').state).toBe('connected');
    expect(toolNames(c)).toEqual(['mcp__broken__ping']);
    expect(c.resources()).toEqual([]);
    expect(row(c, 'broken').lastError).toMatch(/resources\/list failed: .*resource index unavailable/);
    expect(warnings.some((w) => w.includes('its resources are not registered'))).toBe(true);
  });

  it('reads and subscribes to server-everything’s resources', async () => {
    const { c } = await h.running({ everything: { command: process.execPath, args: [modulePath('@modelcontextprotocol/server-everything/dist/index.js'), 'stdio'] } });
    const resource = c.resources()[0];
    expect(resource?.server).toBe('everything');
    const read = await c.readResource(resource!.uri);
    expect(read.contents[0]?.uri).toBe(resource!.uri);
    const updates: string[] = [];
    const unsubscribe = await c.subscribeResource(resource!.uri, (u) => updates.push(u.uri));
    // The tool starts its simulated updates with one at once.
    await c.callTool('mcp__everything__toggle-subscriber-updates', {});
    await waitFor(() => updates.includes(resource!.uri), 'an update from server-everything');
    await c.callTool('mcp__everything__toggle-subscriber-updates', {});
    await unsubscribe();
  });
});
