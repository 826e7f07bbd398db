/**
 * The 2026-07-28 HTTP lane's direct `tools/call` path
 * (src/gateway/modern-calls.ts) against the SDK's stateless handler: two
 * gateways on one pool, one serving calls directly and one through the SDK
 * (`sdkCallPath`), get the same raw requests and must give the same
 * answers, status, headers and body (JSON, SSE with progress, tool errors,
 * protocol errors, input-required rounds, and the requests the direct path
 * leaves to the SDK). Then what only the direct path has to show: no server
 * instance per request, a client's disconnect cancels its call, and
 * concurrent requests with the same JSON-RPC id keep their answers apart.
 */
import { mkdtempSync } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY, Server as ServerV2 } from '@modelcontextprotocol/server';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import type { McpController } from '../../src/controller/controller.js';
import { startHttpGateway, type HttpGateway } from '../../src/gateway/http.js';
import { DirectCalls } from '../../src/gateway/modern-calls.js';
import { GatewayPool } from '../../src/gateway/pool.js';
import { bareController } from '../helpers/bare-controller.js';
import { waitFor } from '../helpers/processes.js';
import { closeInProcessPool, registerCallTools, type CallsSeen } from './support.js';

const MODERN = '2026-07-28';
const TOKEN = 'modern-calls-test-token-0123456789';

/** An in-process server with the tools the cases call: echo, sum, fail, and the gateway tests' wait, ask and steps. */
function toolServer(seen: CallsSeen): McpServer {
  const server = new McpServer({ name: 't', version: '1.0.0' });
  server.registerTool('echo', { description: 'Echoes text.', inputSchema: { text: z.string() } }, ({ text }) => ({ content: [{ type: 'text', text }] }));
  server.registerTool('sum', { description: 'Adds.', inputSchema: { a: z.number(), b: z.number() }, outputSchema: { sum: z.number() } }, ({ a, b }) => ({
    content: [{ type: 'text', text: String(a + b) }],
    structuredContent: { sum: a + b },
  }));
  server.registerTool('fail', { description: 'Throws.', inputSchema: {} }, () => {
    throw new Error('boom');
  });
  return registerCallTools(server, seen);
}

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** The headers that differ between any two answers (the clock's). */
const VARYING = new Set(['date']);

function headersOf(h: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined && !VARYING.has(k)) out[k] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}

/** POST `body` (raw) to `url` with the standard headers of a 2026-07-28 request, `headers` on top (`undefined` removes one). */
function post(url: string, body: string, headers: Record<string, string | undefined> = {}): Promise<Answer> {
  const all: Record<string, string | undefined> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    authorization: `Bearer ${TOKEN}`,
    'mcp-protocol-version': MODERN,
    'mcp-method': 'tools/call',
    ...headers,
  };
  const sent = Object.fromEntries(Object.entries(all).filter((e): e is [string, string] => e[1] !== undefined));
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers: { ...sent, 'content-length': Buffer.byteLength(body) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: headersOf(res.headers), body: text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

type Caps = Record<string, unknown>;

/** A 2026-07-28 `tools/call` body. */
function call(id: string | number, name: string, args: unknown, extra: { caps?: Caps; meta?: Record<string, unknown>; params?: Record<string, unknown> } = {}): string {
  const _meta = { [PROTOCOL_VERSION_META_KEY]: MODERN, [CLIENT_CAPABILITIES_META_KEY]: extra.caps ?? {}, [CLIENT_INFO_META_KEY]: { name: 'raw', version: '1.0.0' }, ...extra.meta };
  return JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, ...(args === undefined ? {} : { arguments: args }), ...extra.params, _meta } });
}

describe('2026-07-28 tools/call over HTTP: the direct path answers like the SDK', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mcpr-modern-calls-'));
  const seen = { started: 0, aborted: 0 };
  let controller: McpController;
  let pool: GatewayPool;
  let direct: HttpGateway;
  let sdk: HttpGateway;

  /** `requestState`s both gateways mint alike, so their input-required answers compare. */
  const states = () => {
    let n = 0;
    return () => `state-${++n}`;
  };

  beforeAll(async () => {
    controller = bareController(dir, {
      sdkServers: { t: toolServer(seen) },
      onElicitation: (server, request, opts) => pool.elicit(server, request, opts),
    });
    pool = new GatewayPool(controller);
    await pool.start();
    direct = await startHttpGateway(pool, { token: TOKEN, requestStateGenerator: states() });
    sdk = await startHttpGateway(pool, { token: TOKEN, requestStateGenerator: states(), sdkCallPath: true });
  });

  afterAll(async () => {
    await direct?.close();
    await sdk?.close();
    await closeInProcessPool(pool, controller, dir);
  });

  /**
   * Send the same request to both gateways; their answers must be equal,
   * and the first gateway must have served it on the direct path when
   * `viaDirect` (on the SDK's otherwise).
   */
  const both = async (body: string, headers: Record<string, string | undefined> = {}, query = '', viaDirect = true): Promise<Answer> => {
    const served = vi.spyOn(DirectCalls.prototype, 'serve');
    try {
      const a = await post(`${direct.url}${query}`, body, headers);
      expect(served.mock.calls.length).toBe(viaDirect ? 1 : 0);
      const b = await post(`${sdk.url}${query}`, body, headers);
      expect(served.mock.calls.length).toBe(viaDirect ? 1 : 0);
      expect(a).toEqual(b);
      return a;
    } finally {
      served.mockRestore();
    }
  };

  it('results, tool errors and protocol errors: same status, headers and body', async () => {
    const echo = await both(call(1, 'mcp__t__echo', { text: 'hi' }), { 'mcp-name': 'mcp__t__echo' });
    expect(echo.status).toBe(200);
    expect(echo.headers['content-type']).toBe('application/json');
    expect(JSON.parse(echo.body)).toMatchObject({ jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'hi' }], resultType: 'complete' } });
    // A string id, structured content, a thrown tool, a bad argument, an unknown tool, arguments that are no object, an extra param.
    expect(JSON.parse((await both(call('x-7', 'mcp__t__sum', { a: 2, b: 3 }), { 'mcp-name': 'mcp__t__sum' })).body).result.structuredContent).toEqual({ sum: 5 });
    expect(JSON.parse((await both(call(2, 'mcp__t__fail', {}), { 'mcp-name': 'mcp__t__fail' })).body).result.isError).toBe(true);
    await both(call(3, 'mcp__t__echo', { text: 5 }), { 'mcp-name': 'mcp__t__echo' });
    await both(call(4, 'mcp__t__nope', {}), { 'mcp-name': 'mcp__t__nope' });
    const invalid = await both(call(5, 'mcp__t__echo', 'not an object'), { 'mcp-name': 'mcp__t__echo' });
    expect(JSON.parse(invalid.body).error).toBeDefined();
    await both(call(6, 'mcp__t__echo', { text: 'x' }, { params: { extra: true } }), { 'mcp-name': 'mcp__t__echo' });
    await both(call(7, 'mcp__t__echo', undefined), { 'mcp-name': 'mcp__t__echo' });
    // Other scopes: a tool outside it.
    await both(call(8, 'mcp__t__echo', { text: 'scoped' }), { 'mcp-name': 'mcp__t__echo' }, '?servers=nothere');
  });

  it('progress makes the answer an SSE stream, frame for frame the same', async () => {
    const steps = await both(call(10, 'mcp__t__steps', { n: 3 }, { meta: { progressToken: 'p1' } }), { 'mcp-name': 'mcp__t__steps' });
    expect(steps.headers['content-type']).toBe('text/event-stream');
    expect(steps.body.match(/notifications\/progress/g)).toHaveLength(3);
    expect(steps.body).toContain('did 3 steps');
  });

  it('an input-required round and its retry', async () => {
    const caps = { elicitation: { form: {} } };
    const first = await both(call(20, 'mcp__t__ask', {}, { caps }), { 'mcp-name': 'mcp__t__ask' });
    const asked = JSON.parse(first.body).result as { resultType: string; requestState: string; inputRequests: Record<string, unknown> };
    expect(asked.resultType).toBe('input_required');
    const key = Object.keys(asked.inputRequests)[0]!;
    const retry = call(21, 'mcp__t__ask', {}, { caps, params: { inputResponses: { [key]: { action: 'accept', content: { name: 'Ada' } } }, requestState: asked.requestState } });
    const done = await both(retry, { 'mcp-name': 'mcp__t__ask' });
    expect(JSON.parse(done.body).result.content[0].text).toBe('accept:{"name":"Ada"}');
    // The state is spent: the refusal is the same too.
    expect(JSON.parse((await both(retry, { 'mcp-name': 'mcp__t__ask' })).body).error.message).toMatch(/unknown or expired/);
    // A client that cannot elicit.
    await both(call(22, 'mcp__t__ask', {}), { 'mcp-name': 'mcp__t__ask' });
  });

  it('requests the direct path leaves to the SDK get its answers', async () => {
    const body = call(30, 'mcp__t__echo', { text: 'x' });
    const sdkPath = async (headers: Record<string, string | undefined>): Promise<number> => (await both(body, headers, '', false)).status;
    expect(await sdkPath({})).toBe(400); // no Mcp-Name
    expect(await sdkPath({ 'mcp-name': 'mcp__t__other' })).toBe(400);
    expect(await sdkPath({ 'mcp-name': '=?base64?bWNwX190X19lY2hv?=' })).toBe(200);
    expect(await sdkPath({ 'mcp-name': 'mcp__t__echo', 'mcp-method': undefined })).toBe(400);
    expect(await sdkPath({ 'mcp-name': 'mcp__t__echo', 'mcp-protocol-version': undefined })).toBe(400);
    expect(await sdkPath({ 'mcp-name': 'mcp__t__echo', 'mcp-protocol-version': '2025-11-25' })).toBe(400);
    expect(await sdkPath({ 'mcp-name': 'mcp__t__echo', 'content-type': 'text/plain' })).toBe(415);
    // Optional whitespace around the name is the SDK's to strip, and the direct path's.
    expect((await both(body, { 'mcp-name': ' mcp__t__echo ' })).status).toBe(200);
  });

  it('builds no server instance per call (the SDK handler builds one each)', async () => {
    const connect = vi.spyOn(ServerV2.prototype, 'connect');
    try {
      // A scope of its own: a new lane on each gateway.
      for (let i = 0; i < 5; i++) expect((await post(`${direct.url}?servers=t`, call(i, 'mcp__t__echo', { text: 'd' }), { 'mcp-name': 'mcp__t__echo' })).status).toBe(200);
      expect(connect.mock.calls.length).toBeLessThanOrEqual(1);
      connect.mockClear();
      for (let i = 0; i < 5; i++) expect((await post(`${sdk.url}?servers=t`, call(i, 'mcp__t__echo', { text: 's' }), { 'mcp-name': 'mcp__t__echo' })).status).toBe(200);
      expect(connect.mock.calls.length).toBe(5);
    } finally {
      connect.mockRestore();
    }
  });

  it('concurrent calls with the same id get their own answers', async () => {
    const texts = Array.from({ length: 12 }, (_, i) => `t${i}`);
    const answers = await Promise.all(texts.map((text) => post(direct.url, call(1, 'mcp__t__echo', { text }), { 'mcp-name': 'mcp__t__echo' })));
    expect(answers.map((a) => (JSON.parse(a.body) as { id: number; result: { content: { text: string }[] } }).result.content[0]!.text)).toEqual(texts);
    expect(answers.every((a) => JSON.parse(a.body).id === 1)).toBe(true);
  });

  it('a client that disconnects cancels its call on the managed server, on both paths', async () => {
    for (const g of [direct, sdk]) {
      const before = { ...seen };
      const req = httpRequest(g.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${TOKEN}`, 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'mcp__t__wait' },
      });
      req.on('error', () => undefined);
      req.end(call(40, 'mcp__t__wait', {}));
      await waitFor(() => seen.started > before.started, 'the tool to start', 30_000);
      req.destroy();
      await waitFor(() => seen.aborted > before.aborted, 'the managed server to see the cancellation', 30_000);
    }
  });
});
