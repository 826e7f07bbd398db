/**
 * `mcp-reconciler serve --http` (the built binary) with SDK clients over
 * streamable HTTP: the access token, loopback-only Host, concurrent sessions
 * with different scopes sharing one process per server, the approval gate
 * before any session gets a server, list_changed per scope, and a clean stop.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/processes.js';
import { HttpServe, textOf, type HttpConnected } from './support.js';

type Session = HttpConnected;

function rawRequest(url: string, headers: Record<string, string>, body?: unknown): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: body === undefined ? 'GET' : 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

describe('serve --http', () => {
  const gw = new HttpServe();
  const { ws } = gw;
  let url: string;
  let token: string;
  /** The two scoped sessions of the sharing test: {a, b} and {b, c}. */
  let ab: Session;
  let bc: Session;
  const open = (query: string, headers: Record<string, string> = {}): Promise<Session> => gw.open(query, headers);

  beforeAll(async () => {
    ws.writeUser({ a: ws.server('1'), b: ws.server('1'), c: ws.server('1') });
    ws.writeProject({ p: ws.server('1') });
    await gw.start();
    ({ url, token } = gw);
  });

  afterAll(async () => {
    const { code, stderr, left } = await gw.stop();
    expect(left, 'processes left behind by the HTTP gateway').toBe(0);
    expect(code, stderr).toBe(0);
  });

  it('refuses a request without the access token, with a wrong one, or addressed to another host', async () => {
    const none = await rawRequest(url, {}, INITIALIZE);
    expect(none.status).toBe(401);
    expect(none.body).toMatch(/access token/);
    expect((await rawRequest(url, { authorization: 'Bearer wrong-token-wrong-token' }, INITIALIZE)).status).toBe(401);
    const rebinding = await rawRequest(url, { authorization: `Bearer ${token}`, host: 'evil.example:80' }, INITIALIZE);
    expect(rebinding.status).toBe(403);
    const unknownSession = await rawRequest(url, { authorization: `Bearer ${token}`, 'mcp-session-id': 'no-such-session' }, { jsonrpc: '2.0', id: 2, method: 'tools/list' });
    expect(unknownSession.status).toBe(404);
    expect((await rawRequest(`${url}?servers=`, { authorization: `Bearer ${token}` }, INITIALIZE)).status).toBe(400);
  });

  it('two concurrent sessions with different scopes share one process per server', async () => {
    const [s1, s2] = await Promise.all([open('?servers=a,b'), open('', { 'X-MCP-Allowed-Servers': 'b,c' })]);
    ab = s1;
    bc = s2;
    const [l1, l2] = await Promise.all([s1.client.listTools(), s2.client.listTools()]);
    const servers1 = new Set(l1.tools.map((t) => t.name.split('__')[1]));
    const servers2 = new Set(l2.tools.map((t) => t.name.split('__')[1]));
    expect([...servers1].sort()).toEqual(['a', 'b']);
    expect([...servers2].sort()).toEqual(['b', 'c']);

    // b is in both scopes: both sessions reach the same process.
    const [pid1, pid2] = await Promise.all([
      s1.client.callTool({ name: 'mcp__b__pid', arguments: {} }),
      s2.client.callTool({ name: 'mcp__b__pid', arguments: {} }),
    ]);
    expect(textOf(pid1)).toMatch(/^\d+$/);
    expect(textOf(pid1)).toBe(textOf(pid2));
    const running = ws.serverPids();
    expect(running).toHaveLength(3); // a, b, c: one each, none for the pending p
    expect(running).toContain(Number(textOf(pid1)));

    // Out of scope: an error result naming the session's servers, not a call.
    const outside = await s2.client.callTool({ name: 'mcp__a__echo', arguments: { text: 'x' } });
    expect(outside.isError).toBe(true);
    expect(textOf(outside)).toMatch(/outside the session's servers \(b, c\)/);
  });

  it('the approval gate holds for every session: a pending server is never started, its tool explains why', async () => {
    const gated = await open('?servers=p', { allowedMcpServerNames: 'p,a' });
    expect((await gated.client.listTools()).tools).toEqual([]);
    const result = await gated.client.callTool({ name: 'mcp__p__echo', arguments: { text: 'x' } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/"p" is waiting for your approval.*mcp-reconciler approve p/);
    expect(ws.serverPids()).toHaveLength(3);
  });

  it('sends tools/list_changed to the sessions whose scope the edit touches', async () => {
    const before = bc.toolChanges();
    ws.writeUser({ a: ws.server('1'), b: ws.server('1'), c: ws.server('2') });
    await waitFor(() => bc.toolChanges() > before, 'tools/list_changed in the session that has c');
    await waitFor(async () => (await bc.client.listTools()).tools.some((t) => t.name === 'mcp__c__v2_tool'), 'mcp__c__v2_tool');
    expect((await ab.client.listTools()).tools.some((t) => t.name.startsWith('mcp__c__'))).toBe(false);
    // The edit restarted c only: still one process per server.
    await waitFor(() => ws.serverPids().length === 3, 'three server processes');
  });

  it('a session closed by the client (HTTP DELETE) is gone; the others keep working', async () => {
    const s = await open('?servers=a');
    const id = s.transport.sessionId!;
    await s.transport.terminateSession();
    await gw.serve!.fromStderr(new RegExp(`session (${id}) closed`), 'the close');
    const stale = await rawRequest(url, { authorization: `Bearer ${token}`, 'mcp-session-id': id }, { jsonrpc: '2.0', id: 3, method: 'tools/list' });
    expect(stale.status).toBe(404);
    expect(textOf(await ab.client.callTool({ name: 'mcp__a__echo', arguments: { text: 'still here' } }))).toBe('still here');
  });
});
