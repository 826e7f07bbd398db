/**
 * Gateway sessions driven with raw HTTP, where an SDK client would hide what
 * is sent (streams, missing DELETEs): the session-expiry and session-cap
 * tests.
 */
import { expect } from 'vitest';

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
