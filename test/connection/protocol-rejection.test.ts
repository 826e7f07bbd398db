/**
 * Servers built with the SDK's v2 line, over stdio and streamable HTTP: one
 * that accepts only the 2026-07-28 revision is reached on the new wire under
 * `auto`; pinned to the 2025 wire it refuses us, and that refusal is
 * permanent (`failed` at once, with the reason and the fix). A default v2
 * server (both revisions) gets the newest revision.
 */
import { describe, expect, it } from 'vitest';
import { protocolSuite } from './protocol-suite.js';
import { protocolRejectionOf } from '../../src/connection/errors.js';
import { ProtocolError, SdkError, SdkErrorCode, SdkHttpError, UnsupportedProtocolVersionError } from '@modelcontextprotocol/client';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { desiredServer, stdioFixture, stdioFixtureConfig } from '../helpers/fixtures.js';
import { cli, row, waitState } from '../controller/support.js';
import { connectError, firstText } from './support.js';

const { connect, h, options, v2Http } = protocolSuite();

/** The permanent protocol error, naming the server's revision and the fix. */
function expectProtocolRejection(err: { code: string; permanent: boolean; message: string; hint: string | undefined; details: Readonly<Record<string, unknown>> }, server: string): void {
  expect(err.code).toBe('connect_failed');
  expect(err.permanent).toBe(true);
  expect(err.details.protocolRejected).toBe(true);
  expect(err.message).toContain(`Server "${server}" rejected our protocol revision`);
  expect(err.message).toContain('2026-07-28');
  expect(err.message).toContain('Retrying cannot help');
}

const V2_REJECT = { V2_LEGACY: 'reject' };

describe('a v2 server that accepts only the 2026-07-28 revision', () => {
  it('over stdio under auto: connects on the new wire, lists and calls', async () => {
    const conn = await connect(stdioFixture('v2-stdio-server', { name: 'modern', env: V2_REJECT }), options);
    expect(conn.protocol.era).toBe('modern');
    expect(conn.protocolVersion).toBe('2026-07-28');
    expect(conn.tools.map((t) => t.name).sort()).toEqual(['add', 'echo']);
    expect(firstText(await conn.callTool('echo', { text: 'new wire' }))).toBe('echo: new wire');
  });

  it('over streamable HTTP under auto: server/discover, then stateless requests, no initialize', async () => {
    const f = await v2Http('reject');
    const conn = await connect(desiredServer('modern-web', { type: 'http', url: f.url, fallbackToSse: true }), options);
    expect(conn.protocol).toMatchObject({ era: 'modern', discover: { supportedVersions: ['2026-07-28'] } });
    expect((await conn.callTool('add', { a: 4, b: 5 })).structuredContent).toEqual({ sum: 9 });
    expect(f.methods[0]).toBe('server/discover');
    expect(f.methods).not.toContain('initialize');
  });

  it('over stdio pinned to 2025-11-25: the refusal of initialize is a permanent error naming the pin that works', async () => {
    const err = await connectError(connect(desiredServer('old-pin', { ...stdioFixtureConfig('v2-stdio-server', { env: V2_REJECT }), protocol: '2025-11-25' }), options));
    expectProtocolRejection(err, 'old-pin');
    expect(err.message).toContain('it speaks only MCP protocol revision 2026-07-28');
    expect(err.hint).toMatch(/"protocol": "2026-07-28" in its config \(or "protocol": "auto", instead of "2025-11-25"\)/);
  });

  it('over streamable HTTP pinned to 2025-11-25: the 400 carrying -32022 is permanent, and no SSE fallback is tried', async () => {
    const f = await v2Http('reject');
    const err = await connectError(connect(desiredServer('old-web', { type: 'http', url: f.url, fallbackToSse: true, protocol: '2025-11-25' }), options));
    expectProtocolRejection(err, 'old-web');
    expect(err.message).toContain('-32022');
    expect(err.details.transport).toBe('http');
    expect(f.methods).toEqual(['initialize']);
  });

  it('over stdio: a server that exits on any opening, saying so on stderr, is a permanent error', async () => {
    const err = await connectError(connect(stdioFixture('protocol-exit-server', { name: 'quitter' }), options));
    expectProtocolRejection(err, 'quitter');
    expect(err.message).toContain('stderr: fatal: unsupported protocol version');
  });

  it('the controller connects it under auto, and sends a 2025 pin to `failed` at once (no reconnect loop); `why` names the fix', async () => {
    const f = await v2Http('reject');
    const ws = h.workspace('mcp-proto-');
    const c = h.controller(ws, { backoff: { initialMs: 60_000, maxMs: 60_000, attempts: 5 } });
    await c.addRuntimeServer('auto-stdio', stdioFixtureConfig('v2-stdio-server', { env: V2_REJECT }));
    await c.addRuntimeServer('auto-web', { type: 'http', url: f.url });
    await c.addRuntimeServer('modern', { ...stdioFixtureConfig('v2-stdio-server', { env: V2_REJECT }), protocol: '2025-11-25' });
    await c.addRuntimeServer('modern-web', { type: 'http', url: f.url, protocol: '2025-11-25' });
    await c.start();
    await waitState(c, 'auto-stdio', 'connected');
    await waitState(c, 'auto-web', 'connected');
    // A one-minute backoff: `failed` within the wait below means no retry was spent.
    await waitState(c, 'modern', 'failed');
    await waitState(c, 'modern-web', 'failed');
    for (const name of ['modern', 'modern-web']) {
      expect(row(c, name)).toMatchObject({ state: 'failed', attempt: 0 });
      expect(row(c, name).lastError).toMatch(/rejected our protocol revision.*2026-07-28.*fix: pin the revision it speaks with "protocol": "2026-07-28"/s);
    }

    ws.writeUserSettings({ mcpServers: { modern: { ...stdioFixtureConfig('v2-stdio-server', { env: V2_REJECT }), protocol: '2025-11-25' } } });
    const why = await cli(['why', 'modern', '--cwd', ws.root, '--approvals', ws.approvals], ws.env, ws.root);
    expect(why.code).toBe(0);
    expect(why.stdout).toContain('MCP server "modern" failed and is no longer retried');
    expect(why.stdout).toMatch(/rejected our protocol revision.*"protocol": "2026-07-28"/);
    expect(why.stdout).not.toMatch(/wait for the reconnect/);
  }, 90_000);
});

describe('a default v2 server (both revisions)', () => {
  it('connects over stdio on the newest revision: lists and calls', async () => {
    const conn = await connect(stdioFixture('v2-stdio-server', { name: 'dual' }), options);
    expect(conn.protocol.era).toBe('modern');
    expect(conn.tools.map((t) => t.name).sort()).toEqual(['add', 'echo']);
    expect(firstText(await conn.callTool('echo', { text: 'hi' }))).toBe('echo: hi');
    expect((await conn.callTool('add', { a: 2, b: 3 })).structuredContent).toEqual({ sum: 5 });
  });

  it('connects over streamable HTTP on the newest revision: lists and calls', async () => {
    const f = await v2Http('serve');
    const conn = await connect(desiredServer('dual-web', { type: 'http', url: f.url }), options);
    expect(conn.protocol.era).toBe('modern');
    expect(conn.tools.map((t) => t.name).sort()).toEqual(['add', 'echo']);
    expect((await conn.callTool('add', { a: 1, b: 2 })).structuredContent).toEqual({ sum: 3 });
    expect(f.methods).not.toContain('initialize');
  });
});

describe('protocolRejectionOf', () => {
  it('recognises the rejection codes and words of both SDK lines, and nothing else', () => {
    expect(protocolRejectionOf(new UnsupportedProtocolVersionError({ supported: ['2026-07-28'], requested: '2025-11-25' }))?.supported).toEqual(['2026-07-28']);
    expect(protocolRejectionOf(new ProtocolError(-32022, 'Unsupported protocol version: 2025-11-25', { supported: ['2026-07-28'], requested: '2025-11-25' }))?.supported).toEqual(['2026-07-28']);
    expect(protocolRejectionOf(new McpError(-32022, 'Unsupported protocol version: 2025-11-25', { supported: ['2026-07-28'], requested: '2025-11-25' }))).toBeDefined();
    expect(protocolRejectionOf(new ProtocolError(-32020, 'header mismatch'))).toBeDefined();
    const body = JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32022, message: 'Unsupported protocol version', data: { supported: ['2026-07-28'] } } });
    expect(protocolRejectionOf(new SdkHttpError(SdkErrorCode.ClientHttpNotImplemented, `Error POSTing to endpoint: ${body}`, { status: 400, text: body }))?.supported).toEqual(['2026-07-28']);
    expect(protocolRejectionOf(new Error("Server's protocol version is not supported: 2026-07-28"))?.supported).toEqual(['2026-07-28']);
    expect(protocolRejectionOf(new SdkError(SdkErrorCode.EraNegotiationFailed, 'Version negotiation failed: the server did not offer pinned protocol version 2026-07-28 via server/discover (no fallback in pin mode)'))).toBeDefined();
    expect(protocolRejectionOf(new ProtocolError(-32603, 'internal error'))).toBeUndefined();
    expect(protocolRejectionOf(new SdkError(SdkErrorCode.RequestTimeout, 'Request timed out'))).toBeUndefined();
    expect(protocolRejectionOf(new Error('fetch failed'))).toBeUndefined();
  });
});
