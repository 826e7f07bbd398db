import { afterAll, describe, expect, it } from 'vitest';
import { startHttpFixture, type HttpFixture } from '../fixtures/http-fixture.js';
import { waitFor } from '../helpers/processes.js';
import { firstText, Harness, rejection, row, toolNames, waitNewGeneration, waitState, watchReconnects } from './support.js';

const h = new Harness();
const fixtures: HttpFixture[] = [];

async function fixture(options: Parameters<typeof startHttpFixture>[0] = {}): Promise<HttpFixture> {
  const f = await startHttpFixture(options);
  fixtures.push(f);
  return f;
}

afterAll(async () => {
  await h.cleanup();
  await Promise.all(fixtures.map((f) => f.close()));
});

describe('streamable HTTP fixture', () => {
  it('registers tools and prompts and round-trips a call; dispose ends the session', async () => {
    const f = await fixture({ toolsVersion: '2' });
    const { c } = await h.running({ web: { url: f.url } });
    expect(row(c, 'web')).toMatchObject({ state: 'connected', pid: undefined, generation: 1 });
    expect(toolNames(c)).toEqual(['mcp__web__add', 'mcp__web__echo', 'mcp__web__env', 'mcp__web__pid', 'mcp__web__v2_tool']);
    expect(c.prompts().map((p) => p.name)).toEqual(['mcp__web__greet']);
    expect(firstText(await c.callTool('mcp__web__echo', { text: 'over http' }))).toBe('over http');
    expect((await c.callTool('mcp__web__add', { a: 20, b: 22 })).structuredContent).toEqual({ sum: 42 });
    expect(f.sessionCount()).toBe(1);
    await c.dispose();
    await waitFor(() => f.sessionCount() === 0, 'the session to be terminated');
  });

  it('a server restarted on the same port forgets the session: the next call fails, a new generation starts, a retry succeeds', async () => {
    const first = await fixture();
    const { c } = await h.running({ web: { type: 'http', url: first.url } });
    const before = row(c, 'web');
    expect(before.state).toBe('connected');
    const toolsBefore = toolNames(c);
    const { removed, reconnectErrors } = watchReconnects(c, 'web');

    await first.close();
    const second = await fixture({ port: first.port });
    // The call that runs into the forgotten session says so, instead of a bare "Connection closed".
    const lost = await rejection(c.callTool('mcp__web__echo', { text: 'lost?' }));
    expect(lost.code).toBe('tool_unavailable');
    expect(lost.message).toMatch(/did not complete: MCP server "web" lost its connection \(session .* is gone: HTTP 404.*\) and is reconnecting/);

    await waitNewGeneration(c, 'web', before.generation);
    // Detected as a lost session (HTTP 404), which reconnects at once.
    expect(reconnectErrors).toEqual([expect.stringMatching(/session .* is gone: HTTP 404/)]);
    expect(firstText(await c.callTool('mcp__web__echo', { text: 'again' }))).toBe('again');
    expect(second.sessionCount()).toBe(1);
    // The tool list never flickered.
    expect(toolNames(c)).toEqual(toolsBefore);
    expect(removed).toEqual([]);
  });
});

describe('SSE fixture', () => {
  it('connects over the legacy SSE transport and round-trips a call', async () => {
    const f = await fixture();
    const { c } = await h.running({ legacy: { type: 'sse', url: f.sseUrl } });
    expect(row(c, 'legacy').state).toBe('connected');
    expect(toolNames(c)).toContain('mcp__legacy__echo');
    expect(firstText(await c.callTool('mcp__legacy__echo', { text: 'sse' }))).toBe('sse');
  });
});

describe('an HTTP server that is not there', () => {
  it('ends in failed after the retry budget, with the network cause', async () => {
    const f = await fixture();
    const url = f.url;
    await f.close();
    const { c } = await h.running({ nobody: { url } }, { backoff: { initialMs: 20, maxMs: 50, attempts: 2 } });
    await waitState(c, 'nobody', 'failed');
    expect(c.unavailableReason('nobody')).toBe('failed');
    expect(row(c, 'nobody').lastError).toContain('ECONNREFUSED');
  });
});

describe('an HTTP server that wants a token', () => {
  it('rests in needs_auth with a fix, and connects once the config carries the header', async () => {
    const f = await fixture({ bearerToken: 's3cret' });
    const { c } = await h.running({ locked: { url: f.url } });
    expect(row(c, 'locked')).toMatchObject({ state: 'needs_auth', status: 'needs-auth', reason: 'needs_auth', tools: [] });
    expect(row(c, 'locked').lastError).toMatch(/requires authorization \(HTTP 401\)/);
    expect(c.toolUnavailableMessage('mcp__locked__echo')).toMatch(/"locked" needs authorisation.*auth locked/);

    await c.addRuntimeServer('locked', { url: f.url, headers: { Authorization: 'Bearer s3cret' } });
    await waitState(c, 'locked', 'connected');
    expect(firstText(await c.callTool('mcp__locked__echo', { text: 'let in' }))).toBe('let in');
  });
});
