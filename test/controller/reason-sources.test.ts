/**
 * Reasons that name where they come from: a server dropped for a config
 * error has a status row (`config_invalid`, file and line) and `why` tells
 * what is wrong and how to fix it; an excluded server names the settings
 * file(s) whose `mcp.excluded` lists it.
 */
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { stdioFixtureConfig } from '../helpers/fixtures.js';
import { cli, Harness, row, waitState } from './support.js';

const h = new Harness();
afterAll(() => h.cleanup());

/** 1-based line of the first line of `file` containing `needle`. */
function lineOf(file: string, needle: string): number {
  const index = readFileSync(file, 'utf8').split('\n').findIndex((l) => l.includes(needle));
  if (index < 0) throw new Error(`${needle} not in ${file}`);
  return index + 1;
}

describe('a server dropped for a config error', () => {
  it('has a status row with reason config_invalid, file and line; why says what is wrong and how to fix it; fixing the file starts it', async () => {
    const ws = h.workspace();
    const good = stdioFixtureConfig('basic-server');
    const file = ws.writeUserSettings({ mcpServers: { fine: good, broken: { command: 5, args: ['x'] } } });
    const line = lineOf(file, '"command": 5');
    const c = h.controller(ws);
    await c.start();

    expect(row(c, 'fine').state).toBe('connected');
    const r = row(c, 'broken');
    expect(r).toMatchObject({ state: 'config_invalid', status: 'failed', reason: 'config_invalid', source: file, line, scope: 'user', tools: [], pid: undefined });
    expect(r.lastError).toContain(`${file}:${line}`);
    expect(r.lastError).toMatch(/field "command"/);
    expect(c.unavailableReason('broken')).toBe('config_invalid');
    expect(c.toolUnavailableMessage('mcp__broken__echo')).toMatch(new RegExp(`MCP server "broken" is not started: its entry in ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:${line} is invalid`));

    const args = ['--cwd', ws.root, '--approvals', ws.approvals];
    const why = await cli(['why', 'broken', ...args], ws.env, ws.root);
    expect(why.code).toBe(0);
    expect(why.stdout).toContain(`MCP server "broken" is not started: its entry in ${file}:${line} is invalid. Error: ${file}:${line}`);
    expect(why.stdout).toMatch(/field "command"/);
    expect(why.stdout).toContain(`fix: correct the entry of "broken" in ${file}:${line} as the error says (or remove it)`);
    const status = await cli(['status', '--json', ...args], ws.env, ws.root);
    const rows = (JSON.parse(status.stdout) as { servers: { name: string; reason: string; line?: number }[] }).servers;
    expect(rows.find((s) => s.name === 'broken')).toMatchObject({ reason: 'config_invalid', line });

    ws.writeUserSettings({ mcpServers: { fine: good, broken: good } });
    await c.reload();
    await waitState(c, 'broken', 'connected');
    expect(row(c, 'broken')).toMatchObject({ reason: undefined, lastError: undefined });
    expect(row(c, 'broken').line).toBeUndefined();
  });
});

describe('an excluded server', () => {
  it('names the settings file whose mcp.excluded lists it, in status, why and the tool message', async () => {
    const ws = h.workspace();
    const file = ws.writeUserSettings({ mcpServers: { scratch: stdioFixtureConfig('basic-server') }, mcp: { excluded: ['scratch'] } });
    const c = h.controller(ws);
    await c.start();
    expect(row(c, 'scratch')).toMatchObject({ state: 'excluded', reason: 'excluded', excludedBy: [file] });
    expect(c.toolUnavailableMessage('mcp__scratch__echo')).toContain(`is listed in mcp.excluded in ${file}. To fix: remove "scratch" from \`mcp.excluded\` in ${file}.`);

    const why = await cli(['why', 'scratch', '--cwd', ws.root, '--approvals', ws.approvals], ws.env, ws.root);
    expect(why.code).toBe(0);
    expect(why.stdout).toBe(`MCP server "scratch" is listed in mcp.excluded in ${file}.\nfix: remove "scratch" from \`mcp.excluded\` in ${file}\n`);
  });
});
