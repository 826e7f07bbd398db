/**
 * One tool with an invalid definition must not take a server's other tools
 * down: the valid ones register, each invalid one is skipped with a warning
 * naming it and why (status, `why`, the log), and the listing cache keeps
 * the same picture. The fixture answers at the JSON-RPC level, so nothing
 * between it and the client cleans its listing up.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stdioFixtureConfig } from '../helpers/fixtures.js';
import { cli, firstText, Harness, row, toolNames, waitState } from './support.js';

const h = new Harness();
afterAll(() => h.cleanup());

const INVALID = ['no_schema', 'string_schema', 'tools[3]'];

describe('a tools/list with invalid definitions among valid ones', () => {
  it('registers the valid tools and skips each invalid one, naming it and why', async () => {
    const warnings: string[] = [];
    const { c } = await h.running({ mixed: stdioFixtureConfig('invalid-tool-server') }, { logger: { warn: (m: string) => warnings.push(m) } });

    const r = row(c, 'mixed');
    expect(r).toMatchObject({ state: 'connected', reason: undefined, lastError: undefined });
    expect(toolNames(c)).toEqual(['mcp__mixed__ok_one', 'mcp__mixed__ok_two']);
    expect(firstText(await c.callTool('mcp__mixed__ok_two', { x: 1 }))).toBe('ok_two');

    expect(r.skippedTools.map((t) => [t.rawName, t.invalid])).toEqual(INVALID.map((n) => [n, true]));
    const reason = (name: string) => r.skippedTools.find((t) => t.rawName === name)!.reason;
    expect(reason('no_schema')).toMatch(/^its definition is invalid \(inputSchema: .*\)/);
    expect(reason('string_schema')).toMatch(/inputSchema\.type: /);
    expect(reason('tools[3]')).toMatch(/name: /);
    expect(reason('no_schema')).toContain('"excludeTools": ["no_schema"]');

    for (const name of INVALID) expect(warnings.some((w) => w.includes(`MCP server "mixed": tool "${name}" is not registered: its definition is invalid`))).toBe(true);
    expect(c.toolUnavailableMessage('mcp__mixed__no_schema')).toMatch(/^Tool mcp__mixed__no_schema of MCP server "mixed" is not registered: its definition is invalid \(inputSchema: /);
  });

  it('excludeTools hides an invalid tool like any other: no warning for it', async () => {
    const { c } = await h.running({ mixed: { ...stdioFixtureConfig('invalid-tool-server'), excludeTools: ['no_schema'] } });
    const skipped = row(c, 'mixed').skippedTools;
    expect(skipped.find((t) => t.rawName === 'no_schema')).toEqual({ rawName: 'no_schema', reason: 'listed in excludeTools' });
    expect(skipped.filter((t) => t.invalid).map((t) => t.rawName)).toEqual(['string_schema', 'tools[3]']);
  });

  it('the listing cache keeps the valid tools and the skipped ones: a lazy start shows the same picture without a process', async () => {
    const ws = h.workspace();
    const cache = join(ws.root, '.listing-cache');
    const config = stdioFixtureConfig('invalid-tool-server');
    const first = h.controller(ws, { listingCache: cache });
    await first.addRuntimeServer('mixed', config);
    await first.start();
    const live = row(first, 'mixed');
    await first.dispose();

    const second = h.controller(ws, { listingCache: cache, startup: 'lazy' });
    await second.addRuntimeServer('mixed', config);
    await second.start();
    await waitState(second, 'mixed', 'dormant');
    const dormant = row(second, 'mixed');
    expect(dormant.pid).toBeUndefined();
    expect(dormant.cached).toBe(true);
    expect(dormant.tools).toEqual(live.tools);
    expect(dormant.skippedTools).toEqual(live.skippedTools);
    // The first call wakes it, and the live listing agrees with the cache.
    expect(firstText(await second.callTool('mcp__mixed__ok_one', {}))).toBe('ok_one');
    expect(row(second, 'mixed').skippedTools).toEqual(live.skippedTools);
  });

  it('`status` warns about each skipped tool and `why mcp__server__tool` says why it is missing', async () => {
    const ws = h.workspace();
    ws.writeUserSettings({ mcpServers: { mixed: stdioFixtureConfig('invalid-tool-server') } });
    const args = ['--cwd', ws.root, '--approvals', ws.approvals];
    const status = await cli(['status', ...args], ws.env, ws.root);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/^mixed +user +connected +2 /m);
    for (const name of INVALID) expect(status.stderr).toContain(`warning: MCP server "mixed": tool "${name}" is not registered: its definition is invalid`);

    const why = await cli(['why', 'mcp__mixed__string_schema', ...args], ws.env, ws.root);
    expect(why.code).toBe(0);
    expect(why.stdout).toMatch(/Tool mcp__mixed__string_schema of MCP server "mixed" is not registered: its definition is invalid \(inputSchema\.type: /);
  });
});
