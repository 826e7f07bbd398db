/**
 * Servers built with the SDK's v2 line: one that accepts only the 2026-07-28
 * revision refuses our 2025 wire, and that refusal is permanent (`failed` at
 * once, with the reason and the fix), over stdio and streamable HTTP; a
 * default v2 server (both revisions) still connects on the 2025 wire.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { ProcessTracker } from '../../src/connection/processes.js';
import { protocolRejectionOf } from '../../src/connection/errors.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { startV2HttpFixture, type V2HttpFixture } from '../fixtures/v2-http-fixture.js';
import { desiredServer, stdioFixture, stdioFixtureConfig } from '../helpers/fixtures.js';
import { Harness, cli, row, waitState } from '../controller/support.js';
import { connectionCollector, connectError, expectNoSurvivors, firstText } from './support.js';

const tracker = new ProcessTracker({ graceMs: 500 });
const fixtures: V2HttpFixture[] = [];
const { connect, closeAll } = connectionCollector();
const h = new Harness();
const options = { generation: 1, tracker, cwd: process.cwd(), timeoutMs: 20_000 };

async function v2Http(legacy: 'serve' | 'reject'): Promise<V2HttpFixture> {
  const f = await startV2HttpFixture({ legacy });
  fixtures.push(f);
  return f;
}

afterAll(async () => {
  await closeAll();
  await h.cleanup();
  await Promise.all(fixtures.map((f) => f.close()));
  await expectNoSurvivors([tracker]);
});

/** The permanent protocol error, naming the server's revision and the fix. */
function expectProtocolRejection(err: { code: string; permanent: boolean; message: string; hint: string | undefined; details: Readonly<Record<string, unknown>> }, server: string): void {
  expect(err.code).toBe('connect_failed');
  expect(err.permanent).toBe(true);
  expect(err.details.protocolRejected).toBe(true);
  expect(err.message).toContain(`Server "${server}" rejected our protocol revision`);
  expect(err.message).toContain('2026-07-28');
  expect(err.message).toMatch(/fix: upgrade mcp-reconciler/);
  expect(err.hint).toMatch(/Upgrade mcp-reconciler/);
}

describe('a v2 server that accepts only the 2026-07-28 revision', () => {
  it('over stdio: the refusal of initialize is a permanent error with the fix', async () => {
    const err = await connectError(connect(stdioFixture('v2-stdio-server', { name: 'modern', env: { V2_LEGACY: 'reject' } }), options));
    expectProtocolRejection(err, 'modern');
  });

  it('over stdio: a server that exits saying so on stderr is the same permanent error', async () => {
    const err = await connectError(connect(stdioFixture('protocol-exit-server', { name: 'quitter' }), options));
    expectProtocolRejection(err, 'quitter');
    expect(err.message).toContain('it speaks only MCP protocol revision 2026-07-28, this build');
    expect(err.message).toContain('stderr: fatal: unsupported protocol version');
  });

  it('over streamable HTTP: the 400 carrying -32022 is a permanent error with the fix, and no SSE fallback is tried', async () => {
    const f = await v2Http('reject');
    const err = await connectError(connect(desiredServer('modern-web', { type: 'http', url: f.url, fallbackToSse: true }), options));
    expectProtocolRejection(err, 'modern-web');
    expect(err.message).toContain('-32022');
    expect(err.details.transport).toBe('http');
    expect(f.methods).toEqual(['initialize']);
  });

  it('the controller sends it to `failed` at once (no reconnect loop), and `why` names the fix', async () => {
    const f = await v2Http('reject');
    const ws = h.workspace('mcp-proto-');
    const c = h.controller(ws, { backoff: { initialMs: 60_000, maxMs: 60_000, attempts: 5 } });
    await c.addRuntimeServer('modern', stdioFixtureConfig('v2-stdio-server', { env: { V2_LEGACY: 'reject' } }));
    await c.addRuntimeServer('modern-web', { type: 'http', url: f.url });
    await c.start();
    // A one-minute backoff: `failed` within the wait below means no retry was spent.
    await waitState(c, 'modern', 'failed');
    await waitState(c, 'modern-web', 'failed');
    for (const name of ['modern', 'modern-web']) {
      expect(row(c, name)).toMatchObject({ state: 'failed', attempt: 0 });
      expect(row(c, name).lastError).toMatch(/rejected our protocol revision.*2026-07-28.*fix: upgrade mcp-reconciler/s);
    }

    ws.writeUserSettings({ mcpServers: { modern: stdioFixtureConfig('v2-stdio-server', { env: { V2_LEGACY: 'reject' } }) } });
    const why = await cli(['why', 'modern', '--cwd', ws.root, '--approvals', ws.approvals], ws.env, ws.root);
    expect(why.code).toBe(0);
    expect(why.stdout).toContain('MCP server "modern" failed and is no longer retried');
    expect(why.stdout).toMatch(/rejected our protocol revision.*fix: upgrade mcp-reconciler/);
    expect(why.stdout).not.toMatch(/wait for the reconnect/);
  }, 90_000);
});

describe('a default v2 server (both revisions)', () => {
  it('connects over stdio on the 2025 wire: lists and calls', async () => {
    const conn = await connect(stdioFixture('v2-stdio-server', { name: 'dual' }), options);
    expect(conn.tools.map((t) => t.name).sort()).toEqual(['add', 'echo']);
    expect(firstText(await conn.callTool('echo', { text: 'hi' }))).toBe('echo: hi');
    expect((await conn.callTool('add', { a: 2, b: 3 })).structuredContent).toEqual({ sum: 5 });
  });

  it('connects over streamable HTTP on the 2025 wire: lists and calls', async () => {
    const f = await v2Http('serve');
    const conn = await connect(desiredServer('dual-web', { type: 'http', url: f.url }), options);
    expect(conn.tools.map((t) => t.name).sort()).toEqual(['add', 'echo']);
    expect((await conn.callTool('add', { a: 1, b: 2 })).structuredContent).toEqual({ sum: 3 });
    expect(f.methods).toContain('initialize');
  });
});

describe('protocolRejectionOf', () => {
  it('recognises the rejection codes and words, and nothing else', () => {
    expect(protocolRejectionOf(new McpError(-32022, 'Unsupported protocol version: 2025-11-25', { supported: ['2026-07-28'], requested: '2025-11-25' }))?.supported).toEqual(['2026-07-28']);
    expect(protocolRejectionOf(new McpError(-32020, 'header mismatch'))).toBeDefined();
    expect(protocolRejectionOf(new Error("Server's protocol version is not supported: 2026-07-28"))?.supported).toEqual(['2026-07-28']);
    expect(protocolRejectionOf(new McpError(-32603, 'internal error'))).toBeUndefined();
    expect(protocolRejectionOf(new Error('fetch failed'))).toBeUndefined();
  });
});
