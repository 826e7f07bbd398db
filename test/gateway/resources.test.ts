/**
 * Resources through the gateway (SPEC §13), in-process: SDK clients on
 * session servers of one pool, over real fixture servers. Sessions list,
 * read and subscribe within their scope, hear list_changed for their
 * servers and resources/updated for what they subscribed to, and a closed
 * session's subscriptions end.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ResourceListChangedNotificationSchema, ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryApprovalStore } from '../../src/approvals/store.js';
import { createMcpController, type McpController } from '../../src/controller/controller.js';
import { GatewayPool } from '../../src/gateway/pool.js';
import { stdioFixtureConfig } from '../helpers/fixtures.js';
import { pidAlive, waitFor } from '../helpers/processes.js';
import { inProcessClient } from './support.js';
import { resourceText } from '../connection/resource-support.js';


/** MCP's "Resource not found". */
const RESOURCE_NOT_FOUND = -32002;

describe('gateway resources (in-process sessions)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mcpr-gateway-resources-'));
  let controller: McpController;
  let pool: GatewayPool;
  const pids = new Set<number>();

  /** The URIs server `name`'s current process holds subscriptions for. */
  const subscribedOn = async (name: string): Promise<string[]> => {
    const result = await controller.callTool(`mcp__${name}__subscribed`, {});
    return JSON.parse((result.content as Array<{ text: string }>)[0]!.text);
  };

  beforeAll(async () => {
    controller = createMcpController({ cwd: dir, sources: [], approvals: new MemoryApprovalStore(), watch: false, listingCache: false });
    controller.on('server-state', () => controller.pids().forEach((p) => pids.add(p)));
    await controller.addRuntimeServer('a', stdioFixtureConfig('resource-server', { env: { INSTANCE: 'A', SHARED: '1' } }));
    await controller.addRuntimeServer('b', stdioFixtureConfig('resource-server', { env: { INSTANCE: 'B', SHARED: '1' } }));
    pool = new GatewayPool(controller);
    await pool.start();
  });

  afterAll(async () => {
    pool?.close();
    await controller?.dispose();
    expect([...pids].filter(pidAlive)).toEqual([]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('declares resources with subscribe and listChanged; lists, reads, and answers an unknown URI with resource-not-found', async () => {
    const s = await inProcessClient(pool);
    try {
      expect(s.client.getServerCapabilities()?.resources).toEqual({ subscribe: true, listChanged: true });
      const { resources } = await s.client.listResources();
      // A URI both servers list appears once: "a" owns it (code-point order).
      expect(resources).toEqual([
        { uri: 'note://static/hello', name: 'hello', description: 'A static note.', mimeType: 'text/plain' },
        { uri: 'note://shared/readme', name: 'readme', description: 'A note every SHARED instance lists.' },
      ]);
      expect((await s.client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate)).toEqual(['note://notes/{id}']);
      expect(resourceText(await s.client.readResource({ uri: 'note://shared/readme' }))).toBe('readme from A');
      expect(resourceText(await s.client.readResource({ uri: 'note://notes/9' }))).toBe('note 9 from A');
      await expect(s.client.readResource({ uri: 'other://none' })).rejects.toMatchObject({
        code: RESOURCE_NOT_FOUND,
        message: expect.stringMatching(/not provided by any available MCP server/),
      });
    } finally {
      await s.close();
    }
  });

  it('a scoped session sees and reads only its servers’ resources, and hears list_changed only for them', async () => {
    const onlyA = await inProcessClient(pool, new Set(['a']));
    const onlyB = await inProcessClient(pool, new Set(['b']));
    try {
      const heard = { a: 0, b: 0 };
      onlyA.client.setNotificationHandler(ResourceListChangedNotificationSchema, () => void heard.a++);
      onlyB.client.setNotificationHandler(ResourceListChangedNotificationSchema, () => void heard.b++);
      expect(resourceText(await onlyB.client.readResource({ uri: 'note://shared/readme' }))).toBe('readme from B');
      await controller.callTool('mcp__a__add_resource', { name: 'mine' });
      await waitFor(() => heard.a > 0, 'list_changed in the session scoped to "a"');
      expect((await onlyA.client.listResources()).resources.map((r) => r.uri)).toContain('note://dynamic/mine');
      expect((await onlyB.client.listResources()).resources.map((r) => r.uri)).not.toContain('note://dynamic/mine');
      await expect(onlyB.client.readResource({ uri: 'note://dynamic/mine' })).rejects.toMatchObject({ code: RESOURCE_NOT_FOUND });
      expect(heard.b).toBe(0);
    } finally {
      await onlyA.close();
      await onlyB.close();
    }
  });

  it('forwards resources/updated to the subscribed session, and unsubscribe and session close end the subscription', async () => {
    const s = await inProcessClient(pool, new Set(['b']));
    const other = await inProcessClient(pool);
    const updates: string[] = [];
    const elsewhere: string[] = [];
    s.client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updates.push(n.params.uri));
    other.client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void elsewhere.push(n.params.uri));
    try {
      await s.client.subscribeResource({ uri: 'note://shared/readme' });
      expect(await subscribedOn('b')).toEqual(['note://shared/readme']);
      expect(await subscribedOn('a')).toEqual([]);
      await controller.callTool('mcp__b__touch', { uri: 'note://shared/readme' });
      await waitFor(() => updates.length === 1, 'the update in the subscribed session');
      expect(updates).toEqual(['note://shared/readme']);
      await s.client.unsubscribeResource({ uri: 'note://shared/readme' });
      expect(await subscribedOn('b')).toEqual([]);

      await other.client.subscribeResource({ uri: 'note://notes/1' });
      expect(await subscribedOn('a')).toEqual(['note://notes/1']);
    } finally {
      await s.close();
      await other.close();
    }
    await waitFor(async () => (await subscribedOn('a')).length === 0, 'the closed session’s subscription to end');
    expect(elsewhere).toEqual([]);
  });
});
