/**
 * `status --cluster … --ui`: the cluster's dashboard, against a real
 * `redis-server` and two `serve --http --cluster` replicas with sessions of
 * two principals, in Debian's headless Chromium. The page lists the live
 * replicas with their sessions in all and per principal, and drops a
 * replica that stops, live.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserTestSkipReason, findChromium } from '../helpers/chromium.js';
import { waitFor } from '../helpers/processes.js';
import { cliMain } from '../gateway/support.js';
import { ClusterFixture, type Replica } from './support.js';

const skipReason = browserTestSkipReason();
if (skipReason) console.warn(`\n[cluster dashboard.browser.test] SKIPPED: ${skipReason}\n`);

const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic', '--no-first-run', '--disable-component-update', '--disable-sync'];

describe.skipIf(skipReason !== undefined)('status --cluster --ui: the cluster dashboard', () => {
  const fx = new ClusterFixture();
  let ui: ChildProcessWithoutNullStreams | undefined;
  let uiErr = '';
  let browser: Browser | undefined;
  let page: Page;
  let a: Replica;
  let b: Replica;

  beforeAll(async () => {
    await fx.startRedis();
    fx.ws.writeUser({ s: fx.ws.server('1') });
    a = await fx.replica('a');
    b = await fx.replica('b');
    await a.open();
    await a.open('', await fx.idp.token('bob'));
    await b.open();
    browser = await chromium.launch({ executablePath: findChromium()!, args: CHROMIUM_ARGS });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    if (ui && ui.exitCode === null && ui.signalCode === null) {
      ui.kill('SIGKILL');
      await waitFor(() => ui!.exitCode !== null || ui!.signalCode !== null, 'the dashboard process to exit', 10_000).catch(() => undefined);
    }
    expect(await fx.stop(), 'processes left behind').toBe(0);
  });

  it('lists the live replicas with their sessions per principal, and drops one that stops', async () => {
    ui = spawn(process.execPath, [cliMain, 'status', ...fx.clusterArgs(), '--ui', '--json', ...fx.ws.args()], { env: fx.ws.env(), cwd: fx.ws.root, stdio: 'pipe' });
    let out = '';
    ui.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    ui.stderr.setEncoding('utf8').on('data', (c: string) => (uiErr += c));
    let url: string | undefined;
    await waitFor(
      () => {
        const line = out.split('\n').find((l) => l.includes('"event":"dashboard"'));
        if (line) url = (JSON.parse(line) as { url: string }).url;
        return url !== undefined || ui!.exitCode !== null;
      },
      'the dashboard URL',
      60_000,
    );
    expect(url, uiErr).toBeDefined();

    await page.goto(url!);
    const row = (r: Replica) => page.locator(`tr:has(td:nth-child(4):text-is("${r.serve.child.pid}"))`);
    await row(a).waitFor({ timeout: 30_000 });
    await row(b).waitFor({ timeout: 30_000 });
    // Sessions per replica and per principal, as the replicas announce them.
    await expect.poll(() => row(a).locator('td.sessions').textContent(), { timeout: 30_000 }).toBe('2');
    expect(await row(a).locator('td:nth-child(2)').textContent()).toBe(a.url);
    expect((await row(a).locator('.principals .sid').allTextContents()).sort()).toEqual(['alice · 1', 'bob · 1']);
    await expect.poll(() => row(b).locator('td.sessions').textContent(), { timeout: 30_000 }).toBe('1');
    expect(await row(b).locator('.principals .sid').allTextContents()).toEqual(['alice · 1']);
    expect(await page.locator('.stat[data-kind="replicas"] .n').textContent()).toBe('2');
    expect(await page.locator('#where').textContent()).toBe(`workspace ${fx.workspaceId} · Redis ${fx.redis.socket}`);

    // B stops: it leaves the list, and the page follows without a reload.
    await b.serve.stop();
    await row(b).waitFor({ state: 'detached', timeout: 30_000 });
    expect(await page.locator('.stat[data-kind="replicas"] .n').textContent()).toBe('1');
    await row(a).waitFor();

    ui.kill('SIGTERM');
    await waitFor(() => ui!.exitCode !== null, 'status --cluster --ui to stop', 30_000);
    expect(ui.exitCode, uiErr).toBe(0);
  }, 180_000);
});
