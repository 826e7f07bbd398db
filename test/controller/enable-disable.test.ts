/**
 * `setEnabled`: a server or a tool switched off at runtime leaves the
 * registry at once and cannot be called; the switch is persisted in the
 * host's own field where the host has one, else in the workspace state file,
 * and `why` says who disabled it. Real fixture servers over stdio.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { defaultWorkspaceStatePath } from '../../src/config/workspace-state.js';
import { stdioFixtureConfig } from '../helpers/fixtures.js';
import { waitFor } from '../helpers/processes.js';
import { Harness, row, waitState } from './support.js';

const h = new Harness();
afterAll(() => h.cleanup());

const registered = (c: { tools(): { name: string }[] }) => c.tools().map((t) => t.name);

describe('setEnabled in a host file with its own field (the default preset: excludeTools, disabled)', () => {
  it('a disabled tool leaves at once, is not callable and why names the file; enabling gives the file back byte for byte', async () => {
    const ws = h.workspace();
    const file = ws.writeUserSettings({ mcpServers: { files: stdioFixtureConfig('basic-server') } });
    const original = readFileSync(file, 'utf8');
    const c = h.controller(ws);
    await c.start();
    expect(registered(c)).toContain('mcp__files__echo');
    const changes: { removed: string[]; added: string[] }[] = [];
    c.on('tools-changed', (e) => changes.push(e));

    const off = await c.setEnabled('files', false, { tools: ['mcp__files__echo'] });
    expect(off).toMatchObject({ server: 'files', enabled: false, tools: ['echo'], where: 'host', file, field: 'excludeTools' });
    await waitFor(() => !registered(c).includes('mcp__files__echo'), 'echo to leave the registry');
    expect(changes).toContainEqual(expect.objectContaining({ removed: ['mcp__files__echo'] }));
    expect(JSON.parse(readFileSync(file, 'utf8')).mcpServers.files.excludeTools).toEqual(['echo']);
    await expect(c.callTool('mcp__files__echo', { text: 'hi' })).rejects.toMatchObject({
      code: 'unknown_tool',
      message: expect.stringContaining(`is disabled by ${file}`),
    });
    expect(c.toolUnavailableMessage('mcp__files__echo')).toBe(
      `Tool mcp__files__echo of MCP server "files" is disabled by ${file}. To fix: enable it with \`mcp-reconciler enable files --tool echo\`.`,
    );
    // The server's other tools are untouched, and it did not reconnect.
    expect(row(c, 'files')).toMatchObject({ state: 'connected', generation: 1 });
    expect((await c.callTool('mcp__files__add', { a: 1, b: 2 })).structuredContent).toEqual({ sum: 3 });

    await c.setEnabled('files', true, { tools: ['echo'] });
    await waitFor(() => registered(c).includes('mcp__files__echo'), 'echo to come back');
    expect((await c.callTool('mcp__files__echo', { text: 'back' })).content).toEqual([{ type: 'text', text: 'back' }]);
    expect(readFileSync(file, 'utf8')).toBe(original);

    // The whole server.
    await c.setEnabled('files', false);
    await waitState(c, 'files', 'disabled');
    expect(row(c, 'files')).toMatchObject({ reason: 'disabled', disabledBy: file, tools: [], pid: undefined });
    expect(c.toolUnavailableMessage('mcp__files__echo')).toContain(`MCP server "files" is disabled by ${file}. To fix: enable it with \`mcp-reconciler enable files\`.`);
    await expect(c.callTool('mcp__files__echo', { text: 'x' })).rejects.toMatchObject({ message: expect.stringContaining('is disabled by') });
    expect(JSON.parse(readFileSync(file, 'utf8')).mcpServers.files.disabled).toBe(true);
    await c.setEnabled('files', true);
    await waitState(c, 'files', 'connected');
    expect(readFileSync(file, 'utf8')).toBe(original);
  });
});

describe('setEnabled for Claude Code: its own disabledMcpServers for a server, the workspace state file for tools', () => {
  it('keeps a tool switch in the state file and a server switch in ~/.claude.json; a new controller starts with both', async () => {
    const ws = h.workspace();
    const claudeJson = join(ws.home, '.claude.json');
    writeFileSync(claudeJson, JSON.stringify({ mcpServers: { cc: { type: 'stdio', ...stdioFixtureConfig('basic-server') } } }, null, 2));
    const original = readFileSync(claudeJson, 'utf8');
    const c = h.controller(ws, { preset: 'claude-code' });
    await c.start();
    expect(registered(c)).toContain('mcp__cc__echo');

    const statePath = defaultWorkspaceStatePath(ws.root, ws.env);
    const off = await c.setEnabled('cc', false, { tools: ['echo'] });
    expect(off).toEqual({ server: 'cc', enabled: false, tools: ['echo'], where: 'state', file: statePath });
    await waitFor(() => !registered(c).includes('mcp__cc__echo'), 'echo to leave');
    expect(readFileSync(claudeJson, 'utf8')).toBe(original);
    expect(JSON.parse(readFileSync(statePath, 'utf8'))).toEqual({ version: 1, servers: { cc: { disabledTools: ['echo'] } } });
    expect(c.toolUnavailableMessage('mcp__cc__echo')).toContain(`is disabled by \`mcp-reconciler disable --tool\` (${statePath})`);

    // The whole server: Claude Code's own field, projects[<root>].disabledMcpServers (docs/manage.md).
    expect(await c.setEnabled('cc', false)).toMatchObject({ where: 'host', file: claudeJson, field: 'disabledMcpServers' });
    await waitState(c, 'cc', 'disabled');
    expect(row(c, 'cc').disabledBy).toBe(`disabledMcpServers in ${claudeJson} (["projects"][${JSON.stringify(ws.root)}])`);

    const next = h.controller(ws, { preset: 'claude-code' });
    await next.start();
    expect(row(next, 'cc').state).toBe('disabled');
    await next.setEnabled('cc', true);
    await waitState(next, 'cc', 'connected');
    expect(readFileSync(claudeJson, 'utf8')).toBe(original);
    // The tool switch is still there: only the server was enabled.
    expect(registered(next)).not.toContain('mcp__cc__echo');
    await next.setEnabled('cc', true, { tools: ['echo'] });
    await waitFor(() => registered(next).includes('mcp__cc__echo'), 'echo back');
    expect(JSON.parse(readFileSync(statePath, 'utf8'))).toEqual({ version: 1, servers: {} });
  });

  it('persist: false switches for this controller only; an unknown server is an error naming the configured ones', async () => {
    const ws = h.workspace();
    ws.writeUserSettings({ mcpServers: { s: stdioFixtureConfig('basic-server') } });
    const before = readFileSync(join(ws.home, 'mcp-reconciler', 'settings.json'), 'utf8');
    const c = h.controller(ws, { workspaceStateFile: join(ws.root, 'state.json') });
    await c.start();
    expect(await c.setEnabled('s', false, { tools: ['echo'], persist: false })).toEqual({ server: 's', enabled: false, tools: ['echo'], where: 'session' });
    await waitFor(() => !registered(c).includes('mcp__s__echo'), 'echo to leave');
    expect(c.toolUnavailableMessage('mcp__s__echo')).toContain('is disabled by this session (setEnabled)');
    expect(readFileSync(join(ws.home, 'mcp-reconciler', 'settings.json'), 'utf8')).toBe(before);
    expect(existsSync(join(ws.root, 'state.json'))).toBe(false);
    await expect(c.setEnabled('nope', false)).rejects.toMatchObject({ code: 'unknown_server', hint: 'configured servers: s' });
  });
});
