/**
 * Claude Code's own enable lists (docs/manage.md) under the claude-code
 * preset: `projects[<root>].disabledMcpServers` in `~/.claude.json` switches
 * any server off, `disabledMcpjsonServers` (there or in a `.claude/settings*.json`
 * file) a `.mcp.json` server; `why` names the file. `setEnabled` writes
 * Claude Code's field as a minimal edit, and enabling gives the file back.
 * Real fixture servers over stdio.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stdioFixtureConfig } from '../helpers/fixtures.js';
import { Harness, row, waitState } from './support.js';

const h = new Harness();
afterAll(() => h.cleanup());

describe('claude-code enable lists', () => {
  it('are honoured with why naming the file; disable/enable write Claude Code’s own field and give the file back', async () => {
    const ws = h.workspace('mcp-claude-sw-');
    const server = stdioFixtureConfig('basic-server');
    const claudeJson = join(ws.home, '.claude.json');
    const original = `${JSON.stringify(
      {
        numStartups: 3,
        mcpServers: { u: server, keep: server },
        projects: { [ws.root]: { allowedTools: [], mcpServers: { l: server }, disabledMcpServers: ['u'] } },
      },
      null,
      2,
    )}\n`;
    writeFileSync(claudeJson, original);
    writeFileSync(join(ws.root, '.mcp.json'), JSON.stringify({ mcpServers: { p1: server, p2: server } }));
    mkdirSync(join(ws.root, '.claude'));
    const local = join(ws.root, '.claude', 'settings.local.json');
    writeFileSync(local, '{\n  "disabledMcpjsonServers": ["p1"]\n}\n');
    // Only `.mcp.json` servers are covered by disabledMcpjsonServers: `l` stays on.
    writeFileSync(join(ws.root, '.claude', 'settings.json'), '{ "disabledMcpjsonServers": ["l"] }\n');

    const c = h.controller(ws, { preset: 'claude-code' });
    await c.start();
    await waitState(c, 'l', 'connected');
    await waitState(c, 'keep', 'connected');
    const projectKey = `(["projects"][${JSON.stringify(ws.root)}])`;
    expect(row(c, 'u')).toMatchObject({ state: 'disabled', disabledBy: `disabledMcpServers in ${claudeJson} ${projectKey}` });
    expect(row(c, 'p1')).toMatchObject({ state: 'disabled', disabledBy: `disabledMcpjsonServers in ${local}` });
    expect(row(c, 'p2').state).not.toBe('disabled');
    expect(c.toolUnavailableMessage('mcp__u__echo')).toContain(`MCP server "u" is disabled by disabledMcpServers in ${claudeJson}`);

    // Off: Claude Code's field in projects[<root>], as its /mcp toggle writes it.
    const off = await c.setEnabled('keep', false);
    expect(off).toMatchObject({ where: 'host', file: claudeJson, field: 'disabledMcpServers', backup: `${claudeJson}.bak` });
    expect((JSON.parse(readFileSync(claudeJson, 'utf8')) as { projects: Record<string, { disabledMcpServers: string[] }> }).projects[ws.root]!.disabledMcpServers).toEqual(['u', 'keep']);
    await waitState(c, 'keep', 'disabled');
    expect(row(c, 'keep').disabledBy).toBe(`disabledMcpServers in ${claudeJson} ${projectKey}`);
    // On: out of the list again; the file is as it was.
    await c.setEnabled('keep', true);
    await waitState(c, 'keep', 'connected');
    expect(readFileSync(claudeJson, 'utf8')).toBe(original);

    // A .mcp.json server goes into disabledMcpjsonServers; enabling p1 takes it out of settings.local.json.
    expect(await c.setEnabled('p2', false)).toMatchObject({ where: 'host', field: 'disabledMcpjsonServers' });
    expect(row(c, 'p2')).toMatchObject({ state: 'disabled', disabledBy: `disabledMcpjsonServers in ${claudeJson} ${projectKey}` });
    await c.setEnabled('p2', true);
    expect(readFileSync(claudeJson, 'utf8')).toBe(original);
    expect(await c.setEnabled('p1', true)).toMatchObject({ where: 'host', file: local, field: 'disabledMcpjsonServers' });
    expect(JSON.parse(readFileSync(local, 'utf8'))).toEqual({});
    expect(row(c, 'p1').state).not.toBe('disabled');
    expect(row(c, 'p1').disabledBy).toBeUndefined();
  });
});

describe('claude-code enable lists while watching', () => {
  it('a new .claude/settings.local.json is applied by hot reload', async () => {
    const ws = h.workspace('mcp-claude-sw-');
    writeFileSync(join(ws.home, '.claude.json'), JSON.stringify({ projects: { [ws.root]: { allowedTools: [] } } }, null, 2));
    writeFileSync(join(ws.root, '.mcp.json'), JSON.stringify({ mcpServers: { p: stdioFixtureConfig('basic-server') } }));
    const c = h.controller(ws, { preset: 'claude-code', watch: true });
    await c.start();
    const before = row(c, 'p').state;
    expect(before).not.toBe('disabled');
    mkdirSync(join(ws.root, '.claude'));
    const local = join(ws.root, '.claude', 'settings.local.json');
    writeFileSync(local, '{ "disabledMcpjsonServers": ["p"] }\n');
    await waitState(c, 'p', 'disabled');
    expect(row(c, 'p').disabledBy).toBe(`disabledMcpjsonServers in ${local}`);
  });
});
