/**
 * Both protocol eras on one gateway (SPEC §15): `serve --http` and
 * `serve --stdio` (the built binary) answer the SDK v2 client pinned to
 * 2026-07-28, the v2 client in `auto` mode (which finds the new revision
 * through `server/discover`), and the SDK v1 client (`initialize`, the 2025
 * lane), each listing and calling tools, hearing list_changed after a config
 * edit (on `subscriptions/listen` for the new revision), within its scope.
 */
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2, type Transport as TransportV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixturePath } from '../helpers/fixtures.js';
import { waitFor } from '../helpers/processes.js';
import { cliMain, connectHttp, connectStdio, MARKER, startServeHttp, textOf, Workspace, type ServeProcess } from './support.js';

type Mode = 'auto' | { pin: string };
const MODERN = '2026-07-28';

interface V2Connected {
  client: ClientV2;
  /** Every tool list the client was handed after a list_changed, newest last. */
  changes: string[][];
  close(): Promise<void>;
}

async function connectV2(transport: TransportV2, mode: Mode): Promise<V2Connected> {
  const changes: string[][] = [];
  const client = new ClientV2(
    { name: 'eras-test', version: '1.0.0' },
    {
      capabilities: {},
      versionNegotiation: { mode },
      listChanged: { tools: { onChanged: (err, tools) => void (err ? undefined : changes.push((tools ?? []).map((t) => t.name))) } },
    },
  );
  await client.connect(transport, { timeout: 30_000 });
  return { client, changes, close: () => client.close().catch(() => undefined) };
}

const toolNames = async (client: { listTools(): Promise<{ tools: { name: string }[] }> }): Promise<string[]> => (await client.listTools()).tools.map((t) => t.name);

/** `serve --http` over a workspace of `servers`, started before and stopped after the enclosing describe; `open` is closed first. */
function httpGateway(servers: (ws: Workspace) => Record<string, unknown>, extra: string[] = []) {
  const g = { ws: new Workspace(), serve: undefined as ServeProcess | undefined, url: '', token: '', open: [] as Array<() => Promise<unknown>> };
  beforeAll(async () => {
    g.ws.writeUser(servers(g.ws));
    const started = await startServeHttp(g.ws, extra);
    Object.assign(g, started);
  });
  afterAll(async () => {
    for (const close of g.open) await close();
    await g.serve?.stop();
    expect(await g.ws.cleanup()).toBe(0);
  });
  return g;
}

describe('serve --http: 2026-07-28 and 2025 clients on one endpoint', () => {
  const g = httpGateway((ws) => ({ a: ws.server('1'), b: ws.server('1') }));
  const { ws, open } = g;

  const v2 = async (mode: Mode, query = ''): Promise<V2Connected> => {
    const c = await connectV2(new HttpV2(new URL(`${g.url}${query}`), { requestInit: { headers: { authorization: `Bearer ${g.token}` } } }), mode);
    open.push(c.close);
    return c;
  };

  it('a v2 client pinned to 2026-07-28, one in auto mode and a v1 client each list, call and hear list_changed', async () => {
    const pinned = await v2({ pin: MODERN });
    const auto = await v2('auto');
    const old = await connectHttp(g.url, g.token);
    open.push(() => old.client.close());
    expect(pinned.client.getNegotiatedProtocolVersion()).toBe(MODERN);
    expect(auto.client.getNegotiatedProtocolVersion()).toBe(MODERN);
    expect(auto.client.getServerVersion()?.name).toBe('mcp-reconciler');

    for (const c of [pinned.client, auto.client, old.client]) {
      const names = await toolNames(c);
      for (const t of ['mcp__a__echo', 'mcp__b__add', 'mcp__a__v1_tool']) expect(names).toContain(t);
      const echo = await c.callTool({ name: 'mcp__a__echo', arguments: { text: 'both eras' } });
      expect(textOf(echo)).toBe('both eras');
    }
    const add = await pinned.client.callTool({ name: 'mcp__b__add', arguments: { a: 2, b: 3 } });
    expect(add.structuredContent).toEqual({ sum: 5 });
    const { prompts } = await pinned.client.listPrompts();
    expect(prompts.map((p) => p.name).sort()).toEqual(['mcp__a__greet', 'mcp__b__greet']);

    // A config edit: a's tool v1_tool becomes v2_tool; every client hears it.
    ws.writeUser({ a: ws.server('2'), b: ws.server('1') });
    await waitFor(() => pinned.changes.some((l) => l.includes('mcp__a__v2_tool')), 'the pinned client to hear list_changed', 30_000);
    await waitFor(() => auto.changes.some((l) => l.includes('mcp__a__v2_tool')), 'the auto client to hear list_changed', 30_000);
    await waitFor(() => old.toolChanges() > 0, 'the v1 client to hear list_changed', 30_000);
    expect(await toolNames(pinned.client)).toContain('mcp__a__v2_tool');
  });

  it('a 2026-07-28 client needs the access token, sees only its scope (?servers=a) and is refused a tool outside it', async () => {
    await expect(connectV2(new HttpV2(new URL(g.url)), { pin: MODERN })).rejects.toThrow(/401|access token|Unauthorized/i);
    const scoped = await v2({ pin: MODERN }, '?servers=a');
    const names = await toolNames(scoped.client);
    expect(names.some((n) => n.startsWith('mcp__a__'))).toBe(true);
    expect(names.some((n) => n.startsWith('mcp__b__'))).toBe(false);
    const refused = await scoped.client.callTool({ name: 'mcp__b__echo', arguments: { text: 'x' } });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toMatch(/not in this session's servers|outside|scope/i);
  });
});

describe('serve --stdio: the era is the first message’s', () => {
  const ws = new Workspace();
  const open: Array<() => Promise<unknown>> = [];

  beforeAll(() => {
    ws.writeUser({ a: ws.server('1'), b: ws.server('1') });
  });

  afterAll(async () => {
    for (const close of open) await close();
    expect(await ws.cleanup()).toBe(0);
  });

  const v2 = async (mode: Mode, extra: string[] = []): Promise<V2Connected> => {
    const transport = new StdioV2({ command: process.execPath, args: [cliMain, 'serve', '--stdio', ...extra, ...ws.args()], env: ws.env() as Record<string, string>, stderr: 'pipe' });
    const c = await connectV2(transport, mode);
    open.push(c.close);
    return c;
  };

  it('v2 pinned, v2 auto and v1 clients each list, call and hear list_changed', async () => {
    const pinned = await v2({ pin: MODERN });
    const auto = await v2('auto');
    const old = await connectStdio(ws);
    open.push(() => old.client.close());
    expect(pinned.client.getNegotiatedProtocolVersion()).toBe(MODERN);
    expect(auto.client.getNegotiatedProtocolVersion()).toBe(MODERN);

    for (const c of [pinned.client, auto.client, old.client]) {
      const names = await toolNames(c);
      for (const t of ['mcp__a__echo', 'mcp__b__add']) expect(names).toContain(t);
      expect(textOf(await c.callTool({ name: 'mcp__a__echo', arguments: { text: 'stdio' } }))).toBe('stdio');
    }

    ws.writeUser({ a: ws.server('2'), b: ws.server('1') });
    await waitFor(() => pinned.changes.some((l) => l.includes('mcp__a__v2_tool')), 'the pinned client to hear list_changed', 30_000);
    await waitFor(() => auto.changes.some((l) => l.includes('mcp__a__v2_tool')), 'the auto client to hear list_changed', 30_000);
    await waitFor(() => old.toolChanges() > 0, 'the v1 client to hear list_changed', 30_000);
  });

  it('--servers a scopes a 2026-07-28 session', async () => {
    const scoped = await v2({ pin: MODERN }, ['--servers', 'a']);
    const names = await toolNames(scoped.client);
    expect(names.some((n) => n.startsWith('mcp__a__'))).toBe(true);
    expect(names.some((n) => n.startsWith('mcp__b__'))).toBe(false);
    const refused = await scoped.client.callTool({ name: 'mcp__b__echo', arguments: { text: 'x' } });
    expect(refused.isError).toBe(true);
  });
});

describe('serve --http: the 2026-07-28 lane keeps what the gateway does', () => {
  const g = httpGateway(
    (ws) => ({ a: ws.server('1'), r: { command: process.execPath, args: [fixturePath('resource-server')], env: { INSTANCE: 'r1', [MARKER]: ws.mark } } }),
    ['--tools', 'search', '--session-idle-timeout', '3000', '--idle-timeout', '500'],
  );
  const { ws, open } = g;

  it('--tools search: the list is search_tools and call_tool; a search finds a tool, call_tool calls it', async () => {
    // No listChanged handler: this client keeps no listen stream open, so its lane can go idle.
    const client = new ClientV2({ name: 'eras-search', version: '1.0.0' }, { capabilities: {}, versionNegotiation: { mode: { pin: MODERN } } });
    await client.connect(new HttpV2(new URL(g.url), { requestInit: { headers: { authorization: `Bearer ${g.token}` } } }), { timeout: 30_000 });
    open.push(() => client.close().catch(() => undefined));
    expect((await toolNames(client)).sort()).toEqual(['call_tool', 'search_tools']);
    const found = await client.callTool({ name: 'search_tools', arguments: { query: 'echo the text back' } });
    expect(textOf(found)).toContain('mcp__a__echo');
    const called = await client.callTool({ name: 'call_tool', arguments: { name: 'mcp__a__echo', arguments: { text: 'via call_tool' } } });
    expect(textOf(called)).toBe('via call_tool');
    // A tool the search found joins this scope's list.
    expect(await toolNames(client)).toContain('mcp__a__echo');

    // Resources and prompts, through the same answers as the 2025 lane.
    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).toContain('note://static/hello');
    const read = await client.readResource({ uri: 'note://static/hello' });
    expect(JSON.stringify(read.contents)).toContain('hello from r1');
    await expect(client.readResource({ uri: 'note://nowhere' })).rejects.toThrow(/-32002|not found|no server/i);
    const greet = await client.getPrompt({ name: 'mcp__a__greet', arguments: { who: 'modern' } });
    expect(JSON.stringify(greet.messages)).toContain('Hello, modern!');
    await expect(client.getPrompt({ name: 'mcp__zz__greet', arguments: {} })).rejects.toThrow(/zz/);

    // Idle: no request and no listen stream for the session idle timeout ends the lane, which
    // releases its servers; their own idle timeout then stops them (the holds of SPEC §15).
    expect(ws.serverPids().length).toBeGreaterThan(0);
    await waitFor(() => /session stateless:\* closed \(unused for the session idle timeout/.test(g.serve?.stderr ?? ''), 'the idle lane to close', 30_000);
    await waitFor(() => ws.serverPids().length === 0, 'the released server to stop', 30_000);

    // The next request opens the lane again and starts what it needs.
    expect(textOf(await client.callTool({ name: 'call_tool', arguments: { name: 'mcp__a__echo', arguments: { text: 'again' } } }))).toBe('again');
  });
});
