/**
 * Lifecycle edges (docs/library.md, "Half-states and lifecycle"): dispose waits for
 * every close, invalid runtime entries fail at once, errors that cannot heal
 * go straight to `failed`, a re-added server starts clean, and decisions
 * never start anything by themselves. Real fixture servers and processes.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { startHttpFixture, type HttpFixture } from '../fixtures/http-fixture.js';
import { stdioFixtureConfig } from '../helpers/fixtures.js';
import { Harness, rejection, row, waitState } from './support.js';

const h = new Harness();
const fixtures: HttpFixture[] = [];
const servers: Server[] = [];

afterAll(async () => {
  await h.cleanup();
  await Promise.all(fixtures.map((f) => f.close()));
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
});

/** An HTTP endpoint that answers every request with `status`. */
async function answering(status: number): Promise<{ url: string; hits: () => number }> {
  let hits = 0;
  const server = createServer((_req, res) => {
    hits++;
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: `status ${status}` }));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, hits: () => hits };
}

describe('dispose', () => {
  it('resolves only after every connection closed, HTTP session DELETE included', async () => {
    // A slow goodbye: a dispose() that does not wait for the DELETE resolves first.
    const f = await startHttpFixture({ deleteDelayMs: 300 });
    fixtures.push(f);
    const { c } = await h.running({ web: { url: f.url }, local: stdioFixtureConfig('basic-server') });
    expect(f.sessionCount()).toBe(1);
    const pid = row(c, 'local').pid!;
    await c.dispose();
    // No waiting here: dispose() itself waited for the DELETE and the child.
    expect(f.deletesAnswered()).toBe(1);
    expect(f.sessionCount()).toBe(0);
    expect(c.pids()).toEqual([]);
    h.remember(pid);
  });
});

describe('addRuntimeServer', () => {
  it('rejects an invalid entry at once with the field and a fix, and adds nothing', async () => {
    const ws = h.workspace();
    const c = h.controller(ws);
    await c.start();
    const empty = await rejection(c.addRuntimeServer('blank', {}));
    expect(empty.code).toBe('config_invalid');
    expect(empty.message).toMatch(/server "blank".*needs a `command`.*or a `url`/);
    expect(empty.hint).toBeTruthy();
    const badUrl = await rejection(c.addRuntimeServer('ftp', { url: 'ftp://example.invalid/mcp' }));
    expect(badUrl.code).toBe('config_invalid');
    expect(badUrl.message).toMatch(/server "ftp" field "url"/);
    const badTimeout = await rejection(c.addRuntimeServer('slow', { command: 'node', timeout: -5 }));
    expect(badTimeout.message).toMatch(/field "timeout"/);
    const noName = await rejection(c.addRuntimeServer('', { command: 'node' }));
    expect(noName.code).toBe('config_invalid');
    expect(c.status()).toEqual([]);
  });
});

describe('errors that cannot heal', () => {
  it('command not found: failed at once with the reason, no retries, and start() does not wait for it', async () => {
    // A readiness timeout far beyond the test timeout: start() resolving proves it did not wait.
    const { c } = await h.running(
      { ghost: { command: 'mcp-reconciler-no-such-command-xyz' }, ok: stdioFixtureConfig('basic-server') },
      { readyTimeoutMs: 10 * 60_000 },
    );
    const r = row(c, 'ghost');
    expect(r).toMatchObject({ state: 'failed', reason: 'failed', attempt: 0, generation: 1 });
    expect(r.lastError).toMatch(/command not found: "mcp-reconciler-no-such-command-xyz"/);
    expect(row(c, 'ok').state).toBe('connected');
    expect(c.toolUnavailableMessage('mcp__ghost__anything')).toMatch(/"ghost" failed.*command not found/);
  });

  it('an HTTP 403 is final: failed after one request, no backoff', async () => {
    const forbidden = await answering(403);
    const { c } = await h.running({ locked: { url: forbidden.url } }, { readyTimeoutMs: 10 * 60_000 });
    const r = row(c, 'locked');
    expect(r).toMatchObject({ state: 'failed', attempt: 0, generation: 1 });
    expect(r.lastError).toMatch(/HTTP 403/);
  });

  it('an HTTP 503 is transient: it spends the backoff budget', async () => {
    const down = await answering(503);
    const { c } = await h.running({ flaky: { url: down.url } }, { backoff: { initialMs: 5, maxMs: 10, attempts: 3 } });
    await waitState(c, 'flaky', 'failed');
    expect(row(c, 'flaky').attempt).toBe(3);
    expect(down.hits()).toBeGreaterThanOrEqual(3);
  });
});

describe('a removed and re-added server', () => {
  it('does not show the old incarnation’s last error', async () => {
    const { c } = await h.running({ x: { command: 'mcp-reconciler-no-such-command-xyz' } });
    expect(row(c, 'x').lastError).toMatch(/command not found/);
    await c.removeRuntimeServer('x');
    expect(row(c, 'x').state).toBe('removed');
    await c.addRuntimeServer('x', { ...stdioFixtureConfig('basic-server'), disabled: true });
    expect(row(c, 'x')).toMatchObject({ state: 'disabled', lastError: undefined });
  });
});

describe('decisions before start()', () => {
  function gatedWorkspace() {
    const ws = h.workspace();
    ws.writeMcpJson({ proj: stdioFixtureConfig('basic-server') });
    return ws;
  }

  it('approve() persists the decision and starts nothing; start() then connects without asking', async () => {
    const ws = gatedWorkspace();
    const c = h.controller(ws);
    const prompts: string[][] = [];
    c.on('pending-approval', (e) => prompts.push(e.servers));
    await c.approve('proj');
    expect(c.pids()).toEqual([]);
    expect(c.status()).toEqual([]);
    const stored = JSON.parse(readFileSync(ws.approvals, 'utf8')) as unknown;
    expect(JSON.stringify(stored)).toMatch(/"proj".*"approved"/);
    await c.start();
    expect(row(c, 'proj').state).toBe('connected');
    expect(prompts).toEqual([]);
  });

  it('reject() and a session approval start nothing either; an unknown name still fails clearly', async () => {
    const ws = gatedWorkspace();
    const c = h.controller(ws);
    await c.reject('proj');
    expect(c.pids()).toEqual([]);
    expect(c.status()).toEqual([]);
    const unknown = await rejection(c.approve('nope'));
    expect(unknown.code).toBe('unknown_server');
    expect(unknown.hint).toMatch(/proj/);

    const c2 = h.controller(gatedWorkspace());
    await c2.approve('proj', { persist: false });
    expect(c2.pids()).toEqual([]);
    await c2.start();
    expect(row(c2, 'proj').state).toBe('connected');
  });
});

describe('reload() before start()', () => {
  it('re-reads the config and connects nothing; start() then connects', async () => {
    const ws = h.workspace();
    ws.writeUserSettings({ mcpServers: { first: stdioFixtureConfig('basic-server') } });
    const c = h.controller(ws);
    await c.reload();
    expect(c.pids()).toEqual([]);
    expect(c.status()).toEqual([]);
    expect(Object.keys(c.config().desired)).toEqual(['first']);

    // A second reload sees the file as it is now, and still starts nothing.
    ws.writeUserSettings({ mcpServers: { first: stdioFixtureConfig('basic-server'), second: stdioFixtureConfig('basic-server') } });
    await c.reload();
    expect(c.pids()).toEqual([]);
    expect(c.status()).toEqual([]);
    expect(Object.keys(c.config().desired).sort()).toEqual(['first', 'second']);

    await c.start();
    expect(c.status().map((r) => [r.name, r.state])).toEqual([
      ['first', 'connected'],
      ['second', 'connected'],
    ]);
  });
});

describe('event names', () => {
  it('are a closed, type-checked set', () => {
    const ws = h.workspace();
    const c = h.controller(ws);
    // @ts-expect-error: not an event of McpController (the typecheck fails if this compiles)
    const off = c.on('tools-changd', () => {});
    off();
    const offOk = c.on('tools-changed', (e) => {
      const updated: string[] = e.updated;
      expect(Array.isArray(updated)).toBe(true);
    });
    offOk();
  });
});
