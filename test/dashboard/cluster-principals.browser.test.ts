/**
 * The cluster dashboard's table of principals' own controllers
 * (docs/cluster-principals.md), in Debian's headless Chromium. The page draws
 * what the replicas announce; the announcements here are given directly
 * (test/cluster/principals.test.ts has real replicas announce them), so this
 * holds the drawing: one row per principal and replica, each server with its
 * state, followed live as the announcements change.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startClusterDashboard, type ClusterOverview } from '../../src/dashboard/cluster-dashboard.js';
import type { Dashboard } from '../../src/dashboard/http.js';
import { browserTestSkipReason, launchChromium } from '../helpers/chromium.js';

const skipReason = browserTestSkipReason();
if (skipReason) console.warn(`\n[cluster-principals.browser.test] SKIPPED: ${skipReason}\n`);

const ALICE = `p-${'a'.repeat(32)}`;
const BOB = `p-${'b'.repeat(32)}`;
const now = new Date().toISOString();

function replica(id: string, controllers?: ClusterOverview['replicas'][number]['controllers']): ClusterOverview['replicas'][number] {
  return { id, url: `http://127.0.0.1:1/${id}`, host: 'h', pid: 1, sessions: 1, principals: {}, startedAt: now, at: now, ...(controllers ? { controllers } : {}) };
}

describe.skipIf(skipReason !== undefined)('status --cluster --ui: principals\' own controllers', () => {
  let overview: ClusterOverview;
  let dashboard: Dashboard;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    overview = {
      workspaceId: 'team',
      redis: '/run/redis.sock',
      replicas: [
        replica('r1', { [ALICE]: { sessions: 2, servers: { linear: 'connected', mail: 'needs_auth' } }, [BOB]: { sessions: 1, servers: { linear: 'needs_auth' } } }),
        replica('r2', { [ALICE]: { sessions: 1, servers: { linear: 'connecting' } } }),
      ],
    };
    dashboard = await startClusterDashboard(async () => overview, { pollMs: 100 });
    browser = await launchChromium();
    page = await browser.newPage();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await dashboard?.close();
  });

  it('draws one row per principal and replica, each server with its state, and follows the announcements', async () => {
    await page.goto(dashboard.url);
    const row = (principal: string, replicaId: string) => page.locator(`#principals tr[data-principal="${principal}"][data-replica="${replicaId}"]`);
    await row(ALICE, 'r1').waitFor({ timeout: 30_000 });
    expect(await page.locator('#principals h2').textContent()).toBe('3 principal controllers');
    expect(await row(ALICE, 'r1').locator('.sessions').textContent()).toBe('2');
    expect(await row(ALICE, 'r1').locator('[data-server]').allTextContents()).toEqual(['linear · connected', 'mail · needs_auth']);
    expect(await row(BOB, 'r1').locator('[data-server="linear"]').getAttribute('data-state')).toBe('needs_auth');
    expect(await row(ALICE, 'r2').locator('[data-server="linear"]').getAttribute('data-state')).toBe('connecting');

    // Bob signed in; r2's controller of alice was disposed after its idle timeout.
    overview = { ...overview, replicas: [replica('r1', { [ALICE]: { sessions: 2, servers: { linear: 'connected', mail: 'needs_auth' } }, [BOB]: { sessions: 1, servers: { linear: 'connected' } } }), replica('r2')] };
    await expect.poll(() => row(BOB, 'r1').locator('[data-server="linear"]').getAttribute('data-state'), { timeout: 30_000 }).toBe('connected');
    await expect.poll(() => row(ALICE, 'r2').count(), { timeout: 30_000 }).toBe(0);
    expect(await page.locator('#principals h2').textContent()).toBe('2 principal controllers');

    // No controller anywhere: no table.
    overview = { ...overview, replicas: [replica('r1'), replica('r2')] };
    await expect.poll(() => page.locator('#principals').count(), { timeout: 30_000 }).toBe(0);
    expect(await page.locator('tr[data-replica="r1"]').count()).toBe(1);
  }, 120_000);
});
