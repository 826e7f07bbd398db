/**
 * The gateway's session server in-process (SDK `Client` ↔ linked in-memory
 * transport ↔ `createSessionServer` ↔ controller): cancellation, progress
 * and elicitation pass through, a reconnecting or failed server answers with
 * a tool error carrying the reason, and the scope parser's rules.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { McpController } from '../../src/controller/controller.js';
import { GatewayPool } from '../../src/gateway/pool.js';
import { intersect, parseServerList, scopeFromRequest } from '../../src/gateway/scope.js';
import type { GatewaySession } from '../../src/gateway/server.js';
import { stdioFixtureConfig } from '../helpers/fixtures.js';
import { waitFor } from '../helpers/processes.js';
import { bareController } from '../helpers/bare-controller.js';
import { closeInProcessPool, inProcessClient as clientFor, registerCallTools, textOf, type CallsSeen } from './support.js';

/** An in-process server whose tools wait until cancelled, ask, and report progress. */
const slowServer = (seen: CallsSeen): McpServer => registerCallTools(new McpServer({ name: 'slow', version: '1.0.0' }), seen);

describe('gateway session (in-process)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mcpr-gateway-session-'));
  const seen = { started: 0, aborted: 0 };
  let controller: McpController;
  let pool: GatewayPool;
  let client: Client;
  let session: GatewaySession;

  beforeAll(async () => {
    controller = bareController(dir, {
      sdkServers: { slow: slowServer(seen) },
      // What `serve` does: managed servers' elicitations go to a client through the pool.
      onElicitation: (server, request, opts) => pool.elicit(server, request, opts),
      // A lost connection waits a long time before the next attempt, so `reconnecting` can be observed.
      backoff: { initialMs: 600_000, maxMs: 600_000, attempts: 2 },
    });
    await controller.addRuntimeServer('crashy', stdioFixtureConfig('crash-server'));
    // A command that does not exist cannot start on any retry: the server goes straight to `failed`.
    await controller.addRuntimeServer('broken', { command: join(dir, 'no-such-server') });
    pool = new GatewayPool(controller);
    ({ client, session } = await clientFor(pool));
    await pool.start();
  });

  afterAll(async () => {
    await client?.close();
    await session?.close();
    await closeInProcessPool(pool, controller, dir);
  });

  it('forwards cancellation: aborting the client call cancels the call on the managed server', async () => {
    const abort = new AbortController();
    const call = client.callTool({ name: 'mcp__slow__wait', arguments: {} }, undefined, { signal: abort.signal });
    await waitFor(() => seen.started === 1, 'the tool to start');
    abort.abort();
    await expect(call).rejects.toThrow();
    await waitFor(() => seen.aborted === 1, 'the managed server to see the cancellation');
  });

  it('forwards progress notifications of a call', async () => {
    const progress: Array<{ progress: number; total?: number; message?: string }> = [];
    const result = await client.callTool({ name: 'mcp__slow__steps', arguments: { n: 3 } }, undefined, { onprogress: (p) => progress.push(p) });
    expect(textOf(result)).toBe('did 3 steps');
    expect(progress.map((p) => p.progress)).toEqual([1, 2, 3]);
    expect(progress[2]).toMatchObject({ total: 3, message: 'step 3' });
  });

  it('a failed server’s tool answers with isError and the reason', async () => {
    await waitFor(() => controller.status().find((s) => s.name === 'broken')?.state === 'failed', 'broken to fail');
    const result = await client.callTool({ name: 'mcp__broken__ping', arguments: {} });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/MCP server "broken" .*failed/);
    expect(textOf(result)).toMatch(/mcp-reconciler reconnect broken/);
  });

  it('a reconnecting server’s tools stay listed, and a call answers with isError saying it is reconnecting', async () => {
    expect(textOf(await client.callTool({ name: 'mcp__crashy__ping', arguments: {} }))).toBe('pong');
    const crashed = await client.callTool({ name: 'mcp__crashy__crash', arguments: {} });
    expect(crashed.isError).toBe(true);
    await waitFor(() => controller.status().find((s) => s.name === 'crashy')?.state === 'reconnecting', 'crashy to be reconnecting');
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('mcp__crashy__ping');
    const result = await client.callTool({ name: 'mcp__crashy__ping', arguments: {} });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/"crashy" is reconnecting/);
  });

  it('a scoped session sees only its servers; the pool counts sessions per server', async () => {
    const scoped = await clientFor(pool, new Set(['slow']));
    try {
      const names = (await scoped.client.listTools()).tools.map((t) => t.name);
      expect(names.sort()).toEqual(['mcp__slow__ask', 'mcp__slow__steps', 'mcp__slow__wait']);
      expect(pool.usage()).toMatchObject({ slow: 2, crashy: 1 });
    } finally {
      await scoped.client.close();
      await scoped.session.close();
    }
    expect(pool.usage()).toMatchObject({ slow: 1 });
  });

  it('forwards a managed server’s elicitation to the client whose call caused it; without a capable client it is declined', async () => {
    const asker = await clientFor(pool, new Set(['slow']), undefined, { elicitation: { form: {} } });
    const asked: string[] = [];
    asker.client.setRequestHandler(ElicitRequestSchema, (req) => {
      asked.push(req.params.message);
      return { action: 'accept', content: { name: 'Ada' } };
    });
    try {
      expect(textOf(await asker.client.callTool({ name: 'mcp__slow__ask', arguments: {} }))).toBe('accept:{"name":"Ada"}');
      expect(asked).toEqual(['Who are you?']);
    } finally {
      await asker.client.close();
      await asker.session.close();
    }
    // The main client declared no elicitation, and no other session is left to ask.
    expect(textOf(await client.callTool({ name: 'mcp__slow__ask', arguments: {} }))).toBe('decline:{}');
  });

  it('a call past the gateway’s call timeout is cancelled and answers with isError saying so; unknown tools do not reveal other servers', async () => {
    const scoped = await clientFor(pool, new Set(['slow']), 100);
    try {
      const result = await scoped.client.callTool({ name: 'mcp__slow__wait', arguments: {} });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toMatch(/did not answer within 100 ms without progress; the gateway cancelled the call/);
      const unknown = await scoped.client.callTool({ name: 'mcp__nowhere__x', arguments: {} });
      expect(unknown.isError).toBe(true);
      expect(textOf(unknown)).toMatch(/not provided by any MCP server of this session \(slow\)/);
      expect(textOf(unknown)).not.toMatch(/crashy/);
    } finally {
      await scoped.client.close();
      await scoped.session.close();
    }
  });
});

describe('session scopes', () => {
  it('parses ?servers= and the scope headers; several lists narrow to their intersection', () => {
    expect(scopeFromRequest(new URL('http://127.0.0.1/mcp'), {})).toBeUndefined();
    expect([...scopeFromRequest(new URL('http://127.0.0.1/mcp?servers=a,%20b,,'), {})!]).toEqual(['a', 'b']);
    expect([...scopeFromRequest(new URL('http://127.0.0.1/mcp?servers=a,b'), { 'x-mcp-allowed-servers': 'b,c' })!]).toEqual(['b']);
    expect([...scopeFromRequest(new URL('http://127.0.0.1/mcp'), { allowedmcpservernames: 'x' })!]).toEqual(['x']);
    expect([...intersect([new Set(['a']), new Set(['b'])])!]).toEqual([]);
  });

  it('an empty list is a usage error, not a silent deny-all', () => {
    expect(() => parseServerList(' , ', '--servers')).toThrow(/--servers names no server/);
    expect(() => scopeFromRequest(new URL('http://127.0.0.1/mcp?servers='), {})).toThrow(/names no server/);
  });
});
