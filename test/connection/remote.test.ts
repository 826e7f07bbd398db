import { afterAll, describe, expect, it } from 'vitest';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { openConnection, type ConnectOptions } from '../../src/connection/connect.js';
import { ProcessTracker } from '../../src/connection/processes.js';
import { createBasicServer } from '../fixtures/basic-tools.js';
import { startHttpFixture, type HttpFixture } from '../fixtures/http-fixture.js';
import { desiredServer } from '../helpers/fixtures.js';
import { waitFor } from '../helpers/processes.js';
import { connectionCollector, connectError, eventLog, expectNoSurvivors, firstText } from './support.js';

const tracker = new ProcessTracker({ graceMs: 500 });
const fixtures: HttpFixture[] = [];
const { connect, closeAll } = connectionCollector();

function options(extra: Partial<ConnectOptions> = {}): ConnectOptions {
  return { generation: 1, tracker, cwd: process.cwd(), timeoutMs: 10_000, ...extra };
}

async function fixture(opts: Parameters<typeof startHttpFixture>[0] = {}): Promise<HttpFixture> {
  const f = await startHttpFixture(opts);
  fixtures.push(f);
  return f;
}



afterAll(async () => {
  await closeAll();
  await Promise.all(fixtures.map((f) => f.close()));
  await expectNoSurvivors([tracker]);
});

describe('streamable HTTP', () => {
  it('connects, lists and calls; close ends the server-side session', async () => {
    const f = await fixture({ toolsVersion: '2' });
    const conn = await connect(desiredServer('web', { type: 'http', url: f.url }), options());
    expect(conn.pid).toBeUndefined();
    expect(conn.tools.map((t) => t.name)).toContain('v2_tool');
    expect(conn.prompts.map((p) => p.name)).toEqual(['greet']);
    expect((await conn.callTool('add', { a: 1, b: 2 })).structuredContent).toEqual({ sum: 3 });
    expect(f.sessionCount()).toBe(1);
    await conn.close();
    await waitFor(() => f.sessionCount() === 0, 'the session to be terminated');
    expect(f.sessionCount()).toBe(0);
  });

  it('reports session loss once when the server restarts on the same port', async () => {
    const first = await fixture();
    const log = eventLog();
    const conn = await connect(desiredServer('restarting', { url: first.url }), options({ onEvent: log.onEvent }));
    const port = first.port;
    await first.close();
    await fixture({ port });
    await expect(conn.listTools()).rejects.toThrow();
    await waitFor(() => log.lost().length > 0, 'the lost event');
    await conn.close();
    expect(log.lost()).toHaveLength(1);
    expect(log.lost()[0]!.sessionLost).toBe(true);
    expect(log.lost()[0]!.error).toMatch(/HTTP 404/);
  });

  it('reports an unreachable server as lost, not as a lost session', async () => {
    const f = await fixture();
    const log = eventLog();
    const conn = await connect(desiredServer('vanishing', { url: f.url }), options({ onEvent: log.onEvent }));
    await f.close();
    await expect(conn.callTool('echo', { text: 'anyone?' })).rejects.toThrow();
    await waitFor(() => log.lost().length > 0, 'the lost event');
    await conn.close();
    expect(log.lost()).toHaveLength(1);
    expect(log.lost()[0]!.sessionLost).toBe(false);
    expect(log.lost()[0]!.error).toMatch(/unreachable/);
  });

  it('sends the configured headers, and reports needs_auth without them', async () => {
    const f = await fixture({ bearerToken: 's3cret' });
    const err = await connectError(openConnection(desiredServer('locked', { url: f.url }), options()));
    expect(err.code).toBe('needs_auth');
    expect(err.message).toContain('Server "locked" requires authorization');
    const conn = await connect(desiredServer('unlocked', { url: f.url, headers: { Authorization: 'Bearer s3cret' } }), options());
    expect(firstText(await conn.callTool('echo', { text: 'in' }))).toBe('in');
  });

  it('fails with the network cause when nothing listens', async () => {
    const f = await fixture();
    const url = f.url;
    await f.close();
    const err = await connectError(openConnection(desiredServer('nobody', { url }), options()));
    expect(err.code).toBe('connect_failed');
    expect(err.message).toContain('Server "nobody"');
    expect(err.message).toContain('ECONNREFUSED');
  });

  it('rejects an invalid url with a hint', async () => {
    const err = await connectError(openConnection(desiredServer('badurl', { type: 'http', url: 'not a url' }), options()));
    expect(err.code).toBe('connect_failed');
    expect(err.message).toContain('invalid "url"');
  });
});

describe('SSE', () => {
  it('connects and calls, and reports a lost event when the server goes away', async () => {
    const f = await fixture();
    const log = eventLog();
    const conn = await connect(desiredServer('legacy', { type: 'sse', url: f.sseUrl }), options({ onEvent: log.onEvent }));
    expect(conn.tools.map((t) => t.name)).toContain('echo');
    expect(firstText(await conn.callTool('echo', { text: 'over sse' }))).toBe('over sse');
    await f.close();
    await waitFor(() => log.lost().length > 0, 'the lost event');
    await conn.close();
    expect(log.lost()).toHaveLength(1);
    expect(log.lost()[0]!.sessionLost).toBe(false);
  });
});

describe('in-process (sdk)', () => {
  it('connects an McpServer over a linked in-memory pair; close frees it for the next generation', async () => {
    const server = createBasicServer({ toolsVersion: '9' });
    const entry = desiredServer('inproc', { type: 'sdk', instance: server }, 'sdk');
    const log = eventLog();
    const first = await openConnection(entry, options({ onEvent: log.onEvent }));
    expect(first.tools.map((t) => t.name)).toContain('v9_tool');
    expect(firstText(await first.callTool('echo', { text: 'local' }))).toBe('local');
    await first.close();
    expect(server.isConnected()).toBe(false);
    const second = await connect(entry, options({ generation: 2 }));
    expect(second.generation).toBe(2);
    expect(firstText(await second.callTool('echo', { text: 'again' }))).toBe('again');
    expect(log.events).toEqual([]);
  });

  it('reports lost when the in-process server closes', async () => {
    const server = createBasicServer();
    const log = eventLog();
    const conn = await connect(desiredServer('closing', { instance: server }, 'sdk'), options({ onEvent: log.onEvent }));
    await server.close();
    await waitFor(() => log.lost().length > 0, 'the lost event');
    expect(log.lost()).toHaveLength(1);
  });

  it('explains that an instance already serving a client cannot connect twice', async () => {
    const server = createBasicServer();
    const entry = desiredServer('busy', { instance: server }, 'sdk');
    await connect(entry, options());
    const err = await connectError(openConnection(entry, options({ generation: 2 })));
    expect(err.code).toBe('connect_failed');
    expect(err.hint).toMatch(/one client at a time/);
  });

  it('hands back a result that breaks its outputSchema instead of throwing it away', async () => {
    const server = new Server({ name: 'liar', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: [
        {
          name: 'count',
          inputSchema: { type: 'object' as const },
          outputSchema: { type: 'object' as const, properties: { n: { type: 'integer' } }, required: ['n'], additionalProperties: false },
        },
      ],
    }));
    server.setRequestHandler(CallToolRequestSchema, () => ({ content: [{ type: 'text' as const, text: 'x' }], structuredContent: { n: 'one', extra: true } }));
    const conn = await connect(desiredServer('liar', { instance: server }, 'sdk'), options());
    const result = await conn.callTool('count', {});
    expect(result.structuredContent).toEqual({ n: 'one', extra: true });
  });
});
