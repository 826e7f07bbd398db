/**
 * Tool usage counts (docs/context-budget.md): kept across runs per workspace,
 * written without blocking the event loop, the newest counts last.
 */
import { mkdtempSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ToolUsage } from '../../src/search/usage.js';
import { stdioFixtureConfig } from '../helpers/fixtures.js';
import { Harness } from '../controller/support.js';

const h = new Harness();
afterAll(() => h.cleanup());

describe('tool usage counts', () => {
  it('a flush writes asynchronously; queued flushes end with the newest counts, which a new instance reads', async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-usage-')));
    const cache = join(root, 'cache', 'listings');
    const errors: unknown[] = [];
    const usage = new ToolUsage(cache, root, (err) => errors.push(err));
    usage.record('mcp__a__one');
    const first = usage.flush();
    expect(first).toBeInstanceOf(Promise);
    usage.record('mcp__a__one');
    usage.record('mcp__b__two');
    await usage.flush();
    await first;
    expect(errors).toEqual([]);
    const again = new ToolUsage(cache, root);
    expect(Object.fromEntries(again.snapshot())).toEqual({ mcp__a__one: 2, mcp__b__two: 1 });
    const dir = join(root, 'cache', 'tool-usage');
    expect(readdirSync(dir)).toHaveLength(1);
    expect(JSON.parse(readFileSync(join(dir, readdirSync(dir)[0]!), 'utf8'))).toEqual({ version: 1, counts: { mcp__a__one: 2, mcp__b__two: 1 } });
  });

  it("a controller's calls are counted, written on dispose and read by the next controller of the workspace", async () => {
    const ws = h.workspace();
    const listingCache = join(ws.home, 'listings');
    const c = h.controller(ws, { listingCache });
    await c.addRuntimeServer('basic', stdioFixtureConfig('basic-server'));
    await c.start();
    const echo = c.tools().find((t) => t.rawName === 'echo')!;
    await c.callTool(echo.name, { text: 'a' });
    await c.callTool(echo.name, { text: 'b' });
    await c.dispose();
    const next = h.controller(ws, { listingCache });
    await next.start();
    expect(next.toolUsage().get(echo.name)).toBe(2);
  });
});
