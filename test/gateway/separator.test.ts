/**
 * `serve --separator SEP` with SDK clients over stdio and HTTP: tools and
 * prompts listed as `mcp<SEP><server><SEP><name>`, calls and prompts/get
 * with those names, the reason text of an unavailable tool under its
 * gateway name, and two tools the separator gives one name reported on
 * stderr instead of one silently shadowing the other.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliCaptured } from '../helpers/cli.js';
import { connectStdio, HttpServe, textOf, Workspace, type HttpConnected, type StdioConnected } from './support.js';

describe('serve --stdio --separator -', () => {
  const ws = new Workspace();
  let main: StdioConnected;

  beforeAll(async () => {
    // With "-", x's tool vv-vz_tool and x-vv's tool vz_tool are both mcp-x-vv-vz_tool.
    ws.writeUser({ a: ws.server('1'), x: ws.server('v-vz'), 'x-vv': ws.server('z') });
    ws.writeProject({ p: ws.server('1') });
    main = await connectStdio(ws, ['--separator', '-']);
  });

  afterAll(async () => {
    await main?.client.close().catch(() => undefined);
    expect(await ws.cleanup(), 'processes left behind').toBe(0);
  });

  it('lists tools and prompts as mcp-<server>-<name>, says so in its instructions, and forwards calls and prompts/get', async () => {
    const names = (await main.client.listTools()).tools.map((t) => t.name);
    for (const tool of ['echo', 'add', 'v1_tool', 'env', 'pid']) expect(names).toContain(`mcp-a-${tool}`);
    expect(names.filter((n) => !/^mcp-[A-Za-z0-9_-]+$/.test(n))).toEqual([]);
    expect(main.client.getInstructions()).toMatch(/named mcp-<server>-<tool>/);
    expect(textOf(await main.client.callTool({ name: 'mcp-a-echo', arguments: { text: 'dashed' } }))).toBe('dashed');
    expect(textOf(await main.client.callTool({ name: 'mcp-x-vv-pid' }))).toMatch(/^\d+$/);

    const prompts = (await main.client.listPrompts()).prompts.map((p) => p.name).sort();
    expect(prompts).toEqual(['mcp-a-greet', 'mcp-x-greet', 'mcp-x-vv-greet']);
    expect(JSON.stringify((await main.client.getPrompt({ name: 'mcp-x-vv-greet', arguments: { who: 'sep' } })).messages)).toContain('Hello, sep!');
    // The registry's own names are not the gateway's any more.
    const old = await main.client.callTool({ name: 'mcp__a__echo', arguments: { text: 'x' } });
    expect(old.isError).toBe(true);
    expect(textOf(old)).toMatch(/not provided under that name: this gateway names them mcp-<server>-<tool>/);
  });

  it('a tool of a server waiting for approval answers with the reason under its gateway name', async () => {
    const result = await main.client.callTool({ name: 'mcp-p-echo', arguments: { text: 'x' } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/^Tool mcp-p-echo is unavailable: MCP server "p" is waiting for your approval/);
    expect(textOf(result)).toMatch(/mcp-reconciler approve p/);
  });

  it('two tools the separator names alike: the first keeps the name, the collision is reported on stderr', async () => {
    const names = (await main.client.listTools()).tools.map((t) => t.name);
    expect(names.filter((n) => n === 'mcp-x-vv-vz_tool')).toHaveLength(1);
    expect(textOf(await main.client.callTool({ name: 'mcp-x-vv-vz_tool' }))).toBe('tools version v-vz');
    expect(main.stderr()).toMatch(
      /warning: tool name mcp-x-vv-vz_tool \(separator "-"\) stands for both tool "vv-vz_tool" of server "x" and tool "vz_tool" of server "x-vv"; only the first is served\. Use another separator/,
    );
  });

  it('refuses a separator clients cannot use, saying what is allowed (exit 2, nothing started)', async () => {
    const bad = await runCliCaptured(['serve', '--http', '--separator', '.', ...ws.args()], ws.env(), ws.root);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--separator "\." is not allowed: it must be 1 to 8 characters from A-Z, a-z, 0-9, "_" and "-"/);
    expect(bad.stderr).toMatch(/hint: e\.g\. --separator - gives mcp-<server>-<tool>/);
    expect(bad.stderr).not.toMatch(/listening/);
  });
});

describe('serve --http --separator _', () => {
  const gw = new HttpServe();
  let session: HttpConnected;

  beforeAll(async () => {
    gw.ws.writeUser({ a: gw.ws.server('1'), b: gw.ws.server('1') });
    await gw.start(['--separator', '_']);
    session = await gw.open('?servers=a');
  });

  afterAll(async () => {
    const { code, stderr, left } = await gw.stop();
    expect(left, 'processes left behind').toBe(0);
    expect(code, stderr).toBe(0);
  });

  it('a scoped session lists, calls and gets prompts by mcp_<server>_<name>; another server’s name is outside its scope', async () => {
    const names = (await session.client.listTools()).tools.map((t) => t.name).sort();
    expect(names).toEqual(['mcp_a_add', 'mcp_a_echo', 'mcp_a_env', 'mcp_a_pid', 'mcp_a_v1_tool']);
    expect((await session.client.callTool({ name: 'mcp_a_add', arguments: { a: 2, b: 3 } })).structuredContent).toEqual({ sum: 5 });
    expect(JSON.stringify((await session.client.getPrompt({ name: 'mcp_a_greet', arguments: { who: 'http' } })).messages)).toContain('Hello, http!');
    const outside = await session.client.callTool({ name: 'mcp_b_echo', arguments: { text: 'x' } });
    expect(outside.isError).toBe(true);
    expect(textOf(outside)).toMatch(/Tool mcp_b_echo is not available in this session: its MCP server "b" is outside the session's servers \(a\)/);
  });
});
