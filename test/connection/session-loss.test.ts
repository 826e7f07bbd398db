import { describe, expect, it } from 'vitest';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { isSessionLossStatus, sessionLossFetch, type SessionLoss } from '../../src/connection/session-loss.js';

/** A fetch that answers from a list of outcomes, recording what it was asked. */
function scripted(outcomes: Array<number | Error>): { fetch: FetchLike; calls: Array<{ method: string; body: unknown }> } {
  const calls: Array<{ method: string; body: unknown }> = [];
  const fetch: FetchLike = async (_url, init) => {
    calls.push({ method: init?.method ?? 'GET', body: typeof init?.body === 'string' ? JSON.parse(init.body) : undefined });
    const next = outcomes.shift();
    if (next === undefined) throw new Error('unexpected request');
    if (next instanceof Error) throw next;
    return new Response(null, { status: next });
  };
  return { fetch, calls };
}

const withSession = { method: 'POST', headers: { 'mcp-session-id': 'abc', 'mcp-protocol-version': '2025-06-18' } };

describe('isSessionLossStatus', () => {
  it.each([
    [404, true, true],
    [400, true, true],
    [404, false, false],
    [400, false, false],
    [200, true, false],
    [500, true, false],
    [401, true, false],
  ])('status %i with session %s → %s', (status, had, lost) => {
    expect(isSessionLossStatus(status, had)).toBe(lost);
  });
});

describe('sessionLossFetch', () => {
  it('reports 404 and 400 for a request that carried a session id, and passes the response on', async () => {
    for (const status of [404, 400]) {
      const losses: SessionLoss[] = [];
      const { fetch } = scripted([status]);
      const response = await sessionLossFetch((l) => losses.push(l), fetch)('http://x/mcp', withSession);
      expect(response.status).toBe(status);
      expect(losses).toEqual([expect.objectContaining({ sessionLost: true, status, method: 'POST', sessionId: 'abc' })]);
    }
  });

  it('ignores errors of requests without a session (a wrong URL at initialize is not a loss)', async () => {
    const losses: SessionLoss[] = [];
    const { fetch } = scripted([404]);
    await sessionLossFetch((l) => losses.push(l), fetch)('http://x/mcp', { method: 'POST' });
    expect(losses).toEqual([]);
  });

  it('probes with a ping after a socket failure and reports a session the server no longer knows', async () => {
    const losses: SessionLoss[] = [];
    const { fetch, calls } = scripted([new TypeError('fetch failed'), new TypeError('fetch failed'), 404]);
    await expect(sessionLossFetch((l) => losses.push(l), fetch)('http://x/mcp', withSession)).rejects.toThrow('fetch failed');
    expect(calls.map((c) => c.method)).toEqual(['POST', 'POST', 'POST']);
    expect(calls[2]!.body).toMatchObject({ method: 'ping' });
    expect(losses).toEqual([expect.objectContaining({ sessionLost: true, status: 404 })]);
  });

  it('reports an unreachable server when the probe cannot get through either', async () => {
    const losses: SessionLoss[] = [];
    const refused = () => new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED') });
    const { fetch } = scripted([refused(), refused(), refused(), refused()]);
    await expect(sessionLossFetch((l) => losses.push(l), fetch)('http://x/mcp', withSession)).rejects.toThrow();
    expect(losses).toEqual([expect.objectContaining({ sessionLost: false, status: undefined })]);
    expect(losses[0]!.reason).toContain('ECONNREFUSED');
  });

  it('reports nothing when the probe finds the session alive', async () => {
    const losses: SessionLoss[] = [];
    const { fetch } = scripted([new TypeError('fetch failed'), 200]);
    await expect(sessionLossFetch((l) => losses.push(l), fetch)('http://x/mcp', withSession)).rejects.toThrow();
    expect(losses).toEqual([]);
  });

  it('does not probe a request aborted by its own signal', async () => {
    const losses: SessionLoss[] = [];
    const { fetch, calls } = scripted([new DOMException('aborted', 'AbortError')]);
    const signal = AbortSignal.abort();
    await expect(sessionLossFetch((l) => losses.push(l), fetch)('http://x/mcp', { ...withSession, signal })).rejects.toThrow();
    expect(calls).toHaveLength(1);
    expect(losses).toEqual([]);
  });
});
