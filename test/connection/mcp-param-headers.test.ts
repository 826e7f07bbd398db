/**
 * Protocol 2026-07-28 over streamable HTTP (SEP-2243): a tool call through the
 * controller mirrors the parameters the tool declares with `x-mcp-header`
 * into `Mcp-Param-*` request headers, and a tool whose declaration is
 * invalid is not registered, with the reason in status and `why`
 * (SPEC §6; docs/protocol.md). The server is the SDK v2 fixture, which
 * records every request's headers and itself rejects a call whose headers
 * do not match its arguments.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi, type MockInstance } from 'vitest';
import type { McpController } from '../../src/index.js';
import { bareController } from '../helpers/bare-controller.js';
import { createHeaderToolsServer, INVALID_HEADER_NAME } from '../fixtures/v2-header-tools.js';
import { startV2HttpFixture, type V2HttpFixture } from '../fixtures/v2-http-fixture.js';

describe('Mcp-Param headers (2026-07-28, streamable HTTP)', () => {
  let fixture: V2HttpFixture;
  let c: McpController;
  let dir: string;
  const warnings: string[] = [];
  let consoleWarn: MockInstance<typeof console.warn>;

  beforeAll(async () => {
    consoleWarn = vi.spyOn(console, 'warn');
    dir = mkdtempSync(join(tmpdir(), 'mcp-param-headers-'));
    fixture = await startV2HttpFixture({ legacy: 'reject', server: createHeaderToolsServer });
    c = bareController(dir, { listingCache: false, backoff: { attempts: 1 }, logger: { warn: (m) => warnings.push(m), error: () => {} } });
    await c.addRuntimeServer('hdr', { type: 'http', url: fixture.url, protocol: '2026-07-28' });
    await c.start();
  }, 120_000);
  afterAll(async () => {
    consoleWarn.mockRestore();
    await c?.dispose();
    await fixture?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  function callsOf(tool: string) {
    return fixture.requests.filter((r) => r.method === 'tools/call' && (r.params as { name?: string }).name === tool);
  }

  it('a call sends the declared parameters as Mcp-Param headers', async () => {
    expect(c.status().find((s) => s.name === 'hdr')?.state).toBe('connected');
    const result = await c.callTool('mcp__hdr__locate', { region: 'eu-west-1', limit: 3, text: 'look' });
    expect(result.isError).toBeFalsy();
    expect(result.content).toEqual([{ type: 'text', text: 'look in eu-west-1 (3)' }]);
    const [call] = callsOf('locate');
    expect(call?.headers['mcp-param-region']).toBe('eu-west-1');
    expect(call?.headers['mcp-param-limit']).toBe('3');
    // Only declared parameters travel as headers.
    expect(Object.keys(call?.headers ?? {}).filter((h) => h.startsWith('mcp-param-')).sort()).toEqual(['mcp-param-limit', 'mcp-param-region']);
    // A tool without declarations sends none.
    await c.callTool('mcp__hdr__plain', { text: 'x' });
    expect(Object.keys(callsOf('plain')[0]?.headers ?? {}).filter((h) => h.startsWith('mcp-param-'))).toEqual([]);
  });

  it('a value that is not plain ASCII is sent Base64-encoded', async () => {
    const result = await c.callTool('mcp__hdr__locate', { region: 'Zürich', limit: 1, text: 'look' });
    expect(result.content).toEqual([{ type: 'text', text: 'look in Zürich (1)' }]);
    const call = callsOf('locate').at(-1);
    expect(call?.headers['mcp-param-region']).toBe(`=?base64?${Buffer.from('Zürich').toString('base64')}?=`);
  });

  it('a tool with an invalid x-mcp-header is not registered, and status and why say why', () => {
    const names = c.tools().map((t) => t.name);
    expect(names).toContain('mcp__hdr__locate');
    expect(names).toContain('mcp__hdr__plain');
    expect(names).not.toContain('mcp__hdr__bad_header');
    const skipped = c.status().find((s) => s.name === 'hdr')?.skippedTools.find((t) => t.rawName === 'bad_header');
    expect(skipped?.invalid).toBe(true);
    expect(skipped?.reason).toContain('x-mcp-header');
    // What exactly is wrong, in the SDK's words: the header name is no HTTP token.
    expect(skipped?.reason).toContain(INVALID_HEADER_NAME);
    const why = c.toolUnavailableMessage('mcp__hdr__bad_header') ?? '';
    expect(why).toContain('MCP server "hdr"');
    expect(why).toContain('is not registered');
    expect(why).toContain(INVALID_HEADER_NAME);
    expect(why).toContain('"excludeTools": ["bad_header"]');
    // The host hears it through its logger, not on the process's stderr (the SDK's own warning).
    expect(warnings.join('\n')).toContain('tool "bad_header" is not registered');
    expect(consoleWarn.mock.calls.map((a) => String(a[0])).filter((m) => m.includes('excluding tool'))).toEqual([]);
  });
});
