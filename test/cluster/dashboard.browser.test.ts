/**
 * `status --cluster … --ui`: the cluster's dashboard, against a real
 * `redis-server` and two `serve --http --cluster` replicas with sessions of
 * two principals, in Debian's headless Chromium. The page lists the live
 * replicas with their sessions in all and per principal, and drops a
 * replica that stops, live.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { browserTestSkipReason } from '../helpers/chromium.js';
import { ClusterFixture, dashboardPage, type Replica } from './support.js';

const skipReason = browserTestSkipReason();
if (skipReason) console.warn(`\n[cluster dashboard.browser.test] SKIPPED: ${skipReason}\n`);

describe.skipIf(skipReason !== undefined)('status --cluster --ui: the cluster dashboard', () => {
  const fx = new ClusterFixture();
  const dashboard = dashboardPage(fx);
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
  }, 180_000);

  it('lists the live replicas with their sessions per principal, and drops one that stops', async () => {
    const ui = await dashboard.open();
    const { page, row } = dashboard;
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

    expect(await ui.stop(), ui.stderr).toBe(0);
  }, 180_000);
});
