import { afterAll, describe, expect, it } from 'vitest';
import { OUTPUT_CONTRACT_META_KEY } from '../../src/registry/output-contract.js';
import { createBasicServer } from '../fixtures/basic-tools.js';
import { stdioFixtureConfig } from '../helpers/fixtures.js';
import { waitFor } from '../helpers/processes.js';
import { firstText, Harness, rejection, row, toolNames } from './support.js';

const h = new Harness();
afterAll(() => h.cleanup());

describe('fixture servers over stdio', () => {
  it('registers tools and prompts as mcp__<server>__<name> and round-trips a call', async () => {
    const { c } = await h.running({ basic: stdioFixtureConfig('basic-server', { env: { TOOLS_VERSION: '3' } }) });

    const r = row(c, 'basic');
    expect(r).toMatchObject({ state: 'connected', status: 'connected', scope: 'runtime', reason: undefined, generation: 1 });
    expect(r.pid).toBeTypeOf('number');
    expect(c.pids()).toEqual([r.pid]);
    expect(toolNames(c)).toEqual(['mcp__basic__add', 'mcp__basic__echo', 'mcp__basic__env', 'mcp__basic__pid', 'mcp__basic__v3_tool']);
    const echo = c.tools().find((t) => t.name === 'mcp__basic__echo')!;
    expect(echo).toMatchObject({ server: 'basic', rawName: 'echo', description: 'Echoes its text argument.' });
    expect(c.prompts().map((p) => p.name)).toEqual(['mcp__basic__greet']);
    expect(r.prompts).toEqual(['mcp__basic__greet']);

    expect(firstText(await c.callTool('mcp__basic__echo', { text: 'round trip' }))).toBe('round trip');
    // The server really is the child the controller tracks.
    expect(Number(firstText(await c.callTool('mcp__basic__pid', {})))).toBe(r.pid);
    expect(c.unavailableReason('basic')).toBeUndefined();
  });

  it('gives the child a scrubbed environment with the config overlay on top', async () => {
    const ws = h.workspace();
    const c = h.controller(ws, { env: { ...ws.env, MY_API_KEY: 'leak', SOME_TOKEN: 'leak', PLAIN_VALUE: 'kept', OVERRIDDEN: 'parent' } });
    await c.addRuntimeServer('envy', stdioFixtureConfig('basic-server', { env: { OVERRIDDEN: 'overlay', EXTRA_TOKEN: 'explicit' } }));
    await c.start();
    const seen = JSON.parse(
      firstText(await c.callTool('mcp__envy__env', { names: ['MY_API_KEY', 'SOME_TOKEN', 'PLAIN_VALUE', 'OVERRIDDEN', 'EXTRA_TOKEN'] })),
    ) as Record<string, string | null>;
    // PLAIN_VALUE is not on the allow-list (SPEC §8.2): unlisted variables stay with the host.
    expect(seen).toEqual({ MY_API_KEY: null, SOME_TOKEN: null, PLAIN_VALUE: null, OVERRIDDEN: 'overlay', EXTRA_TOKEN: 'explicit' });
  });

  it('validates outputSchema results: a valid one passes, a broken one becomes an error result', async () => {
    const { c } = await h.running({ basic: stdioFixtureConfig('basic-server'), liar: stdioFixtureConfig('bad-output-server') });

    const sum = await c.callTool('mcp__basic__add', { a: 2, b: 3 });
    expect(sum.isError).toBeFalsy();
    expect(sum.structuredContent).toEqual({ sum: 5 });

    const valid = await c.callTool('mcp__liar__valid_report', {});
    expect(valid.isError).toBeFalsy();
    expect(valid.structuredContent).toEqual({ count: 3, label: 'three' });

    const extra = await c.callTool('mcp__liar__report', { break: 'extra' });
    expect(extra.isError).toBe(true);
    expect(extra.structuredContent).toBeUndefined();
    expect(firstText(extra)).toContain('mcp__liar__report returned structuredContent that breaks its outputSchema');
    expect(firstText(extra)).toContain('"debug"');
    expect((extra._meta?.[OUTPUT_CONTRACT_META_KEY] as { violations: string[] }).violations.length).toBeGreaterThan(0);

    const missing = await c.callTool('mcp__liar__report', { break: 'missing' });
    expect(missing.isError).toBe(true);
    expect(firstText(missing)).toMatch(/label/);

    // A tool's own error result is passed through untouched.
    const own = await c.callTool('mcp__liar__report', { break: 'error' });
    expect(own.isError).toBe(true);
    expect(firstText(own)).toBe('report failed on purpose');
  });

  it('does not register a taskSupport: required tool and lists it in status with the reason', async () => {
    const { c } = await h.running({ tasks: stdioFixtureConfig('task-required-server') });
    expect(toolNames(c)).toEqual(['mcp__tasks__quick']);
    expect(row(c, 'tasks').skippedTools).toEqual([{ rawName: 'long_job', reason: expect.stringContaining("taskSupport is 'required'") }]);
    const err = await rejection(c.callTool('mcp__tasks__long_job', {}));
    expect(err.code).toBe('unknown_tool');
    expect(c.toolUnavailableMessage('mcp__tasks__long_job')).toMatch(/not registered: .*taskSupport/);
  });

  it('re-lists and re-registers on tools/list_changed and prompts/list_changed', async () => {
    const { c } = await h.running({ live: stdioFixtureConfig('list-changed-server') });
    const changes: Array<{ server: string; added: string[]; removed: string[]; updated: string[] }> = [];
    c.on('tools-changed', (e) => changes.push(e));
    const generation = row(c, 'live').generation;

    await c.callTool('mcp__live__add_tool', { name: 'fresh' });
    await waitFor(() => toolNames(c).includes('mcp__live__fresh'), 'the new tool to be registered');
    expect(changes).toContainEqual({ server: 'live', added: ['mcp__live__fresh'], removed: [], updated: [] });
    expect(firstText(await c.callTool('mcp__live__fresh', {}))).toBe('fresh');

    // Same name, new definition: reported as `updated`, not as nothing.
    await c.callTool('mcp__live__describe_tool', { name: 'fresh', description: 'Now described.' });
    await waitFor(() => c.tools().find((t) => t.name === 'mcp__live__fresh')?.description === 'Now described.', 'the new description');
    expect(changes).toContainEqual({ server: 'live', added: [], removed: [], updated: ['mcp__live__fresh'] });

    await c.callTool('mcp__live__add_prompt', { name: 'later' });
    await waitFor(() => c.prompts().some((p) => p.name === 'mcp__live__later'), 'the new prompt to be registered');
    expect(c.prompts().map((p) => p.name).sort()).toEqual(['mcp__live__initial', 'mcp__live__later']);
    // Re-listing is not reconnecting.
    expect(row(c, 'live').generation).toBe(generation);
  });
});

describe('in-process servers (sdk scope)', () => {
  it('connects an McpServer passed as sdkServers, with tools, prompts and calls', async () => {
    const ws = h.workspace();
    const server = createBasicServer({ toolsVersion: '7' });
    const c = h.controller(ws, { sdkServers: { inproc: server } });
    await c.start();
    expect(row(c, 'inproc')).toMatchObject({ state: 'connected', scope: 'sdk', pid: undefined });
    expect(toolNames(c)).toContain('mcp__inproc__v7_tool');
    expect(c.prompts().map((p) => p.name)).toEqual(['mcp__inproc__greet']);
    expect(firstText(await c.callTool('mcp__inproc__echo', { text: 'in memory' }))).toBe('in memory');
    expect((await c.callTool('mcp__inproc__add', { a: 1, b: 1 })).structuredContent).toEqual({ sum: 2 });
    // No process is involved.
    expect(c.pids()).toEqual([]);
    await c.dispose();
    expect(server.isConnected()).toBe(false);
    expect(c.tools()).toEqual([]);
  });

  it('is never filtered by allowed', async () => {
    const ws = h.workspace();
    ws.writeUserSettings({ mcp: { allowed: [] } });
    const c = h.controller(ws, { sdkServers: { inproc: createBasicServer() } });
    await c.addRuntimeServer('basic', stdioFixtureConfig('basic-server'));
    await c.start();
    expect(row(c, 'inproc').state).toBe('connected');
    expect(row(c, 'basic').state).toBe('not_allowed');
    expect(c.pids()).toEqual([]);
  });
});
