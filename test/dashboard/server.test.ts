/**
 * The dashboard's HTTP surface without a browser: request guards, the SSE
 * stream and the API, on a controller whose servers never start a process
 * (runtime servers that are disabled), so nothing needs cleaning up but the
 * controller and the port.
 */
import { request, type IncomingMessage } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMcpController, type McpController } from '../../src/controller/controller.js';
import { startDashboard, type Dashboard } from '../../src/dashboard/server.js';
import { isLoopbackHost, isSameOrigin, tokenMatches } from '../../src/dashboard/security.js';
import { hasCode } from '../../src/errors.js';
import { rawRequest, type RawReply } from '../helpers/http.js';

let tmp: string;
let controller: McpController;
let dashboard: Dashboard;
let host: string;

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'mcpr-dash-http-'));
  controller = createMcpController({
    cwd: tmp,
    sources: [],
    approvals: join(tmp, 'approvals.json'),
    env: { PATH: process.env.PATH, HOME: tmp, XDG_CONFIG_HOME: tmp },
    watch: false,
  });
  await controller.addRuntimeServer('alpha', { command: 'never-run', disabled: true });
  await controller.start();
  dashboard = await startDashboard(controller);
  host = new URL(dashboard.url).host;
});

afterAll(async () => {
  await dashboard?.close();
  await controller?.dispose();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

/** A request to the dashboard's `path`, with its Host unless `opts.headers` names another. */
function call(path: string, opts: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<RawReply> {
  return rawRequest(new URL(path, dashboard.url).href, { ...opts, headers: { host, ...opts.headers } });
}

const withToken = (path: string) => `${path}${path.includes('?') ? '&' : '?'}token=${encodeURIComponent(dashboard.token)}`;

/** Open the SSE stream and collect events until `until` says stop. */
function stream(until: (events: { event: string; data: unknown }[]) => boolean, trigger?: () => Promise<void>): Promise<{ event: string; data: unknown }[]> {
  return new Promise((resolve, reject) => {
    const events: { event: string; data: unknown }[] = [];
    const req = request({ host: '127.0.0.1', port: Number(new URL(dashboard.url).port), path: withToken('/events'), headers: { host } }, (res) => {
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toContain('text/event-stream');
      let buffer = '';
      let triggered = false;
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let cut: number;
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const event = /^event: (.*)$/m.exec(block)?.[1];
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (event && data) events.push({ event, data: JSON.parse(data) });
        }
        if (!triggered && events.length > 0 && trigger) {
          triggered = true;
          trigger().catch(reject);
        }
        if (until(events)) {
          req.destroy();
          resolve(events);
        }
      });
      res.on('error', () => undefined);
    });
    req.on('error', (err) => (events.length > 0 ? undefined : reject(err)));
    req.end();
  });
}

describe('request guards (pure)', () => {
  it('accepts only loopback Host headers on our port', () => {
    expect(isLoopbackHost('127.0.0.1:4000', 4000)).toBe(true);
    expect(isLoopbackHost('localhost:4000', 4000)).toBe(true);
    expect(isLoopbackHost('LOCALHOST:4000', 4000)).toBe(true);
    expect(isLoopbackHost('[::1]:4000', 4000)).toBe(true);
    expect(isLoopbackHost('127.0.0.1:4001', 4000)).toBe(false);
    expect(isLoopbackHost('127.0.0.1', 4000)).toBe(false);
    expect(isLoopbackHost('evil.example:4000', 4000)).toBe(false);
    expect(isLoopbackHost('127.0.0.1.evil.example:4000', 4000)).toBe(false);
    expect(isLoopbackHost('localhost.:4000', 4000)).toBe(false);
    expect(isLoopbackHost(undefined, 4000)).toBe(false);
  });

  it('compares tokens exactly', () => {
    expect(tokenMatches('abc', 'abc')).toBe(true);
    expect(tokenMatches('abc', 'abd')).toBe(false);
    expect(tokenMatches('abc', 'abcd')).toBe(false);
    expect(tokenMatches('abc', undefined)).toBe(false);
  });

  it('calls a POST same-origin only when Origin and Sec-Fetch-Site agree with our address', () => {
    const req = (headers: Record<string, string>) => ({ headers: { host: '127.0.0.1:4000', ...headers } }) as unknown as IncomingMessage;
    expect(isSameOrigin(req({ origin: 'http://127.0.0.1:4000', 'sec-fetch-site': 'same-origin' }), 4000)).toBe(true);
    expect(isSameOrigin(req({}), 4000)).toBe(true);
    expect(isSameOrigin(req({ origin: 'http://evil.example' }), 4000)).toBe(false);
    expect(isSameOrigin(req({ origin: 'http://localhost:4000' }), 4000)).toBe(false);
    expect(isSameOrigin(req({ origin: 'null' }), 4000)).toBe(false);
    expect(isSameOrigin(req({ 'sec-fetch-site': 'cross-site' }), 4000)).toBe(false);
    expect(isSameOrigin(req({ 'sec-fetch-site': 'same-site' }), 4000)).toBe(false);
  });
});

describe('startDashboard', () => {
  it('listens on 127.0.0.1 with a fresh token in the URL', () => {
    const url = new URL(dashboard.url);
    expect(url.hostname).toBe('127.0.0.1');
    expect(Number(url.port)).toBeGreaterThan(0);
    expect(url.searchParams.get('token')).toBe(dashboard.token);
    expect(dashboard.token.length).toBeGreaterThanOrEqual(32);
  });

  it('refuses to listen anywhere but loopback, or on a bad port', async () => {
    await expect(startDashboard(controller, { host: '0.0.0.0' as '127.0.0.1' })).rejects.toSatisfy((e) => hasCode(e, 'usage'));
    await expect(startDashboard(controller, { port: 70_000 })).rejects.toSatisfy((e) => hasCode(e, 'usage'));
  });

  it('serves the page only with the token, under a strict CSP, with nothing loaded from elsewhere', async () => {
    expect((await call('/')).status).toBe(403);
    expect((await call('/?token=wrong')).status).toBe(403);
    const page = await call(withToken('/'));
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toContain('text/html');
    const csp = String(page.headers['content-security-policy']);
    expect(csp).toContain("default-src 'none'");
    const nonce = /'nonce-([^']+)'/.exec(csp)?.[1];
    expect(page.body).toContain(`<script nonce="${nonce}">`);
    expect(page.body).not.toMatch(/(src|href)="(https?:)?\/\//);
    // The server-machine chart is inlined once, with predictable state ids.
    expect(page.body.match(/<svg /g)).toHaveLength(1);
    expect(page.body).toContain('id="state&#45;server.live.connected"');
  });

  it('refuses a DNS-rebinding Host even with the token', async () => {
    const r = await call(withToken('/api/status'), { headers: { host: `attacker.example:${new URL(dashboard.url).port}` } });
    expect(r.status).toBe(403);
    expect(r.body).not.toContain('alpha');
  });

  it('returns the status with the token, with the chart nodes to highlight', async () => {
    expect((await call('/api/status')).status).toBe(403);
    const r = await call('/api/status', { headers: { 'x-dashboard-token': dashboard.token } });
    expect(r.status).toBe(200);
    const view = JSON.parse(r.body) as { servers: { name: string; state: string; active: string[]; reasonText?: string }[] };
    expect(view.servers).toEqual([expect.objectContaining({ name: 'alpha', state: 'disabled', active: ['server.disabled'], reasonText: 'is disabled in its config' })]);
  });

  it('guards POSTs: token, same origin, a known gated server', async () => {
    const json = { 'content-type': 'application/json' };
    const body = JSON.stringify({ server: 'alpha' });
    expect((await call('/api/approve', { method: 'POST', headers: json, body })).status).toBe(403);
    expect((await call('/api/approve', { method: 'POST', headers: { ...json, 'x-dashboard-token': dashboard.token, origin: 'http://evil.example' }, body })).status).toBe(403);
    expect((await call('/api/approve', { method: 'POST', headers: { ...json, 'x-dashboard-token': dashboard.token, 'sec-fetch-site': 'cross-site' }, body })).status).toBe(403);

    const unknown = await call('/api/approve', { method: 'POST', headers: { ...json, 'x-dashboard-token': dashboard.token }, body: JSON.stringify({ server: 'ghost' }) });
    expect(unknown.status).toBe(404);
    expect(JSON.parse(unknown.body)).toMatchObject({ error: expect.stringContaining('ghost') });

    // alpha is a runtime server: nothing to approve, and the API says why.
    const notGated = await call('/api/approve', { method: 'POST', headers: { ...json, 'x-dashboard-token': dashboard.token, origin: `http://${host}` }, body });
    expect(notGated.status).toBe(400);
    expect(JSON.parse(notGated.body).error).toContain('needs no approval');

    const bad = await call('/api/reject', { method: 'POST', headers: { ...json, 'x-dashboard-token': dashboard.token }, body: '[1,2' });
    expect(bad.status).toBe(400);
    const huge = await call('/api/reconnect', { method: 'POST', headers: { ...json, 'x-dashboard-token': dashboard.token }, body: JSON.stringify({ server: 'x'.repeat(20_000) }) });
    expect(huge.status).toBe(400);
    expect((await call(withToken('/api/approve'))).status).toBe(405);
    expect((await call(withToken('/nope'))).status).toBe(404);
  });

  it('POST /api/enable needs a boolean "on", a tool list when tools are named, and a configured server', async () => {
    const post = (body: unknown) =>
      call('/api/enable', { method: 'POST', headers: { 'content-type': 'application/json', 'x-dashboard-token': dashboard.token }, body: JSON.stringify(body) });
    const noOn = await post({ server: 'alpha' });
    expect(noOn.status).toBe(400);
    expect(JSON.parse(noOn.body)).toMatchObject({ error: expect.stringContaining('"on"'), hint: expect.stringContaining('"on":true') });
    expect((await post({ server: 'alpha', on: false, tools: 'all' })).status).toBe(400);
    for (const name of ['ghost', 'toString', '__proto__']) {
      const r = await post({ server: name, on: false });
      expect(r.status).toBe(404);
      expect((JSON.parse(r.body) as { error: string }).error).toContain(`no MCP server named "${name}" is configured`);
    }
    expect(controller.status().find((s) => s.name === 'alpha')!.state).toBe('disabled');
  });

  it('GET /log names a server: 400 without one, 404 for one with neither a config nor a log, a page of text for a known one', async () => {
    expect((await call(withToken('/log'))).status).toBe(400);
    expect((await call(withToken('/log?server=ghost'))).status).toBe(404);
    expect((await call(withToken('/log'), { method: 'POST' })).status).toBe(405);
    const page = await call(withToken('/log?server=alpha'));
    expect(page.status).toBe(200);
    expect(page.headers['content-security-policy']).toMatch(/default-src 'none'; style-src 'nonce-[^']+'; /);
    expect(page.headers['content-security-policy']).not.toContain('script-src');
    expect(page.body).toContain('Log of “alpha”');
  });

  it('streams the current view first, then a transition and a fresh view when a server changes', async () => {
    const events = await stream(
      (evs) => evs.some((e) => e.event === 'status' && (e.data as { servers: { name: string }[] }).servers.some((s) => s.name === 'beta')),
      () => controller.addRuntimeServer('beta', { command: 'never-run', disabled: true }),
    );
    const hello = events[0]!;
    expect(hello.event).toBe('hello');
    const helloData = hello.data as { view: { servers: { name: string }[] }; feed: { kind: string; server?: string }[] };
    expect(helloData.view.servers.map((s) => s.name)).toEqual(['alpha']);
    expect(helloData.feed).toContainEqual(expect.objectContaining({ kind: 'snapshot', server: 'alpha' }));
    expect(events).toContainEqual({ event: 'feed', data: expect.objectContaining({ kind: 'transition', server: 'beta', state: 'disabled' }) });
  });

  it('closes idempotently and stops answering', async () => {
    const extra = await startDashboard(controller);
    const port = Number(new URL(extra.url).port);
    await Promise.all([extra.close(), extra.close()]);
    await expect(
      new Promise((resolve, reject) => request({ host: '127.0.0.1', port, path: '/' }, resolve).on('error', reject).end()),
    ).rejects.toThrow(/ECONNREFUSED/);
  });
});

// Names that are Object.prototype members: an unknown `toString` is 404 (not
// configured), never a 400 from treating Object.prototype.toString as a config entry.
describe('POST /api/{approve,reject,reconnect} with prototype-member names', () => {
  for (const action of ['approve', 'reject', 'reconnect']) {
    for (const name of ['toString', 'constructor', '__proto__', 'hasOwnProperty']) {
      it(`${action} "${name}" is 404 naming the server`, async () => {
        const r = await call(`/api/${action}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-dashboard-token': dashboard.token },
          body: JSON.stringify({ server: name }),
        });
        expect(r.status).toBe(404);
        expect((JSON.parse(r.body) as { error: string }).error).toContain(`no MCP server named "${name}" is configured`);
      });
    }
  }
});
