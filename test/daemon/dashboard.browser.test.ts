/**
 * `status --shared --ui`: the daemon's dashboard, against a real daemon (the
 * built bin, started by the first shim) with two sessions of different
 * scopes, in Debian's headless Chromium. The page lists the workspace, its
 * sessions and which session holds which server, and follows a session's
 * end live.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { request } from 'node:http';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DaemonStatus } from '../../src/daemon/protocol.js';
import { browserTestSkipReason, findChromium } from '../helpers/chromium.js';
import { pidAlive, waitFor } from '../helpers/processes.js';
import { cliMain } from '../gateway/support.js';
import { DaemonWorkspace, RawShim } from './support.js';

const skipReason = browserTestSkipReason();
if (skipReason) console.warn(`\n[daemon dashboard.browser.test] SKIPPED: ${skipReason}\n`);

const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic', '--no-first-run', '--disable-component-update', '--disable-sync'];

/** `status --shared --ui --json` running: its process and the URL it printed. */
async function startUi(ws: DaemonWorkspace): Promise<{ child: ChildProcessWithoutNullStreams; url: string; stderr: () => string }> {
  const child = spawn(process.execPath, [cliMain, 'status', '--shared', '--ui', '--json', ...ws.args()], { env: ws.env(), cwd: ws.root, stdio: 'pipe' });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (err += c));
  let url: string | undefined;
  await waitFor(
    () => {
      const line = out.split('\n').find((l) => l.includes('"event":"dashboard"'));
      if (line) url = (JSON.parse(line) as { url: string }).url;
      return url !== undefined || child.exitCode !== null;
    },
    'the dashboard URL',
    60_000,
  );
  if (!url) throw new Error(`status --shared --ui exited ${child.exitCode}: ${err}`);
  return { child, url, stderr: () => err };
}

function getJson(url: string): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    request(url, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: body.startsWith('{') ? JSON.parse(body) : body }));
    })
      .on('error', reject)
      .end();
  });
}

describe.skipIf(skipReason !== undefined)('status --shared --ui: the daemon dashboard', () => {
  const ws = new DaemonWorkspace();
  const shims: RawShim[] = [];
  let ui: Awaited<ReturnType<typeof startUi>> | undefined;
  let browser: Browser | undefined;
  let page: Page;

  beforeAll(async () => {
    ws.writeUser({ alpha: ws.server('1'), beta: ws.server('2') });
    // A project server: gated, waiting for approval in the daemon.
    ws.writeProject({ gated: ws.server('3') });
    // The first shim starts the daemon; the second attaches, scoped to alpha.
    shims.push(new RawShim(ws));
    await shims[0]!.initialize();
    shims.push(new RawShim(ws, ['--servers', 'alpha']));
    await shims[1]!.initialize();
    await waitFor(async () => {
      const w = (await ws.status())?.workspaces[0];
      const state = (name: string) => w?.servers.find((s) => s.name === name)?.state;
      return w !== undefined && w.sessions.length === 2 && state('alpha') === 'connected' && state('beta') === 'connected' && state('gated') === 'pending_approval';
    }, 'two sessions, both user servers connected and the project one pending', 60_000, 500);
    browser = await chromium.launch({ executablePath: findChromium()!, args: CHROMIUM_ARGS });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  });

  afterAll(async () => {
    await browser?.close();
    if (ui && ui.child.exitCode === null) {
      ui.child.kill('SIGKILL');
      await waitFor(() => ui!.child.exitCode !== null || ui!.child.signalCode !== null, 'the dashboard process to exit', 10_000).catch(() => undefined);
    }
    for (const s of shims) if (s.alive()) s.child.kill('SIGKILL');
    expect(await ws.shutdown(), 'processes left behind').toBe(0);
  });

  it('lists the workspace, its sessions and which session holds which server, and follows a session leaving', async () => {
    ui = await startUi(ws);
    const status = (await ws.status()) as DaemonStatus;
    const w = status.workspaces[0]!;
    const [all, scoped] = shims.map((s) => w.sessions.find((x) => x.pid === s.child.pid)!);
    expect(all && scoped, 'both shims have a session').toBeTruthy();

    // The JSON reading the page is built from, with the token only.
    const reading = await getJson(new URL(`/api/daemon${new URL(ui.url).search}`, ui.url).href);
    expect(reading.status).toBe(200);
    expect((reading.body as { status: DaemonStatus }).status.pid).toBe(status.pid);
    expect((await getJson(new URL('/api/daemon', ui.url).href)).status).toBe(403);

    await page.goto(ui.url);
    const section = page.locator(`section.ws[data-workspace="${w.key}"]`);
    await section.waitFor({ timeout: 30_000 });
    expect(await section.locator('h2').textContent()).toBe(ws.root);
    expect(await page.locator('#meta').textContent()).toContain(`daemon pid ${status.pid}`);
    // Sessions: the shims' pids, the client's name from its initialize, the scope.
    expect(await section.locator(`tr[data-session="${all!.id}"] td`).allTextContents()).toEqual([all!.id.slice(0, 8), String(shims[0]!.child.pid), 'raw 1', 'all', expect.stringMatching(/ago$/)]);
    expect((await section.locator(`tr[data-session="${scoped!.id}"] td`).allTextContents()).slice(1, 4)).toEqual([String(shims[1]!.child.pid), 'raw 1', 'alpha']);
    // Holds: alpha by both sessions, beta only by the unscoped one.
    const heldBy = (server: string) => section.locator(`tr[data-server="${server}"] .held .sid`).evaluateAll((els) => els.map((e) => e.getAttribute('data-session')).sort());
    expect(await heldBy('alpha')).toEqual([all!.id, scoped!.id].sort());
    expect(await heldBy('beta')).toEqual([all!.id]);
    const alpha = w.servers.find((s) => s.name === 'alpha')!;
    expect(await section.locator('tr[data-server="alpha"] td').nth(2).textContent()).toBe(String(alpha.pid));
    expect(await section.locator('tr[data-server="alpha"] .state').textContent()).toBe('connected');
    // A server waiting for approval says how to approve it for every session.
    expect(await section.locator('tr[data-server="gated"] .state').textContent()).toBe('pending_approval');
    expect(await section.locator('tr[data-server="gated"] code.fix').textContent()).toBe(`mcp-reconciler approve gated --cwd ${ws.root}`);
    expect(await section.locator('tr[data-server="alpha"] code.fix').count()).toBe(0);

    // The scoped session's client goes away: its hold is released, the page follows without a reload.
    shims[1]!.child.kill('SIGKILL');
    await section.locator(`tr[data-session="${scoped!.id}"]`).waitFor({ state: 'detached', timeout: 30_000 });
    await expect.poll(() => heldBy('alpha'), { timeout: 30_000 }).toEqual([all!.id]);
    expect(await page.locator('.stat[data-kind="sessions"] .n').textContent()).toBe('1');
  });

  it('says so when no daemon runs, and stops on SIGTERM leaving the daemon alone', async () => {
    const daemon = ws.daemonPids();
    expect(daemon).toHaveLength(1);
    ui!.child.kill('SIGTERM');
    await waitFor(() => ui!.child.exitCode !== null, 'status --shared --ui to stop', 30_000);
    expect(ui!.child.exitCode, ui!.stderr()).toBe(0);
    expect(pidAlive(daemon[0]!)).toBe(true);

    // Against no daemon at all: the page says none runs (it never starts one).
    // The last shim goes first, or it would reattach to a fresh daemon.
    shims[0]!.child.kill('SIGKILL');
    await waitFor(() => !shims[0]!.alive(), 'the shim to exit', 10_000);
    await ws.cli(['daemon', '--stop']);
    await waitFor(() => ws.daemonPids().length === 0, 'the daemon to stop', 30_000);
    ui = await startUi(ws);
    await page.goto(ui.url);
    await page.locator('body[data-daemon="down"]').waitFor({ timeout: 30_000 });
    expect(await page.locator('#down').textContent()).toContain('no mcp-reconciler daemon is running');
    expect(ws.daemonPids()).toHaveLength(0);
  });
});
