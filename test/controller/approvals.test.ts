/**
 * The approval gate with real processes (SPEC §4): a server from `.mcp.json`
 * starts nothing before it is approved, stays down when rejected, and `why`
 * explains it.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { ServerConfig } from '../../machines/types.js';
import type { McpController } from '../../src/controller/controller.js';
import { stdioFixtureConfig } from '../helpers/fixtures.js';
import { waitFor } from '../helpers/processes.js';
import { cli, firstText, Harness, processesMatching, row, toolNames, waitState, type Workspace } from './support.js';

const h = new Harness();
afterAll(() => h.cleanup());

/** A basic-server config whose command line carries a marker unique to this workspace. */
function markedServer(ws: Workspace, name: string, env?: Record<string, string>): { config: ServerConfig; marker: string } {
  const marker = `--marker=${ws.root}/${name}`;
  return { config: stdioFixtureConfig('basic-server', { args: [marker], ...(env ? { env } : {}) }), marker };
}

/** A fresh workspace whose `.mcp.json` holds one marked basic server, `name`. */
function gatedWorkspace(name: string): { ws: Workspace; config: ServerConfig; marker: string } {
  const ws = h.workspace();
  const { config, marker } = markedServer(ws, name);
  ws.writeMcpJson({ [name]: config });
  return { ws, config, marker };
}

/** The server list of every `pending-approval` event from now on. */
function recordPrompts(c: McpController): string[][] {
  const prompts: string[][] = [];
  c.on('pending-approval', (e) => prompts.push(e.servers));
  return prompts;
}

function cliArgs(ws: Workspace, ...argv: string[]): string[] {
  return [...argv, '--cwd', ws.root, '--approvals', ws.approvals];
}

describe('a gated server from .mcp.json', () => {
  it('starts no process before approve; pending-approval names it; why gives the reason and the fix', async () => {
    const { ws, marker } = gatedWorkspace('docs');
    const c = h.controller(ws);
    const prompts = recordPrompts(c);
    await c.start();

    expect(row(c, 'docs')).toMatchObject({ state: 'pending_approval', status: 'pending', reason: 'pending_approval', scope: 'project', tools: [], pid: undefined });
    expect(prompts).toEqual([['docs']]);
    expect(c.pids()).toEqual([]);
    expect(processesMatching(marker)).toEqual([]);
    expect(c.tools()).toEqual([]);
    expect(c.toolUnavailableMessage('mcp__docs__echo')).toMatch(/"docs" is waiting for your approval.*approve it with `mcp-reconciler approve docs`/);

    const why = await cli(cliArgs(ws, 'why', 'docs'), ws.env, ws.root);
    expect(why.stderr).toBe('');
    expect(why.code).toBe(0);
    expect(why.stdout).toContain('MCP server "docs" is waiting for your approval.');
    expect(why.stdout).toContain('fix: approve it with `mcp-reconciler approve docs`');
    const whyJson = await cli(cliArgs(ws, 'why', 'docs', '--json'), ws.env, ws.root);
    expect(JSON.parse(whyJson.stdout)).toMatchObject({ kind: 'server', name: 'docs', state: 'pending_approval', reason: 'pending_approval' });
    const whyTool = await cli(cliArgs(ws, 'why', 'mcp__docs__echo'), ws.env, ws.root);
    expect(whyTool.code).toBe(0);
    expect(whyTool.stdout).toMatch(/waiting for your approval.*approve docs/);
    // Explaining started nothing either.
    expect(processesMatching(marker)).toEqual([]);

    // approve from the CLI writes the decision without starting anything ...
    const approved = await cli(cliArgs(ws, 'approve', 'docs'), ws.env, ws.root);
    expect(approved.code).toBe(0);
    expect(approved.stdout).toContain('approved "docs"');
    expect(processesMatching(marker)).toEqual([]);

    // ... and a new controller connects it.
    const next = h.controller(ws);
    const again: string[][] = [];
    next.on('pending-approval', (e) => again.push(e.servers));
    await next.start();
    expect(row(next, 'docs').state).toBe('connected');
    expect(again).toEqual([]);
    expect(toolNames(next)).toContain('mcp__docs__echo');
    expect(firstText(await next.callTool('mcp__docs__echo', { text: 'approved' }))).toBe('approved');
    expect(processesMatching(marker)).toEqual([row(next, 'docs').pid]);
    await next.dispose();
    expect(processesMatching(marker)).toEqual([]);
  });

  it('reject keeps it down (also across controllers); why explains how to change the decision', async () => {
    const { ws, config, marker } = gatedWorkspace('tickets');
    const c = h.controller(ws);
    await c.start();
    expect(row(c, 'tickets').state).toBe('pending_approval');
    const prompts = recordPrompts(c);

    await c.reject('tickets');
    expect(row(c, 'tickets')).toMatchObject({ state: 'rejected', reason: 'rejected', status: 'disabled', pid: undefined });
    expect(prompts).toEqual([]);
    await c.reload();
    expect(row(c, 'tickets').state).toBe('rejected');
    expect(c.pids()).toEqual([]);
    expect(processesMatching(marker)).toEqual([]);

    const later = h.controller(ws);
    await later.start();
    expect(row(later, 'tickets').state).toBe('rejected');
    expect(later.pids()).toEqual([]);
    expect(processesMatching(marker)).toEqual([]);

    const why = await cli(cliArgs(ws, 'why', 'tickets'), ws.env, ws.root);
    expect(why.code).toBe(0);
    expect(why.stdout).toContain('MCP server "tickets" was rejected.');
    expect(why.stdout).toMatch(/fix: .*edit the config to change its hash and be asked again/);
  });

  it('approve() in the API connects it at once; a session-only approval is forgotten by the next controller', async () => {
    const { ws, marker } = gatedWorkspace('notes');
    const c = h.controller(ws);
    await c.start();
    expect(processesMatching(marker)).toEqual([]);
    await c.approve('notes', { persist: false });
    await waitState(c, 'notes', 'connected');
    expect(processesMatching(marker)).toEqual([row(c, 'notes').pid]);
    expect(toolNames(c)).toContain('mcp__notes__echo');
    await c.dispose();

    const next = h.controller(ws);
    await next.start();
    expect(row(next, 'notes').state).toBe('pending_approval');
    expect(processesMatching(marker)).toEqual([]);
  });

  it('pending-approval carries only the promptable set, and a rejected server whose config is edited is prompted again', async () => {
    const ws = h.workspace();
    const a = markedServer(ws, 'alpha');
    const b = markedServer(ws, 'beta');
    ws.writeMcpJson({ alpha: a.config, beta: b.config });
    const first = h.controller(ws);
    await first.start();
    await first.reject('beta');
    await first.dispose();

    const c = h.controller(ws);
    const prompts = recordPrompts(c);
    await c.start();
    expect(prompts).toEqual([['alpha']]);
    expect(row(c, 'beta').state).toBe('rejected');

    // A new hash for beta: its old rejection no longer applies.
    ws.writeMcpJson({ alpha: a.config, beta: markedServer(ws, 'beta', { TOOLS_VERSION: '2' }).config });
    await c.reload();
    expect(prompts.at(-1)?.slice().sort()).toEqual(['alpha', 'beta']);
    expect(row(c, 'beta').state).toBe('pending_approval');
    expect(c.pids()).toEqual([]);
    expect(processesMatching(a.marker)).toEqual([]);
    expect(processesMatching(b.marker)).toEqual([]);
  });

  it('a filter, description or timeout edit of an approved server applies without a new prompt and without a reconnect (SPEC §4)', async () => {
    const { ws, config, marker } = gatedWorkspace('kb');
    const c = h.controller(ws);
    const prompts = recordPrompts(c);
    await c.start();
    await c.approve('kb');
    await waitState(c, 'kb', 'connected');
    const pid = row(c, 'kb').pid;
    expect(toolNames(c)).toContain('mcp__kb__add');
    expect(prompts).toEqual([['kb']]);

    ws.writeMcpJson({ kb: { ...config, excludeTools: ['add'], description: 'knowledge base', timeout: 5_000 } });
    await c.reload();
    expect(row(c, 'kb').state).toBe('connected');
    expect(row(c, 'kb').pid).toBe(pid);
    expect(toolNames(c)).not.toContain('mcp__kb__add');
    expect(toolNames(c)).toContain('mcp__kb__echo');
    expect(prompts).toEqual([['kb']]);
    expect(processesMatching(marker)).toEqual([pid]);

    // What runs changed: asked again, and nothing of the new config runs before that.
    ws.writeMcpJson({ kb: { ...config, args: [...(config.args ?? []), '--again'] } });
    await c.reload();
    expect(row(c, 'kb').state).toBe('pending_approval');
    expect(prompts.at(-1)).toEqual(['kb']);
    await waitFor(() => processesMatching(marker).length === 0, 'the old process to stop');
  });

  it('an untrusted folder starts nothing from .mcp.json, even when approved', async () => {
    const { ws, marker } = gatedWorkspace('docs');
    const approve = await cli(cliArgs(ws, 'approve', 'docs'), ws.env, ws.root);
    expect(approve.code).toBe(0);
    const c = h.controller(ws, { isTrustedFolder: () => false });
    await c.start();
    expect(row(c, 'docs')).toMatchObject({ state: 'untrusted', reason: 'untrusted' });
    expect(c.pids()).toEqual([]);
    expect(processesMatching(marker)).toEqual([]);
  });
});
