/**
 * The one pagination loop (src/connection/paginate.ts) against a real SDK
 * server over a linked in-memory transport: every page in order, for each
 * listing kind, and bounded when a server's cursors never end.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { Client, InMemoryTransport } from '@modelcontextprotocol/client';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { listAll, MAX_PAGES } from '../../src/connection/paginate.js';

const clients: Client[] = [];
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
});

/** A server answering every listing in pages of `size` out of `total`; `endless` keeps handing out new cursors. */
async function pagingClient(total: number, size: number, endless = false): Promise<{ client: Client; requests: () => number }> {
  const server = new Server({ name: 'pager', version: '1.0.0' }, { capabilities: { tools: {}, prompts: {}, resources: {} } });
  let requests = 0;
  const page = (cursor: string | undefined) => {
    requests++;
    const start = cursor ? Number(cursor) : 0;
    const items = Array.from({ length: Math.max(0, Math.min(size, total - start)) }, (_, i) => start + i);
    const next = endless || start + size < total ? String(start + size) : undefined;
    return { items, ...(next ? { nextCursor: next } : {}) };
  };
  server.setRequestHandler(ListToolsRequestSchema, (r) => {
    const { items, nextCursor } = page(r.params?.cursor);
    return { tools: items.map((i) => ({ name: `t${i}`, inputSchema: { type: 'object' as const } })), nextCursor };
  });
  server.setRequestHandler(ListPromptsRequestSchema, (r) => {
    const { items, nextCursor } = page(r.params?.cursor);
    return { prompts: items.map((i) => ({ name: `p${i}` })), nextCursor };
  });
  server.setRequestHandler(ListResourcesRequestSchema, (r) => {
    const { items, nextCursor } = page(r.params?.cursor);
    return { resources: items.map((i) => ({ uri: `x://r/${i}`, name: `r${i}` })), nextCursor };
  });
  server.setRequestHandler(ListResourceTemplatesRequestSchema, (r) => {
    const { items, nextCursor } = page(r.params?.cursor);
    return { resourceTemplates: items.map((i) => ({ uriTemplate: `x://t${i}/{id}`, name: `t${i}` })), nextCursor };
  });
  const [a, b] = InMemoryTransport.createLinkedPair();
  await server.connect(b);
  const client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(a);
  clients.push(client);
  return { client, requests: () => requests };
}

describe('listAll', () => {
  it('follows nextCursor through every page of each listing kind', async () => {
    const { client } = await pagingClient(5, 2);
    const options = { timeout: 10_000 };
    expect((await listAll(client, 'tools', options)).map((t) => (t as { name: string }).name)).toEqual(['t0', 't1', 't2', 't3', 't4']);
    expect((await listAll(client, 'prompts', options)).map((p) => p.name)).toEqual(['p0', 'p1', 'p2', 'p3', 'p4']);
    expect((await listAll(client, 'resources', options)).map((r) => r.uri)).toEqual(['x://r/0', 'x://r/1', 'x://r/2', 'x://r/3', 'x://r/4']);
    expect((await listAll(client, 'resourceTemplates', options)).map((t) => t.uriTemplate)).toHaveLength(5);
  });

  it('stops after MAX_PAGES pages of a server whose cursors never end', async () => {
    const { client, requests } = await pagingClient(0, 1, true);
    expect(await listAll(client, 'resources', { timeout: 10_000 })).toEqual([]);
    expect(requests()).toBe(MAX_PAGES);
  });
});
