/**
 * Gateway sessions driven with raw HTTP, where an SDK client would hide what
 * is sent (streams, missing DELETEs): the session-expiry and session-cap
 * tests.
 */
import { afterAll, beforeAll, expect } from 'vitest';
import { HttpServe } from './support.js';

export const PROTOCOL_VERSION = '2025-06-18';

/** POST `message` as JSON-RPC to the gateway, with a session id unless it is an initialize. */
export async function post(url: string, token: string, message: object, sessionId?: string): Promise<{ status: number; sessionId: string | null; text: string }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(sessionId ? { 'mcp-session-id': sessionId, 'mcp-protocol-version': PROTOCOL_VERSION } : {}),
    },
    body: JSON.stringify({ jsonrpc: '2.0', ...message }),
  });
  return { status: res.status, sessionId: res.headers.get('mcp-session-id'), text: await res.text() };
}

/** Open a session the way a client does (initialize, then initialized), and never close it. */
export async function initialize(url: string, token: string, clientName = 'abandoning-client'): Promise<{ status: number; sessionId: string | null; text: string }> {
  const init = await post(url, token, {
    id: 1,
    method: 'initialize',
    params: { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: clientName, version: '1.0.0' } },
  });
  if (init.status === 200) expect((await post(url, token, { method: 'notifications/initialized' }, init.sessionId!)).status).toBe(202);
  return init;
}

export const ping = async (url: string, token: string, sessionId: string): Promise<number> => (await post(url, token, { id: 2, method: 'ping' }, sessionId)).status;

/** A session's standalone SSE stream (GET), open until aborted: the session is in use meanwhile. */
export async function openStream(url: string, token: string, sessionId: string): Promise<AbortController> {
  const abort = new AbortController();
  const res = await fetch(url, {
    headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream', 'mcp-session-id': sessionId, 'mcp-protocol-version': PROTOCOL_VERSION },
    signal: abort.signal,
  });
  expect(res.status).toBe(200);
  // The body is left unread: the stream stays open until the abort.
  return abort;
}

/**
 * `serve --http` with `args` over a workspace of one server, for a file's
 * tests: started before them, stopped after them (its SSE streams in
 * `streams` aborted first) with no process left and exit 0.
 */
export function rawGateway(args: string[] = []): { gw: HttpServe; streams: AbortController[] } {
  const gw = new HttpServe();
  const streams: AbortController[] = [];
  beforeAll(async () => {
    gw.ws.writeUser({ a: gw.ws.server('1') });
    await gw.start(args);
  });
  afterAll(async () => {
    for (const s of streams) s.abort();
    const { code, stderr, left } = await gw.stop();
    expect(left, 'processes left behind').toBe(0);
    expect(code, stderr).toBe(0);
  });
  return { gw, streams };
}

/** Open `count` sessions that never say goodbye: their ids, in order. */
export async function openSessions(gw: HttpServe, count: number, clientName?: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const init = await initialize(gw.url, gw.token, clientName);
    expect(init.status, init.text).toBe(200);
    ids.push(init.sessionId!);
  }
  return ids;
}
