/**
 * `status --cluster … --ui`: the singleton lease holders on the cluster's
 * dashboard (docs/cluster-singletons.md), against a real `redis-server` and
 * two `serve --http --cluster` replicas, in Debian's headless Chromium: the
 * holder's row names the singleton it holds, and the lease table names the
 * holder, its URL and token; a lease that moves is followed live.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { browserTestSkipReason } from '../helpers/chromium.js';
import { textOf } from '../gateway/support.js';
import { ClusterFixture, dashboardPage, type Replica } from './support.js';

const skipReason = browserTestSkipReason();
if (skipReason) console.warn(`\n[cluster dashboard-leases.browser.test] SKIPPED: ${skipReason}\n`);

describe.skipIf(skipReason !== undefined)('status --cluster --ui: singleton lease holders', () => {
  const fx = new ClusterFixture();
  const dashboard = dashboardPage(fx);
  let a: Replica;
  let b: Replica;
  const env = { MCP_RECONCILER_LEASE_MS: '2000' };

  beforeAll(async () => {
    await fx.startRedis();
    fx.ws.writeUser({ s: { ...fx.ws.server('1'), singleton: true } });
    a = await fx.replica('a', [], env);
    b = await fx.replica('b', [], env);
    const onA = await a.open('?servers=s');
    expect(textOf(await onA.client.callTool({ name: 'mcp__s__echo', arguments: { text: 'x' } }))).toBe('x');
    await a.serve.fromStderr(/(this replica holds the lease \(token \d+\))/, "A's lease", 60_000);
  }, 240_000);

  it("shows the holder on its replica's row and in the lease table, and follows the lease when it moves", async () => {
    const ui = await dashboard.open();
    const { page, row } = dashboard;
    const lease = page.locator('tr[data-singleton="s"]');
    await row(a).waitFor({ timeout: 60_000 });
    await lease.waitFor({ timeout: 60_000 });
    const idA = (await row(a).getAttribute('data-replica'))!;
    expect(await lease.locator('.holder').textContent()).toBe(idA);
    expect(await lease.locator('td:nth-child(3)').textContent()).toBe(a.url);
    const token = Number(await lease.locator('.token').textContent());
    expect(token).toBeGreaterThan(0);
    expect(await row(a).locator('.leases [data-server="s"]').textContent()).toBe(`s · token ${token}`);
    await row(b).waitFor({ timeout: 60_000 });
    expect(await row(b).locator('.leases [data-server]').count()).toBe(0);

    // A stops (it gives the lease up); B's session needs s, so B takes it: the page follows without a reload.
    const onB = await b.open('?servers=s');
    await a.serve.stop();
    expect(textOf(await onB.client.callTool({ name: 'mcp__s__echo', arguments: { text: 'y' } }))).toBe('y');
    await row(b).locator('.leases [data-server="s"]').waitFor({ timeout: 60_000 });
    const idB = (await row(b).getAttribute('data-replica'))!;
    await expect.poll(() => lease.locator('.holder').textContent(), { timeout: 60_000 }).toBe(idB);
    expect(Number(await lease.locator('.token').textContent())).toBeGreaterThan(token);

    expect(await ui.stop(), ui.stderr).toBe(0);
  }, 240_000);
});
