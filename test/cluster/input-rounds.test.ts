/**
 * docs/cluster-sessions.md: on the 2026-07-28 lane a request may land on any
 * replica, but a call that waits for its client's answers (an input-required
 * round) lives in the replica that runs it. Its `requestState` names that
 * replica and is signed, so the client's retry, wherever the balancer sends
 * it, reaches the call. Real redis-server, real `serve --http --cluster`
 * processes, a real SDK v2 client pinned to 2026-07-28.
 */
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixturePath } from '../helpers/fixtures.js';
import { MARKER, textOf } from '../gateway/support.js';
import { ClusterFixture, type Replica } from './support.js';

const SECRET = 'r'.repeat(48);
const SIGNED = /^[0-9a-f]{1,64}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{32}$/;

describe('serve --cluster: an input-required retry reaches the replica that holds the call', () => {
  const fx = new ClusterFixture();
  const clients: ClientV2[] = [];
  let a: Replica;
  let b: Replica;

  beforeAll(async () => {
    await fx.startRedis();
    fx.ws.writeUser({ travel: { command: process.execPath, args: [fixturePath('elicit-server')], env: { [MARKER]: fx.ws.mark } } });
    a = await fx.replica('a', [], { MCP_RECONCILER_CLUSTER_SECRET: SECRET });
    b = await fx.replica('b', [], { MCP_RECONCILER_CLUSTER_SECRET: SECRET });
  }, 120_000);

  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    expect(await fx.stop()).toBe(0);
  });

  it('a first call on A, its retry with the answer sent to B: B forwards it to A and the call finishes', async () => {
    const token = await fx.idp.token('alice');
    const states: string[] = [];
    const sentTo: string[] = [];
    // A balancer that is not sticky: every request carrying a requestState goes to B, the rest to A.
    const routed = (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const body = typeof init?.body === 'string' ? (JSON.parse(init.body) as { params?: { requestState?: string } }) : undefined;
      const state = body?.params?.requestState;
      if (state !== undefined) states.push(state);
      const to = state !== undefined ? b.url : a.url;
      sentTo.push(to === b.url ? 'b' : 'a');
      return fetch(init?.method === 'POST' || init?.method === undefined ? to : String(input), init);
    };
    const client = new ClientV2({ name: 'cluster-rounds-test', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: '2026-07-28' } } });
    const asked: string[] = [];
    client.setRequestHandler('elicitation/create', (request) => {
      asked.push((request.params as { message: string }).message);
      return { action: 'accept', content: { date: '2026-12-24' } } as never;
    });
    clients.push(client);
    await client.connect(new HttpV2(new URL(a.url), { fetch: routed, requestInit: { headers: { authorization: `Bearer ${token}` } } }), { timeout: 60_000 });

    const booked = await client.callTool({ name: 'mcp__travel__book', arguments: {} }, { timeout: 120_000 });
    expect(asked).toEqual(['Which flight?']);
    expect(JSON.parse(textOf(booked))).toEqual({ action: 'accept', content: { date: '2026-12-24', seats: 2 } });
    // The retry went to B, with a state signed by the cluster (naming A); B sent it on.
    expect(states.length).toBe(1);
    expect(states[0]).toMatch(SIGNED);
    expect(sentTo).toContain('b');
    expect(a.serve.stderr).not.toContain('gateway error');
  });

  it('a requestState this cluster did not sign is answered where it lands, as unknown', async () => {
    const token = await fx.idp.token('alice');
    const client = new ClientV2({ name: 'cluster-rounds-forged', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: '2026-07-28' } } });
    clients.push(client);
    await client.connect(new HttpV2(new URL(b.url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }), { timeout: 60_000 });
    const forged = `${'a'.repeat(12)}.${'x'.repeat(22)}.${'y'.repeat(32)}`;
    await expect(client.request({ method: 'tools/call', params: { name: 'mcp__travel__book', arguments: {}, requestState: forged } } as never, { timeout: 60_000 } as never)).rejects.toThrow(
      /requestState is unknown or expired/,
    );
  });
});
