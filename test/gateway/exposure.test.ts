/**
 * `serve --tools all|search|auto` through the built binary with the SDK's
 * own `Client`: what `tools/list` shows in each mode, `search_tools` and
 * `call_tool`, found tools joining the session's list with
 * `tools/list_changed`, the most called tools listed first under a budget,
 * and the gate: a pending or out-of-scope server's tools are never found.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/processes.js';
import { connectStdio as connect, textOf, Workspace, type StdioConnected } from './support.js';

const ws = new Workspace();
ws.writeUser({ a: ws.server('1'), b: ws.server('1') });
// Gated, never approved: its tools must never reach a client, however asked for.
ws.writeProject({ p: ws.server('1') });

const open: StdioConnected[] = [];
async function session(extra: string[]): Promise<StdioConnected> {
  const s = await connect(ws, extra);
  open.push(s);
  return s;
}

async function names(s: StdioConnected): Promise<string[]> {
  return (await s.client.listTools()).tools.map((t) => t.name).sort();
}

function found(result: unknown): string[] {
  const structured = (result as { structuredContent?: { tools?: { name: string }[] } }).structuredContent;
  return (structured?.tools ?? []).map((t) => t.name);
}

afterEach(async () => {
  for (const s of open.splice(0)) await s.client.close().catch(() => undefined);
});

afterAll(async () => {
  expect(await ws.cleanup(), 'processes left behind').toBe(0);
});

const A_TOOLS = ['mcp__a__add', 'mcp__a__echo', 'mcp__a__env', 'mcp__a__pid', 'mcp__a__v1_tool'];
const B_TOOLS = A_TOOLS.map((n) => n.replace('__a__', '__b__'));

describe('serve --tools', () => {
  it('all: every tool of the scope, no search pair (today’s behaviour)', async () => {
    const s = await session(['--tools', 'all', '--servers', 'a,b,p']);
    expect(await names(s)).toEqual([...A_TOOLS, ...B_TOOLS].sort());
  });

  it('search: only search_tools and call_tool; found tools join the list; the gate and the scope hold', async () => {
    const s = await session(['--tools', 'search', '--servers', 'a,p']);
    expect(await names(s)).toEqual(['call_tool', 'search_tools']);
    const list = (await s.client.listTools()).tools;
    expect(list.find((t) => t.name === 'search_tools')!.inputSchema.required).toEqual(['query']);

    const before = s.toolChanges();
    const result = await s.client.callTool({ name: 'search_tools', arguments: { query: 'echoes text back', limit: 3 } });
    expect(result.isError).toBeFalsy();
    expect(found(result)[0]).toBe('mcp__a__echo');
    // Names, descriptions and full input schemas.
    const hit = (result.structuredContent as { tools: { name: string; description: string; inputSchema: { properties: Record<string, unknown> } }[] }).tools[0]!;
    expect(hit.description).toBe('Echoes its text argument.');
    expect(Object.keys(hit.inputSchema.properties)).toEqual(['text']);
    await waitFor(() => s.toolChanges() > before, 'tools/list_changed after a search', 10_000);
    expect(await names(s)).toEqual(expect.arrayContaining(['mcp__a__echo', 'search_tools', 'call_tool']));

    const called = await s.client.callTool({ name: 'call_tool', arguments: { name: 'mcp__a__echo', arguments: { text: 'via call_tool' } } });
    expect(textOf(called)).toBe('via call_tool');

    // The pending server p and the out-of-scope server b have the same tools: none is ever found.
    for (const query of ['echo', 'add two numbers', 'environment variables', 'process id', 'tool version 1']) {
      const r = await s.client.callTool({ name: 'search_tools', arguments: { query, limit: 50 } });
      const hits = found(r);
      expect(hits.filter((n) => !n.startsWith('mcp__a__')), query).toEqual([]);
    }
    expect((await names(s)).filter((n) => n.startsWith('mcp__p__') || n.startsWith('mcp__b__'))).toEqual([]);
    // call_tool reaches nothing the session's tools/call could not.
    const gated = await s.client.callTool({ name: 'call_tool', arguments: { name: 'mcp__p__echo', arguments: { text: 'x' } } });
    expect(gated.isError).toBe(true);
  }, 120_000);

  it('auto: every tool while under the caps; over them the search pair, then the most called tools of the workspace first', async () => {
    const roomy = await session(['--max-tools', '20', '--servers', 'a,b']);
    expect(await names(roomy)).toEqual([...A_TOOLS, ...B_TOOLS].sort());
    await roomy.client.close();

    const tight = await session(['--max-tools', '4', '--servers', 'a,b,p']);
    const first = await names(tight);
    expect(first).toEqual(expect.arrayContaining(['call_tool', 'search_tools']));
    // Besides the pair, at most 2 tools: what earlier sessions of this workspace called most.
    expect(first.length).toBeLessThanOrEqual(4);
    expect(first).not.toContain('mcp__b__echo');
    // A direct call of an unlisted tool still works, and counts as use.
    for (let i = 0; i < 3; i++) expect(textOf(await tight.client.callTool({ name: 'mcp__b__echo', arguments: { text: `n${i}` } }))).toBe(`n${i}`);
    await tight.client.close();
    // The gateway writes the counts when it exits: wait for it to be gone.
    await waitFor(() => ws.markedPids().length === 0, 'the first gateway to exit', 20_000);

    const next = await session(['--max-tools', '4', '--servers', 'a,b,p']);
    const listed = await names(next);
    expect(listed).toEqual(expect.arrayContaining(['call_tool', 'mcp__b__echo', 'search_tools']));
    expect(listed.length).toBeLessThanOrEqual(4);
    const r = await next.client.callTool({ name: 'search_tools', arguments: { query: 'echo', limit: 50 } });
    expect(found(r).filter((n) => n.startsWith('mcp__p__'))).toEqual([]);

    const tokens = await session(['--max-tool-tokens', '50', '--servers', 'a']);
    expect((await names(tokens)).filter((n) => n.startsWith('mcp__'))).toEqual([]);
  }, 240_000);

  it('usage errors exit 2 with a hint', async () => {
    const { runCliCaptured } = await import('../helpers/cli.js');
    const run = (args: string[]) => runCliCaptured(['serve', '--http', ...args, ...ws.args()], ws.env(), ws.root);
    expect((await run(['--tools', 'some'])).stderr).toMatch(/--tools must be all, search or auto/);
    expect((await run(['--tools', 'auto'])).stderr).toMatch(/--tools auto needs a budget/);
    const capped = await run(['--tools', 'search', '--max-tools', '5']);
    expect([capped.code, /apply to --tools auto/.test(capped.stderr)]).toEqual([2, true]);
    expect((await run(['--max-tools', '0'])).code).toBe(2);
  });
});
