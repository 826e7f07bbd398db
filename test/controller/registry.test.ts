/**
 * The tool registry behind a live controller (SPEC §6): naming, conflicts that
 * reject a whole generation, and filters applied without reconnecting.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stdioFixtureConfig } from '../helpers/fixtures.js';
import { waitFor } from '../helpers/processes.js';
import { firstText, Harness, markerSwitched, rejection, row, toolNames, waitState } from './support.js';

const h = new Harness();
afterAll(() => h.cleanup());

describe('naming', () => {
  it('sanitises server names and caps long names at 64 characters; the capped name still calls', async () => {
    const name = 'team.docs server/with-a-really-long-name-that-goes-on-and-on';
    const { c } = await h.running({ [name]: stdioFixtureConfig('basic-server') });
    const tools = c.tools();
    expect(tools.length).toBe(5);
    for (const t of tools) {
      expect(t.name).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
      expect(t.name.startsWith('mcp__team_docs_server_with-a-really')).toBe(true);
      expect(t.server).toBe(name);
    }
    expect(new Set(tools.map((t) => t.name)).size).toBe(tools.length);
    const echo = tools.find((t) => t.rawName === 'echo')!;
    expect(firstText(await c.callTool(echo.name, { text: 'long' }))).toBe('long');
  });
});

describe('conflicts reject the whole generation', () => {
  it('duplicate raw names in a first listing: nothing of it is registered, the generation is closed and the server rests in failed', async () => {
    const { c } = await h.running({ basic: stdioFixtureConfig('basic-server') });
    const toolsBefore = c.tools();
    const promptsBefore = c.prompts();

    await c.addRuntimeServer('dup', stdioFixtureConfig('duplicate-tools-server'));
    await waitState(c, 'dup', 'failed');
    expect(c.tools()).toEqual(toolsBefore);
    expect(c.prompts()).toEqual(promptsBefore);
    const r = row(c, 'dup');
    expect(r.tools).toEqual([]);
    expect(r.pid).toBeUndefined();
    expect(r.attempt).toBe(0); // not retried: the same listing would be rejected again
    expect(r.reason).toBe('failed');
    expect(r.lastError).toMatch(/tool_conflict: .*it lists tool "echo" more than once/);
    expect(c.toolUnavailableMessage('mcp__dup__echo')).toMatch(/"dup" failed.*tool_conflict/);
  });

  it('a later generation with duplicates is closed: the server fails, its old tools leave, calls are refused with the reason', async () => {
    const ws = h.workspace();
    const marker = join(ws.root, 'duplicate-now');
    const dup = markerSwitched(marker, 'duplicate-tools-server', 'export DUPLICATE=1', 'export DUPLICATE=0');
    const { c } = await h.running({ dup }, { backoff: { initialMs: 20, maxMs: 100, attempts: 5 } }, ws);
    const first = row(c, 'dup');
    expect(first.lastError).toBeUndefined();
    expect(c.tools().map((t) => t.name)).toEqual(['mcp__dup__echo', 'mcp__dup__ping']);
    const removed: string[] = [];
    c.on('tools-changed', (e) => removed.push(...e.removed));

    writeFileSync(marker, '');
    process.kill(first.pid!, 'SIGKILL');
    await waitState(c, 'dup', 'failed');
    const r = row(c, 'dup');
    expect(r.generation).toBeGreaterThan(first.generation);
    expect(r.pid).toBeUndefined();
    await waitFor(() => c.pids().length === 0, 'the rejected generation to be closed'); // its process is gone too
    expect(c.tools()).toEqual([]);
    expect(removed.sort()).toEqual(['mcp__dup__echo', 'mcp__dup__ping']);
    expect(r.lastError).toMatch(/tool_conflict: .*"echo" more than once/);
    // The message says what happened to the old tools: they left with the generation.
    expect(r.lastError).not.toContain('previously registered tools and prompts stay');
    expect(r.lastError).toContain('Its connection is closed and none of its tools or prompts stay registered');
    const err = await rejection(c.callTool('mcp__dup__ping', {}));
    expect(err.code).toBe('unknown_tool');
    expect(err.message).toMatch(/"dup" failed/);
  });

  it('a name already taken by another server: the newcomer registers nothing, the owner keeps its tools', async () => {
    const { c } = await h.running({ 'a.b': stdioFixtureConfig('basic-server') });
    const toolsBefore = c.tools();
    const promptsBefore = c.prompts();
    const changes: unknown[] = [];
    c.on('tools-changed', (e) => changes.push(e));

    // "a_b" shares the prefix mcp__a_b__ with "a.b", which sorts first and owns it.
    await c.addRuntimeServer('a_b', stdioFixtureConfig('basic-server'));
    await waitState(c, 'a_b', 'failed');
    expect(c.tools()).toEqual(toolsBefore);
    expect(c.prompts()).toEqual(promptsBefore);
    expect(changes).toEqual([]);
    expect(row(c, 'a_b').lastError).toMatch(/"a_b" and "a\.b" both become the tool prefix mcp__a_b__, which "a\.b" owns/);
    expect(row(c, 'a.b').lastError).toBeUndefined();
    expect(c.tools().every((t) => t.server === 'a.b')).toBe(true);

    // Once the owner is gone, the waiting listing fits and is registered.
    await c.removeRuntimeServer('a.b');
    await c.reconnect('a_b');
    await waitFor(() => c.tools().length > 0 && c.tools().every((t) => t.server === 'a_b'), 'the newcomer to take over the names');
    expect(toolNames(c)).toEqual(toolsBefore.map((t) => t.name).sort());
  });

  it('the prefix owner arriving later takes the names: the other server is closed and rests in failed, naming both', async () => {
    const { c } = await h.running({ a_b: stdioFixtureConfig('basic-server') });
    const before = row(c, 'a_b');
    expect(before.tools.length).toBeGreaterThan(0);

    await c.addRuntimeServer('a.b', stdioFixtureConfig('basic-server'));
    await waitState(c, 'a_b', 'failed');
    await waitState(c, 'a.b', 'connected');
    expect(c.tools().every((t) => t.server === 'a.b')).toBe(true);
    expect(toolNames(c)).toEqual([...before.tools].sort());
    expect(row(c, 'a_b')).toMatchObject({ pid: undefined, tools: [] });
    expect(row(c, 'a_b').lastError).toMatch(/"a_b" and "a\.b" both become the tool prefix mcp__a_b__/);
  });
});

describe('a registered name two servers produce alike (`a` + `b__c`, `a__b` + `c`)', () => {
  it.each([
    ['a', 'a__b'],
    ['a__b', 'a'],
  ] as const)('%s connects first, %s later: "a" owns mcp__a__b__c either way, "a__b" fails naming both', async (first, second) => {
    const ws = h.workspace();
    const gate = join(ws.root, 'start-gate');
    const toolNamesOf = { a: 'b__c,only_a', a__b: 'c,only_ab' } as const;
    // The later one waits for the gate file, so the connect order is fixed without timing.
    const config = (name: 'a' | 'a__b') =>
      stdioFixtureConfig('named-tools-server', { env: { TOOL_NAMES: toolNamesOf[name], ...(name === second ? { START_GATE: gate } : {}) } });
    ws.writeUserSettings({ mcpServers: { a: config('a'), a__b: config('a__b') } });
    const c = h.controller(ws);
    const started = c.start();
    await waitState(c, first, 'connected');
    expect(c.tools().find((t) => t.name === 'mcp__a__b__c')?.server).toBe(first);

    writeFileSync(gate, '');
    await started;
    await waitState(c, 'a', 'connected');
    await waitState(c, 'a__b', 'failed');
    expect(toolNames(c)).toEqual(['mcp__a__b__c', 'mcp__a__only_a']);
    expect(c.tools().every((t) => t.server === 'a')).toBe(true);
    expect(firstText(await c.callTool('mcp__a__b__c', {}))).toBe('b__c');
    const loser = row(c, 'a__b');
    expect(loser).toMatchObject({ reason: 'failed', tools: [], pid: undefined });
    expect(loser.lastError).toContain('tool "c" of MCP server "a__b" and tool "b__c" of MCP server "a" both become mcp__a__b__c, which "a" owns');
    expect(loser.lastError).toContain('none of its tools or prompts stay registered');
    expect(row(c, 'a').lastError).toBeUndefined();
  });
});

describe('includeTools / excludeTools', () => {
  it('are applied to the live tool list without reconnecting (addRuntimeServer)', async () => {
    const ws = h.workspace();
    const c = h.controller(ws);
    const config = stdioFixtureConfig('basic-server');
    await c.addRuntimeServer('basic', config);
    await c.start();
    const before = row(c, 'basic');
    expect(before.tools).toHaveLength(5);

    await c.addRuntimeServer('basic', { ...config, excludeTools: ['env', 'pid'] });
    await waitFor(() => row(c, 'basic').tools.length === 3, 'the exclusion to apply');
    expect(toolNames(c)).toEqual(['mcp__basic__add', 'mcp__basic__echo', 'mcp__basic__v1_tool']);
    expect(row(c, 'basic').skippedTools).toEqual([
      { rawName: 'env', reason: 'listed in excludeTools' },
      { rawName: 'pid', reason: 'listed in excludeTools' },
    ]);

    await c.addRuntimeServer('basic', { ...config, includeTools: ['echo'] });
    await waitFor(() => row(c, 'basic').tools.length === 1, 'the inclusion to apply');
    expect(toolNames(c)).toEqual(['mcp__basic__echo']);

    await c.addRuntimeServer('basic', config);
    await waitFor(() => row(c, 'basic').tools.length === 5, 'the filter to be lifted');

    const after = row(c, 'basic');
    expect(after.pid).toBe(before.pid);
    expect(after.generation).toBe(before.generation);
    expect(after.state).toBe('connected');
  });

  it('are applied after a config edit and reload(), same process, same generation', async () => {
    const ws = h.workspace();
    const server = stdioFixtureConfig('basic-server');
    ws.writeUserSettings({ mcpServers: { notes: server } });
    const c = h.controller(ws);
    await c.start();
    const before = row(c, 'notes');
    expect(before).toMatchObject({ state: 'connected', scope: 'user' });
    expect(before.tools).toHaveLength(5);

    ws.writeUserSettings({ mcpServers: { notes: { ...server, includeTools: ['echo', 'add'] } } });
    await c.reload();
    await waitFor(() => row(c, 'notes').tools.length === 2, 'the edited filter to apply');
    expect(toolNames(c)).toEqual(['mcp__notes__add', 'mcp__notes__echo']);
    const after = row(c, 'notes');
    expect(after.pid).toBe(before.pid);
    expect(after.generation).toBe(before.generation);
    expect(firstText(await c.callTool('mcp__notes__echo', { text: 'filtered' }))).toBe('filtered');
  });
});
