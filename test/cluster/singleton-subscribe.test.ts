/**
 * docs/cluster-gaps.md: a singleton's `resources/subscribe` and
 * `resources/unsubscribe` on a replica that does not hold its lease go to
 * the holder on the caller's forwarding session, and the holder's
 * `notifications/resources/updated` reach the subscribing client. Nothing
 * starts on the non-holder. Real redis-server, real gateway processes, the
 * resource fixture (it says which URIs its one process holds subscriptions
 * for, and sends `updated` on request).
 */
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixturePath } from '../helpers/fixtures.js';
import { waitFor } from '../helpers/processes.js';
import { MARKER, textOf, type HttpConnected } from '../gateway/support.js';
import { ClusterFixture } from './support.js';

const env = { MCP_RECONCILER_CLUSTER_SECRET: 'd'.repeat(64) };
const URI = 'note://static/hello';

describe('serve --cluster: a singleton resource subscribed on a non-holder', () => {
  const fx = new ClusterFixture();

  beforeAll(async () => {
    await fx.startRedis();
    fx.ws.writeUser({ r: { command: process.execPath, args: [fixturePath('resource-server')], env: { [MARKER]: fx.ws.mark }, singleton: true } });
  });

  afterAll(async () => {
    expect(await fx.stop()).toBe(0);
  });

  it('subscribe on B is held by A\'s process, A\'s updates reach B\'s client, unsubscribe on B ends it there', async () => {
    const a = await fx.replica('a', [], env);
    const b = await fx.replica('b', [], env);
    const onA: HttpConnected = await a.open('?servers=r');
    const subscribedOnA = async (): Promise<string[]> => JSON.parse(textOf(await onA.client.callTool({ name: 'mcp__r__subscribed', arguments: {} }))) as string[];
    expect(await subscribedOnA()).toEqual([]);
    await a.serve.fromStderr(/(singleton "r": this replica holds the lease \(token \d+\))/, "A's lease of r", 60_000);
    await waitFor(async () => /listing/.test(await fx.redis.command(['KEYS', `mcpr:{${fx.workspaceId}}:listing:*`])), 'the listing in Redis', 60_000);

    const onB = await b.open('?servers=r');
    const updates: string[] = [];
    onB.client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updates.push(n.params.uri));
    await waitFor(async () => (await onB.client.listResources()).resources.some((x) => x.uri === URI), `B to list ${URI}`, 60_000);

    await onB.client.subscribeResource({ uri: URI });
    // Held by the one process of r, on A: the subscription went there.
    expect(await subscribedOnA()).toEqual([URI]);
    expect(textOf(await onA.client.callTool({ name: 'mcp__r__touch', arguments: { uri: URI } }))).toBe(`updated: ${URI}`);
    await waitFor(() => updates.includes(URI), "A's resources/updated at B's client", 60_000);
    expect(b.serve.stderr).not.toMatch(/singleton "r": this replica holds the lease/);

    await onB.client.unsubscribeResource({ uri: URI });
    await waitFor(async () => (await subscribedOnA()).length === 0, "the subscription to end in A's process", 60_000);
  }, 240_000);
});
