/**
 * Resources on one connection (SPEC §13): listed at connect (all pages, with
 * templates) when the server declares the capability, re-listed on
 * `resources/list_changed`, read, subscribed and unsubscribed, and
 * `resources/updated` surfaced as an event. Real servers: the resource
 * fixture and the published server-everything.
 */
import { describe, expect, it } from 'vitest';
import { desiredServer, modulePath, stdioFixture } from '../helpers/fixtures.js';
import { waitFor } from '../helpers/processes.js';
import { connectionsInTempDir, eventLog, firstText } from './support.js';
import { resourceText } from './resource-support.js';

const { connect, options } = connectionsInTempDir('mcp-resources-', 500);

describe('resources on a connection', () => {
  it('lists resources and templates at connect, reads both, and says it can subscribe', async () => {
    const conn = await connect(stdioFixture('resource-server', { name: 'notes', env: { INSTANCE: 'A' } }), options());
    expect(conn.resources.map((r) => r.uri)).toEqual(['note://static/hello']);
    expect(conn.resources[0]).toMatchObject({ name: 'hello', description: 'A static note.', mimeType: 'text/plain' });
    expect(conn.resourceTemplates.map((t) => t.uriTemplate)).toEqual(['note://notes/{id}']);
    expect(conn.canSubscribe).toBe(true);
    expect(resourceText(await conn.readResource('note://static/hello'))).toBe('hello from A');
    expect(resourceText(await conn.readResource('note://notes/42'))).toBe('note 42 from A');
  });

  it('turns resources/list_changed into an event and re-lists', async () => {
    const log = eventLog();
    const conn = await connect(stdioFixture('resource-server', { name: 'growing' }), options({ onEvent: log.onEvent }));
    await conn.callTool('add_resource', { name: 'later' });
    await waitFor(() => log.events.some((e) => e.type === 'resources_changed'), 'resources_changed');
    const listing = await conn.listResources();
    expect(listing.resources.map((r) => r.uri).sort()).toEqual(['note://dynamic/later', 'note://static/hello']);
    expect(conn.resources).toEqual(listing.resources);
    expect(listing.resourceTemplates.map((t) => t.uriTemplate)).toEqual(['note://notes/{id}']);
  });

  it('subscribes and unsubscribes; an update of a subscribed resource is an event', async () => {
    const log = eventLog();
    const conn = await connect(stdioFixture('resource-server', { name: 'watched' }), options({ onEvent: log.onEvent }));
    await conn.subscribeResource('note://static/hello');
    expect(JSON.parse(firstText(await conn.callTool('subscribed', {})))).toEqual(['note://static/hello']);
    expect(firstText(await conn.callTool('touch', { uri: 'note://static/hello' }))).toBe('updated: note://static/hello');
    await waitFor(() => log.events.some((e) => e.type === 'resource_updated'), 'resource_updated');
    expect(log.events.filter((e) => e.type === 'resource_updated')).toEqual([{ type: 'resource_updated', uri: 'note://static/hello' }]);
    await conn.unsubscribeResource('note://static/hello');
    expect(JSON.parse(firstText(await conn.callTool('subscribed', {})))).toEqual([]);
  });

  it('a server without the resources capability lists none and is not asked', async () => {
    const conn = await connect(stdioFixture('basic-server', { name: 'plain' }), options());
    expect(conn.resources).toEqual([]);
    expect(conn.resourceTemplates).toEqual([]);
    expect(conn.canSubscribe).toBe(false);
    expect(await conn.listResources()).toEqual({ resources: [], resourceTemplates: [] });
  });

  it('lists server-everything’s resources and templates, and reads one', async () => {
    const everything = modulePath('@modelcontextprotocol/server-everything/dist/index.js');
    const conn = await connect(desiredServer('everything', { command: process.execPath, args: [everything, 'stdio'] }), options());
    expect(conn.resources.length).toBeGreaterThan(0);
    expect(new Set(conn.resources.map((r) => r.uri)).size).toBe(conn.resources.length);
    expect(conn.resourceTemplates.length).toBeGreaterThan(0);
    expect(conn.canSubscribe).toBe(true);
    const first = conn.resources[0]!;
    const read = await conn.readResource(first.uri);
    expect(read.contents[0]?.uri).toBe(first.uri);
  });
});
