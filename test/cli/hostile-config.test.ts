/**
 * Hostile config files through the CLI, in-process: a 10 000-level file next
 * to a good one, server names that are Object.prototype members, and two
 * names that sanitise to the same tool prefix. One bad file is one issue; the
 * other files' servers keep running.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { ServerStatus } from '../../src/controller/types.js';
import type { ConfigIssue } from '../../src/config/sources.js';
import { Harness, cli, processesMatching, type Workspace } from '../controller/support.js';
import { stdioFixtureConfig } from '../helpers/fixtures.js';

const h = new Harness();
afterAll(() => h.cleanup());

const LEVELS = 10_000;

async function run(ws: Workspace, ...argv: string[]) {
  const r = await cli([...argv, '--cwd', ws.root, '--approvals', ws.approvals], ws.env, ws.root);
  expect(processesMatching(ws.root)).toEqual([]);
  return r;
}

describe('a 10 000-level nested file next to a good one', () => {
  it.each([
    ['JSON', 'deep.json', `{"mcpServers":{"bad":{"command":"a","args":${'['.repeat(LEVELS)}${']'.repeat(LEVELS)}}}}`],
    ['YAML', 'deep.yaml', `mcpServers:\n  bad:\n    command: a\n    args: ${'['.repeat(LEVELS)}${']'.repeat(LEVELS)}\n`],
  ])('%s: status --json exits normally, lists the good server and reports the bad file', async (_kind, name, text) => {
    const ws = h.workspace('mcp-cli-deep-');
    ws.writeUserSettings({ mcpServers: { good: stdioFixtureConfig('basic-server', { args: [`--marker=${ws.root}`] }) } });
    const bad = join(ws.root, name);
    writeFileSync(bad, text);
    const r = await run(ws, 'status', '--json', '--mcp-config', bad);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as { servers: ServerStatus[]; issues: ConfigIssue[] };
    expect(doc.servers.map((s) => [s.name, s.state])).toEqual([['good', 'connected']]);
    expect(doc.issues).toEqual([expect.objectContaining({ file: bad, code: 'config_invalid', message: expect.stringContaining('nested more than 64 levels deep') })]);
  });
});

describe('a running controller', () => {
  it('a cli file turning 10 000 levels deep on reload is one config-error; the user server keeps running', async () => {
    const ws = h.workspace('mcp-ctl-deep-');
    ws.writeUserSettings({ mcpServers: { good: stdioFixtureConfig('basic-server') } });
    const extra = join(ws.root, 'extra.json');
    writeFileSync(extra, JSON.stringify({ mcpServers: {} }));
    const c = h.controller(ws, { cliConfigFiles: [extra] });
    await c.start();
    expect(c.status().map((s) => [s.name, s.state])).toEqual([['good', 'connected']]);
    const pid = c.status()[0]!.pid;
    const errors: ConfigIssue[][] = [];
    c.on('config-error', (e) => errors.push(e.issues));

    writeFileSync(extra, `{"mcpServers":{"bad":{"command":"a","args":${'['.repeat(LEVELS)}${']'.repeat(LEVELS)}}}}`);
    await c.reload();
    expect(errors).toEqual([[expect.objectContaining({ file: extra, message: expect.stringContaining('levels deep') })]]);
    expect(c.status().map((s) => [s.name, s.state, s.pid])).toEqual([['good', 'connected', pid]]);
  });
});

describe('server names that are Object.prototype members', () => {
  it('config --json lists constructor, toString and __proto__ with their verdicts; __proto__ is reported as not runnable', async () => {
    const ws = h.workspace('mcp-cli-proto-');
    // JSON.stringify of an object literal cannot produce a `__proto__` key; write the text.
    const entry = JSON.stringify({ command: 'never-run', disabled: false });
    const file = ws.writeUserSettings({});
    writeFileSync(file, `{"mcpServers":{"constructor":${entry},"toString":${entry},"__proto__":${entry}}}`);
    const r = await run(ws, 'config', '--json');
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as { servers: { name: string; verdict: string }[]; issues: ConfigIssue[] };
    expect(doc.servers.map((s) => [s.name, s.verdict])).toEqual([
      ['__proto__', 'admitted'],
      ['constructor', 'admitted'],
      ['toString', 'admitted'],
    ]);
    expect(doc.issues).toEqual([expect.objectContaining({ server: '__proto__', message: expect.stringContaining('rename it') })]);
  });

  it('why toString: not configured on an empty workspace; its state when configured', async () => {
    const ws = h.workspace('mcp-cli-proto-');
    const none = await run(ws, 'why', 'toString');
    expect(none.code).not.toBe(0);
    expect(none.stderr).toContain('no MCP server or tool named "toString"');
    expect(none.stderr).toContain('no servers are configured');

    ws.writeUserSettings({ mcpServers: { toString: { command: 'never-run', disabled: true } } });
    const r = await run(ws, 'why', 'toString', '--json');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ kind: 'server', name: 'toString', state: 'disabled' });
  });
});

describe('names that sanitise to the same tool prefix', () => {
  it('config shows one issue naming both servers and the owner', async () => {
    const ws = h.workspace('mcp-cli-prefix-');
    ws.writeUserSettings({ mcpServers: { x_y: { command: 'never-run' }, 'x.y': { command: 'never-run' } } });
    const r = await run(ws, 'config');
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/warning: .*settings\.json: server "x_y": server "x_y" and server "x\.y" both get the tool prefix mcp__x_y__; "x\.y" sorts first and owns it/);
  });
});
