/**
 * The dashboard's Sign in (docs/oauth.md): `POST /api/auth` starts the OAuth flow
 * of a server in `needs_auth` and answers with the URL to open; once the
 * browser comes back, the server connects and the event stream says so. A
 * server OAuth does not apply to gets a 400 saying why.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { McpController } from '../../src/index.js';
import { startDashboard, type Dashboard } from '../../src/dashboard/server.js';
import { startOAuthFixture, type OAuthFixture } from '../fixtures/oauth-fixture.js';
import { authTestController, reach, stateOf } from '../auth/support.js';

describe('dashboard sign-in', () => {
  let fixture: OAuthFixture;
  let dir: string;
  let controller: McpController;
  let dashboard: Dashboard;

  beforeEach(async () => {
    fixture = await startOAuthFixture();
    dir = mkdtempSync(join(tmpdir(), 'mcpr-dash-auth-'));
    controller = authTestController(dir);
    await controller.addRuntimeServer('remote', { type: 'http', url: fixture.url });
    await controller.addRuntimeServer('local', { command: 'never-run', disabled: true });
    await controller.start();
    dashboard = await startDashboard(controller);
  });
  afterEach(async () => {
    await dashboard?.close();
    await controller?.dispose();
    await fixture?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const post = async (server: string): Promise<{ status: number; body: { ok?: boolean; url?: string; error?: string } }> => {
    const origin = new URL(dashboard.url).origin;
    const res = await fetch(`${origin}/api/auth`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-dashboard-token': dashboard.token, origin },
      body: JSON.stringify({ server }),
    });
    return { status: res.status, body: (await res.json()) as { ok?: boolean; url?: string; error?: string } };
  };

  it('answers with the authorization URL; following it connects the server', async () => {
    expect(stateOf(controller)?.state).toBe('needs_auth');
    const connected = reach(controller, 'connected');
    const { status, body } = await post('remote');
    expect(status).toBe(200);
    const url = new URL(body.url!);
    expect(url.origin).toBe(new URL(fixture.url).origin);
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    // The browser's part: the authorization server redirects to the loopback receiver.
    const authorize = await fetch(url, { redirect: 'manual' });
    await (await fetch(authorize.headers.get('location')!)).text();
    await connected;
    expect((await controller.callTool('mcp__remote__echo', { text: 'signed in' })).isError).toBeFalsy();
  });

  it('refuses a server OAuth does not apply to, saying why, and a cross-origin request', async () => {
    const local = await post('local');
    expect(local.status).toBe(400);
    expect(local.body.error).toMatch(/local/);
    const cross = await fetch(`${new URL(dashboard.url).origin}/api/auth`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-dashboard-token': dashboard.token, origin: 'http://evil.example' },
      body: JSON.stringify({ server: 'remote' }),
    });
    expect(cross.status).toBe(403);
    expect(fixture.counts.register).toBe(0);
  });
});
