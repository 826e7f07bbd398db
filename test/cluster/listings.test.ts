/**
 * docs/cluster.md, listing cache: Redis is the cache's second level, so a
 * replica that never started a server (its own, empty cache dir) lists the
 * server's tools from the listing another replica took, and starts it only
 * for a call.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/processes.js';
import { textOf } from '../gateway/support.js';
import { ClusterFixture } from './support.js';

describe('serve --cluster: listings in Redis', () => {
  const fx = new ClusterFixture();

  beforeAll(async () => {
    await fx.startRedis();
    fx.ws.writeUser({ s: fx.ws.server('1') });
  });

  afterAll(async () => {
    expect(await fx.stop()).toBe(0);
  });

  it('a lazy replica that never started a server lists its tools from the listing another replica took', async () => {
    const a = await fx.replica('a');
    const onA = await a.open('?servers=s');
    expect((await onA.client.listTools()).tools.map((t) => t.name)).toContain('mcp__s__echo');
    expect(fx.ws.serverPids()).toHaveLength(1);
    await waitFor(async () => /listing/.test(await fx.redis.command(['KEYS', `mcpr:{${fx.workspaceId}}:listing:*`])), 'the listing in Redis');

    const b = await fx.replica('b', ['--lazy']);
    const onB = await b.open('?servers=s');
    const listed = (await onB.client.listTools()).tools.map((t) => t.name);
    expect(listed).toEqual(expect.arrayContaining(['mcp__s__echo', 'mcp__s__add']));
    // Listed without a process of its own: still the one of replica A.
    expect(fx.ws.serverPids()).toHaveLength(1);
    // A call starts it on B.
    expect(textOf(await onB.client.callTool({ name: 'mcp__s__echo', arguments: { text: 'b' } }))).toBe('b');
    expect(fx.ws.serverPids()).toHaveLength(2);
  }, 180_000);
});
