/**
 * What a session keeps across a daemon loss, with real processes (the built
 * bin, fixture servers, SDK clients through `serve --stdio --shared`):
 * its resource subscriptions are made again on the fresh daemon and the
 * client is told to read again; an elicitation the dead daemon asked for is
 * cancelled at the client, whose late answer reaches nobody, and the next
 * elicitation is answered by the client's next answer (docs/daemon.md, "Faults").
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  ElicitRequestSchema,
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
  type ElicitResult,
} from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { fixturePath } from '../helpers/fixtures.js';
import { pidAlive, waitFor } from '../helpers/processes.js';
import { cliMain, MARKER, textOf } from '../gateway/support.js';
import { daemonWorkspace, type DaemonWorkspace } from './support.js';

interface Session {
  client: Client;
  stderr: () => string;
  updated: string[];
  resourceListChanges: () => number;
  toolChanges: () => number;
}

async function connect(ws: DaemonWorkspace, client: Client): Promise<Session> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [cliMain, 'serve', '--stdio', '--shared', ...ws.args()],
    env: ws.env() as Record<string, string>,
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const updated: string[] = [];
  let resources = 0;
  let tools = 0;
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updated.push(n.params.uri));
  client.setNotificationHandler(ResourceListChangedNotificationSchema, () => void resources++);
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => void tools++);
  await client.connect(transport);
  return { client, stderr: () => stderr, updated, resourceListChanges: () => resources, toolChanges: () => tools };
}

/** A tool call's text once it stops failing (the new daemon's servers are still starting right after a reattach). */
async function textWhenUp(s: Session, name: string, args: Record<string, unknown>, want: (text: string) => boolean, what: string): Promise<string> {
  let text = '';
  await waitFor(
    async () => {
      const result = await s.client.callTool({ name, arguments: args }).catch((err: unknown) => ({ content: [{ type: 'text', text: String(err) }] }));
      text = textOf(result);
      return want(text);
    },
    `${what} (last: ${text})`,
    60_000,
    250,
  );
  return text;
}

async function killDaemon(ws: DaemonWorkspace): Promise<number> {
  const pid = (await ws.status())!.pid;
  process.kill(pid, 'SIGKILL');
  await waitFor(() => !pidAlive(pid), 'the daemon to die');
  return pid;
}

describe('resource subscriptions across a daemon loss', () => {
  let session: Session | undefined;
  const ws = daemonWorkspace(() => session?.client.close().catch(() => undefined));

  it('are made again on the fresh daemon, and the client is told to list and read again', async () => {
    ws.writeUser({ r: { command: process.execPath, args: [fixturePath('resource-server')], env: { INSTANCE: 'r1', [MARKER]: ws.mark } } });
    session = await connect(ws, new Client({ name: 'subscriber', version: '1.0.0' }));
    const s = session;
    const uri = 'note://static/hello';
    expect((await s.client.listResources()).resources.map((r) => r.uri)).toContain(uri);
    await s.client.subscribeResource({ uri });
    // A subscription refused by the daemon is not made again.
    await expect(s.client.subscribeResource({ uri: 'note://nowhere/at-all' })).rejects.toThrow();
    expect(textOf(await s.client.callTool({ name: 'mcp__r__subscribed', arguments: {} }))).toBe(JSON.stringify([uri]));
    const before = { resources: s.resourceListChanges(), tools: s.toolChanges(), updated: s.updated.length };

    const dead = await killDaemon(ws);
    await waitFor(() => s.toolChanges() > before.tools && s.resourceListChanges() > before.resources, 'tools/ and resources/list_changed after the reattach', 60_000);
    await waitFor(() => s.updated.slice(before.updated).includes(uri), 'resources/updated for the subscribed URI, to read it again', 60_000);
    expect(s.updated.slice(before.updated)).not.toContain('note://nowhere/at-all');

    // The new daemon's server process holds the subscription, and its updates reach the client.
    expect((await ws.status())!.pid).not.toBe(dead);
    await textWhenUp(s, 'mcp__r__subscribed', {}, (t) => t === JSON.stringify([uri]), 'the new server process to hold the subscription');
    const seen = s.updated.length;
    expect(textOf(await s.client.callTool({ name: 'mcp__r__touch', arguments: { uri } }))).toBe(`updated: ${uri}`);
    await waitFor(() => s.updated.slice(seen).includes(uri), 'the update from the new server');
    expect(s.stderr()).toMatch(/subscribed again to 1 resource/);

    // Unsubscribed before the next loss: not made again.
    await s.client.unsubscribeResource({ uri });
    await killDaemon(ws);
    await waitFor(() => /reattached to the daemon[^\n]*\n[\s\S]*reattached to the daemon/.test(s.stderr()), 'the second reattach', 60_000);
    await textWhenUp(s, 'mcp__r__subscribed', {}, (t) => t === '[]', 'the third server process, with no subscription');
  }, 300_000);
});

describe('an elicitation in flight when the daemon dies', () => {
  let session: Session | undefined;
  const ws = daemonWorkspace(() => session?.client.close().catch(() => undefined));

  it('is cancelled at the client; its late answer reaches nobody; the next elicitation gets the next answer', async () => {
    ws.writeUser({ e: { command: process.execPath, args: [fixturePath('elicit-server')], env: { [MARKER]: ws.mark } } });
    const client = new Client({ name: 'asked', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
    const asked: { signal: AbortSignal; answer: (r: ElicitResult) => void }[] = [];
    client.setRequestHandler(ElicitRequestSchema, (_request, extra) => new Promise<ElicitResult>((answer) => asked.push({ signal: extra.signal, answer })));
    session = await connect(ws, client);
    const s = session;
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('mcp__e__book');

    const first = client.callTool({ name: 'mcp__e__book', arguments: {} }, undefined, { timeout: 180_000 });
    await waitFor(() => asked.length === 1, 'the first elicitation to reach the client', 60_000);
    const tools = s.toolChanges();
    // Handled before the kill: the call may fail while killDaemon still waits for the daemon to go.
    const firstFails = expect(first).rejects.toThrow(/daemon \(pid \d+\) ended while this tools\/call request was in flight.*send it again/s);
    await killDaemon(ws);
    await firstFails;
    await waitFor(() => asked[0]!.signal.aborted, 'the dead daemon’s elicitation to be cancelled at the client', 60_000);

    await waitFor(() => s.toolChanges() > tools, 'tools/list_changed after the reattach', 60_000);
    const second = client.callTool({ name: 'mcp__e__book', arguments: {} }, undefined, { timeout: 180_000 });
    await waitFor(() => asked.length === 2, 'the second elicitation to reach the client', 60_000);
    // The first elicitation's answer, late: it must not become the second one's.
    asked[0]!.answer({ action: 'decline' });
    asked[1]!.answer({ action: 'accept', content: { date: '2026-12-24' } });
    const answer = JSON.parse(textOf(await second)) as { action: string; content?: { date?: string } };
    expect(answer).toMatchObject({ action: 'accept', content: { date: '2026-12-24' } });
  }, 300_000);
});
