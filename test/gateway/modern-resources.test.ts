/**
 * Per-URI resource updates on the gateway's 2026-07-28 lane (SPEC §13,
 * §15): a client names the URIs in its `subscriptions/listen` filter; the
 * gateway subscribes at the managed server while that stream is open, the
 * client hears `notifications/resources/updated` when one changes (as a 2025
 * client does after `resources/subscribe`), and closing the stream ends the
 * managed server's subscription. A real SDK v2 client pinned to 2026-07-28
 * against `serve --http` and `serve --stdio` (the built binary).
 */
import { writeFileSync } from 'node:fs';
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2, type Transport as TransportV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixturePath } from '../helpers/fixtures.js';
import { waitFor } from '../helpers/processes.js';
import { cliMain, MARKER, startServeHttp, textOf, Workspace, type ServeProcess } from './support.js';

const URI = 'note://static/hello';

for (const kind of ['http', 'stdio'] as const) {
  describe(`serve --${kind}: a 2026-07-28 client's listened resources`, () => {
    const ws = new Workspace();
    const open: Array<() => Promise<unknown>> = [];
    let serve: ServeProcess | undefined;
    let url = '';
    let token = '';

    beforeAll(async () => {
      writeFileSync(ws.userConfig, JSON.stringify({ mcpServers: { res: { command: process.execPath, args: [fixturePath('resource-server')], env: { [MARKER]: ws.mark } } } }));
      if (kind === 'http') ({ serve, url, token } = await startServeHttp(ws));
    });
    afterAll(async () => {
      for (const close of open) await close();
      await serve?.stop();
      expect(await ws.cleanup()).toBe(0);
    });

    it('hears resources/updated for a URI its listen stream names; closing the stream ends the subscription', async () => {
      const transport: TransportV2 =
        kind === 'http'
          ? new HttpV2(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } })
          : new StdioV2({ command: process.execPath, args: [cliMain, 'serve', '--stdio', ...ws.args()], env: ws.env() as Record<string, string>, stderr: 'pipe' });
      const client = new ClientV2({ name: 'listen-test', version: '1.0.0' }, { capabilities: {}, versionNegotiation: { mode: { pin: '2026-07-28' } } });
      await client.connect(transport, { timeout: 30_000 });
      open.push(() => client.close().catch(() => undefined));
      expect(client.getServerCapabilities()?.resources?.subscribe).toBe(true);
      const updates: string[] = [];
      client.setNotificationHandler('notifications/resources/updated', (n) => void updates.push(n.params.uri));
      const subscribedAtServer = async (): Promise<string[]> => JSON.parse(textOf(await client.callTool({ name: 'mcp__res__subscribed', arguments: {} }, { timeout: 60_000 }))) as string[];

      const sub = await client.listen({ resourceSubscriptions: [URI] }, { timeout: 30_000 });
      expect(sub.honoredFilter.resourceSubscriptions).toEqual([URI]);
      let held: string[] = [];
      await waitFor(async () => (held = await subscribedAtServer()).includes(URI), `the managed server to hold a subscription to ${URI} `, 60_000, 250);

      expect(textOf(await client.callTool({ name: 'mcp__res__touch', arguments: { uri: URI } }, { timeout: 60_000 }))).toBe(`updated: ${URI}`);
      await waitFor(() => updates.includes(URI), 'the 2026-07-28 client to hear resources/updated', 30_000);

      await sub.close();
      await waitFor(async () => !(held = await subscribedAtServer()).includes(URI), `the managed server's subscription to end `, 60_000, 250);
    }, 240_000);
  });
}
