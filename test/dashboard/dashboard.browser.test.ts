/**
 * The dashboard in Debian's headless Chromium, against a real controller on a
 * temp workspace with real fixture servers: user-scope servers that connect,
 * fail, or are disabled, and project `.mcp.json` servers that wait for
 * approval. Set UPDATE_SCREENSHOT=1 to rewrite docs/dashboard.png.
 */
import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMcpController, type McpController } from '../../src/controller/controller.js';
import type { ServerStateName } from '../../src/controller/types.js';
import { startDashboard, type Dashboard } from '../../src/dashboard/server.js';
import { fixturePath, repoRoot } from '../helpers/fixtures.js';
import { pidAlive, waitFor } from '../helpers/processes.js';
import { rawRequest, type RawReply } from '../helpers/http.js';
import { browserTestSkipReason, launchChromium } from '../helpers/chromium.js';
import { startOAuthFixture } from '../fixtures/oauth-fixture.js';

const skipReason = browserTestSkipReason();
if (skipReason) console.warn(`\n[dashboard.browser.test] SKIPPED: ${skipReason}\n`);

/** The chart node the page must highlight for a public state (the machine nests the live states under `live`). */
function chartNodeOf(state: ServerStateName): string {
  // A connected server with no call running is in `connected.idle` (SPEC §12: the idle timer lives there).
  if (state === 'connected') return 'server.live.connected.idle';
  if (state === 'connecting' || state === 'dormant') return `server.live.${state}`;
  if (state === 'reconnecting') return 'server.live.reconnecting';
  return `server.${state}`;
}

let tmp: string;
let userFile: string;
let controller: McpController;
let dashboard: Dashboard;
let browser: Browser;
let page: Page;
const pageRequests: string[] = [];

beforeAll(async () => {
  if (skipReason) return;
  tmp = await realpath(await mkdtemp(join(tmpdir(), 'mcpr-dashboard-')));
  const root = join(tmp, 'workspace');
  await mkdir(root);
  const basic = fixturePath('basic-server');
  const node = process.execPath;
  userFile = join(tmp, 'user-settings.json');
  await writeFile(
    userFile,
    JSON.stringify({
      mcpServers: {
        notes: { command: node, args: [basic], env: { TOOLS_VERSION: '1', TOOL_COUNT: '2' }, description: 'Personal notes' },
        scratch: { command: node, args: [basic], disabled: true, description: 'Scratch server, switched off' },
        flaky: { command: node, args: ['-e', 'process.exit(3)'], description: 'Exits at once, so the supervisor gives up' },
      },
    }),
  );
  await writeFile(
    join(root, '.mcp.json'),
    JSON.stringify({
      mcpServers: {
        docs: { command: node, args: [basic], env: { TOOLS_VERSION: '2' }, description: 'Project documentation search (checked into the repo)' },
        issues: { command: node, args: [basic], env: { TOOLS_VERSION: '3' }, description: 'Issue tracker for this project' },
      },
    }),
  );
  controller = createMcpController({
    cwd: root,
    userConfigPath: userFile,
    approvals: join(tmp, 'approvals.json'),
    // Server logs and the workspace state file live under the temp dir too.
    env: { ...process.env, HOME: tmp, XDG_CONFIG_HOME: tmp, XDG_STATE_HOME: join(tmp, 'state') },
    watch: false,
    killGraceMs: 500,
    readyTimeoutMs: 30_000,
    backoff: { initialMs: 20, maxMs: 40, attempts: 2 },
  });
  await controller.start();
  dashboard = await startDashboard(controller);
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1440, height: 1000 }, deviceScaleFactor: 1 });
  page.on('request', (r) => pageRequests.push(`${r.method()} ${new URL(r.url()).pathname}`));
});

afterAll(async () => {
  const pids = controller ? controller.pids() : [];
  await dashboard?.close();
  await browser?.close();
  await controller?.dispose();
  await waitFor(() => pids.every((pid) => !pidAlive(pid)), 'every server process to exit', 10_000);
  expect(pids.filter(pidAlive)).toEqual([]);
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

/** A raw HTTP request to the dashboard's `opts.path`, so the Host header can be anything. */
function raw(opts: { method?: string; path: string; headers?: Record<string, string>; body?: string }): Promise<RawReply> {
  return rawRequest(new URL(opts.path, dashboard.url).href, opts);
}

async function currentNode(server: string): Promise<string[]> {
  return page.locator(`article.card[data-server="${server}"] .chart .current`).evaluateAll((els) => els.map((e) => e.getAttribute('data-state') ?? ''));
}

describe.skipIf(skipReason !== undefined)('dashboard page', () => {
  it('draws every server as its state chart with the current state highlighted', async () => {
    await waitFor(() => controller.status().find((s) => s.name === 'flaky')?.state === 'failed', 'flaky to give up');
    await page.goto(dashboard.url);
    const rows = controller.status();
    expect(rows.map((r) => [r.name, r.state])).toEqual([
      ['docs', 'pending_approval'],
      ['flaky', 'failed'],
      ['issues', 'pending_approval'],
      ['notes', 'connected'],
      ['scratch', 'disabled'],
    ]);
    for (const row of rows) {
      const card = page.locator(`article.card[data-server="${row.name}"]`);
      await card.waitFor();
      expect(await card.getAttribute('data-state')).toBe(row.state);
      // Exactly one highlighted node, the one for the server's state.
      expect(await currentNode(row.name)).toEqual([chartNodeOf(row.state as ServerStateName)]);
    }
    // The enclosing compound states are marked too, and the tools are listed.
    expect(await page.locator('article.card[data-server="notes"] .chart .active').evaluateAll((els) => els.map((e) => e.getAttribute('data-state')))).toEqual([
      'server.live',
      'server.live.connected',
    ]);
    const notesTools = await page.locator('article.card[data-server="notes"] .tool').allTextContents();
    expect(notesTools.sort()).toEqual(controller.status().find((s) => s.name === 'notes')!.tools.slice().sort());
    expect(await page.locator('article.card[data-server="flaky"] .error').first().textContent()).toContain('last error');
    expect(await page.locator('article.card[data-server="flaky"] button[data-action="reconnect"]').count()).toBe(1);
    // Approve buttons only where a decision is pending.
    expect(await page.locator('article.card[data-server="docs"] button[data-action="approve"]').count()).toBe(1);
    expect(await page.locator('article.card[data-server="notes"] button').count()).toBe(0);
    // The chart was inlined once and cloned per server; ids stay unique.
    const ids = await page.locator('body [id]').evaluateAll((els) => els.map((e) => e.id));
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('approving a pending server from the page connects it, live, without polling', async () => {
    const before = pageRequests.length;
    await page.locator('article.card[data-server="docs"] button[data-action="approve"]').click();
    await page.locator('article.card[data-server="docs"][data-state="connected"]').waitFor({ timeout: 30_000 });
    expect(await currentNode('docs')).toEqual(['server.live.connected.idle']);
    const docs = controller.status().find((s) => s.name === 'docs')!;
    expect(docs.state).toBe('connected');
    expect(docs.tools.length).toBeGreaterThan(0);
    await expect.poll(() => page.locator('article.card[data-server="docs"] .tool').count()).toBe(docs.tools.length);
    // The feed shows the action and the transitions it caused.
    const feed = await page.locator('#feed li').allTextContents();
    expect(feed.some((t) => t.includes('docs') && t.includes('approved from the dashboard'))).toBe(true);
    expect(feed.some((t) => t.includes('docs') && t.includes('→ connected'))).toBe(true);
    // Updates came over the one SSE stream: the only request since is the POST.
    expect(pageRequests.slice(before)).toEqual(['POST /api/approve']);
    // The other pending server is untouched.
    expect(controller.status().find((s) => s.name === 'issues')!.state).toBe('pending_approval');

    if (process.env.UPDATE_SCREENSHOT === '1') {
      // The first three cards (connected, failed, pending) and the feed tell the story.
      const box = await page.locator('article.card[data-server="issues"]').boundingBox();
      await page.screenshot({ path: resolve(repoRoot, 'docs/dashboard.png'), clip: { x: 0, y: 0, width: 1440, height: Math.ceil(box!.y + box!.height + 12) }, fullPage: true });
    }
  });

  it('rejects from the page too', async () => {
    await page.locator('article.card[data-server="issues"] button[data-action="reject"]').click();
    await page.locator('article.card[data-server="issues"][data-state="rejected"]').waitFor({ timeout: 30_000 });
    expect(await currentNode('issues')).toEqual(['server.rejected']);
    expect(await page.locator('article.card[data-server="issues"] button[data-action="approve"]').count()).toBe(0);
  });
});

describe.skipIf(skipReason !== undefined)('dashboard sign-in', () => {
  it('a server in needs_auth gets a Sign in button that opens the sign-in page; the card turns connected', async () => {
    const fixture = await startOAuthFixture();
    try {
      await controller.addRuntimeServer('remote', { type: 'http', url: fixture.url });
      const card = page.locator('article.card[data-server="remote"][data-state="needs_auth"]');
      await card.waitFor({ timeout: 30_000 });
      // The page opens the authorization URL in a new tab; the fixture redirects it back to the loopback receiver.
      const popup = page.waitForEvent('popup', { timeout: 30_000 });
      await card.locator('button[data-action="sign-in"]').click();
      await (await popup).waitForLoadState();
      await page.locator('article.card[data-server="remote"][data-state="connected"]').waitFor({ timeout: 30_000 });
      // Connected: the card's actions (the button, the fallback link) are gone with the need for them.
      expect(await page.locator('article.card[data-server="remote"] [data-action^="sign-in"]').count()).toBe(0);
      expect(pageRequests).toContain('POST /api/auth');
      expect(fixture.counts.authorization_code).toBe(1);
      expect(controller.status().find((r) => r.name === 'remote')!.tools.length).toBeGreaterThan(0);
    } finally {
      await controller.removeRuntimeServer('remote');
      await fixture.close();
    }
  });
});

describe.skipIf(skipReason !== undefined)('dashboard switch', () => {
  const notes = 'article.card[data-server="notes"]';
  const notesTools = () => controller.tools().filter((t) => t.name.startsWith('mcp__notes__')).length;
  const notesEntry = async () => (JSON.parse(await readFile(userFile, 'utf8')) as { mcpServers: Record<string, { disabled?: boolean }> }).mcpServers.notes!;

  it('switching a server off takes it out of the registry, kept in its file; the card says who disabled it; on again brings it back', async () => {
    await page.locator(`${notes}[data-state="connected"]`).waitFor({ timeout: 30_000 });
    expect(notesTools()).toBeGreaterThan(0);
    expect(await page.locator(`${notes} input[data-action="enable"]`).isChecked()).toBe(true);

    await page.locator(`${notes} label.switch`).click();
    await page.locator(`${notes}[data-state="disabled"]`).waitFor({ timeout: 30_000 });
    expect(notesTools()).toBe(0);
    expect(controller.status().find((s) => s.name === 'notes')!.state).toBe('disabled');
    // Persisted in the host's own field of the file the server comes from (docs/manage.md).
    expect((await notesEntry()).disabled).toBe(true);
    expect(await page.locator(`${notes} input[data-action="enable"]`).isChecked()).toBe(false);
    expect(await page.locator(`${notes} .switch-text`).textContent()).toBe(`off · disabled by ${userFile}`);
    expect(await page.locator(`${notes} .facts .reason`).textContent()).toBe(`is disabled by ${userFile}`);

    await page.locator(`${notes} label.switch`).click();
    await page.locator(`${notes}[data-state="connected"]`).waitFor({ timeout: 30_000 });
    await waitFor(() => notesTools() > 0, 'the tools of notes to be registered again', 30_000);
    expect((await notesEntry()).disabled).toBeUndefined();
    expect(await page.locator(`${notes} input[data-action="enable"]`).isChecked()).toBe(true);
    expect(await page.locator(`${notes} .switch-text`).textContent()).toBe('on');
    const feed = await page.locator('#feed li').allTextContents();
    expect(feed.some((t) => t.includes('notes') && t.includes(`server disabled from the dashboard (kept in ${userFile})`))).toBe(true);
    expect(pageRequests.filter((r) => r === 'POST /api/enable')).toHaveLength(2);
  });

  it("a tool's own switch takes only that tool out of the registry, kept in the file; switched on again it is back", async () => {
    await page.locator(`${notes}[data-state="connected"]`).waitFor({ timeout: 30_000 });
    const before = controller.tools().filter((t) => t.name.startsWith('mcp__notes__'));
    expect(before.length).toBeGreaterThan(1);
    const [off, ...kept] = before;
    await page.locator(`${notes} input[data-action="tool-enable"][data-tool="${off!.name}"]`).click();
    await waitFor(() => !controller.tools().some((t) => t.name === off!.name), `${off!.name} to leave the registry`, 30_000);
    expect(controller.tools().filter((t) => t.name.startsWith('mcp__notes__')).map((t) => t.name)).toEqual(kept.map((t) => t.name));
    expect(controller.status().find((s) => s.name === 'notes')!.state).toBe('connected');
    expect((await notesEntry()) as { excludeTools?: string[] }).toMatchObject({ excludeTools: [off!.rawName] });
    // The card lists it as skipped, saying who switched it off, with its switch to bring it back.
    const skipped = page.locator(`${notes} .tool.muted:has(input[data-tool="${off!.rawName}"])`);
    await skipped.waitFor({ timeout: 30_000 });
    expect(await skipped.getAttribute('title')).toContain(`disabled by ${userFile}`);
    expect(await skipped.locator('input').isChecked()).toBe(false);

    await skipped.locator('input').click();
    await waitFor(() => controller.tools().some((t) => t.name === off!.name), `${off!.name} to be registered again`, 30_000);
    expect(((await notesEntry()) as { excludeTools?: string[] }).excludeTools).toBeUndefined();
    await page.locator(`${notes} input[data-action="tool-enable"][data-tool="${off!.name}"]`).waitFor({ timeout: 30_000 });
    expect(await page.locator(`${notes} input[data-action="tool-enable"][data-tool="${off!.name}"]`).isChecked()).toBe(true);
  });

  it('refuses a cross-origin switch even with the token, and changes nothing', async () => {
    const r = await raw({
      method: 'POST',
      path: '/api/enable',
      headers: { 'content-type': 'application/json', host: new URL(dashboard.url).host, 'x-dashboard-token': dashboard.token, origin: 'http://evil.example' },
      body: JSON.stringify({ server: 'notes', on: false }),
    });
    expect(r.status).toBe(403);
    const noToken = await raw({ method: 'POST', path: '/api/enable', headers: { 'content-type': 'application/json', host: new URL(dashboard.url).host }, body: JSON.stringify({ server: 'notes', on: false }) });
    expect(noToken.status).toBe(403);
    expect(controller.status().find((s) => s.name === 'notes')!.state).toBe('connected');
    expect((await notesEntry()).disabled).toBeUndefined();
  });
});

describe.skipIf(skipReason !== undefined)('dashboard log tail', () => {
  // Markup, an event handler and a terminal escape: all must be shown as text.
  const hostile = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"><b>bold</b> \u001b[31mred';
  const shown = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"><b>bold</b> \\u001b[31mred';

  it("a server's stderr line appears on its card, live, as text", async () => {
    await controller.addRuntimeServer('logger', { command: process.execPath, args: [fixturePath('log-server')] });
    const card = page.locator('article.card[data-server="logger"]');
    await page.locator('article.card[data-server="logger"][data-state="connected"]').waitFor({ timeout: 30_000 });
    // The supervisor's line about the connect is in the same stream.
    await expect.poll(() => card.locator('.log-lines li[data-source="supervisor"]').count(), { timeout: 30_000 }).toBeGreaterThan(0);
    await controller.callTool('mcp__logger__say', { text: hostile });
    const stderrLine = card.locator('.log-lines li[data-source="stderr"] .text');
    await expect.poll(() => stderrLine.allTextContents(), { timeout: 30_000 }).toContain(shown);
    // The MCP log message the tool sent too.
    await expect.poll(() => card.locator('.log-lines li[data-source="mcp"] .text').allTextContents(), { timeout: 30_000 }).toContain(shown);
    expect(await card.locator('.log-lines img, .log-lines b, .log-lines script').count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as { __pwned?: unknown }).__pwned)).toBeUndefined();
  });

  it('clicking opens the whole log as a page of text: no markup from stderr, no script', async () => {
    const popup = page.waitForEvent('popup', { timeout: 30_000 });
    await page.locator('article.card[data-server="logger"] a[data-action="full-log"]').click();
    const full = await popup;
    try {
      await full.waitForLoadState();
      expect(new URL(full.url()).pathname).toBe('/log');
      expect(await full.locator('h1').textContent()).toBe('Log of “logger”');
      const texts = await full.locator('#log li .text').allTextContents();
      expect(texts.filter((t) => t === shown)).toHaveLength(2); // stderr and the MCP log message
      expect(await full.locator('#log li[data-source="supervisor"]').count()).toBeGreaterThan(0);
      expect(await full.locator('#log img, #log b, script').count()).toBe(0);
      expect(await full.evaluate(() => (globalThis as { __pwned?: unknown }).__pwned)).toBeUndefined();
    } finally {
      await full.close();
    }
    // The page needs the token like every other one.
    const host = new URL(dashboard.url).host;
    expect((await raw({ path: '/log?server=logger', headers: { host } })).status).toBe(403);
    expect((await raw({ path: `/log?server=nobody&token=${dashboard.token}`, headers: { host } })).status).toBe(404);
  });

  afterAll(async () => {
    if (controller.status().some((s) => s.name === 'logger')) await controller.removeRuntimeServer('logger');
  });
});

describe.skipIf(skipReason !== undefined)('dashboard request guards', () => {
  const json = { 'content-type': 'application/json' };

  it('refuses a POST without the token, and changes nothing', async () => {
    const r = await raw({ method: 'POST', path: '/api/approve', headers: { ...json, host: new URL(dashboard.url).host }, body: JSON.stringify({ server: 'issues' }) });
    expect(r.status).toBe(403);
    expect(controller.status().find((s) => s.name === 'issues')!.state).toBe('rejected');
  });

  it('refuses a cross-origin POST even with the token', async () => {
    const r = await raw({
      method: 'POST',
      path: '/api/approve',
      headers: { ...json, host: new URL(dashboard.url).host, 'x-dashboard-token': dashboard.token, origin: 'http://evil.example' },
      body: JSON.stringify({ server: 'issues' }),
    });
    expect(r.status).toBe(403);
    expect(controller.status().find((s) => s.name === 'issues')!.state).toBe('rejected');
  });

  it('refuses a non-loopback Host header (DNS rebinding) even with the token', async () => {
    const { port } = new URL(dashboard.url);
    for (const path of [`/?token=${dashboard.token}`, `/api/status?token=${dashboard.token}`, `/events?token=${dashboard.token}`]) {
      const r = await raw({ path, headers: { host: `evil.example:${port}` } });
      expect(r.status).toBe(403);
      expect(r.body).not.toContain('issues');
    }
  });

  it('serves the status and the page only with the token', async () => {
    const host = new URL(dashboard.url).host;
    expect((await raw({ path: '/api/status', headers: { host } })).status).toBe(403);
    expect((await raw({ path: '/', headers: { host } })).status).toBe(403);
    const ok = await raw({ path: `/api/status?token=${dashboard.token}`, headers: { host } });
    expect(ok.status).toBe(200);
    const view = JSON.parse(ok.body) as { servers: { name: string; state: string }[] };
    expect(view.servers.map((s) => s.name)).toEqual(controller.status().map((s) => s.name));
  });
});
