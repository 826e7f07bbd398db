/**
 * `mcp-reconciler serve --stdio` (the built binary) with the SDK's own
 * `Client` at the other end, like an MCP client that starts it: tools and
 * prompts of the managed servers, forwarded calls, list_changed after a
 * config edit, the approval gate, `--servers`, and a clean exit when the
 * client goes away.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliCaptured } from '../helpers/cli.js';
import { pidAlive, waitFor } from '../helpers/processes.js';
import { connectStdio as connect, textOf, Workspace, type StdioConnected as Connected } from './support.js';

describe('serve --stdio', () => {
  const ws = new Workspace();
  let main: Connected;

  beforeAll(async () => {
    ws.writeUser({ a: ws.server('1'), b: ws.server('1') });
    // A project server: gated, and never approved in this workspace.
    ws.writeProject({ p: ws.server('1') });
    main = await connect(ws);
  });

  afterAll(async () => {
    await main?.client.close().catch(() => undefined);
    const left = await ws.cleanup();
    expect(left, 'processes left behind by the stdio gateway').toBe(0);
  });

  it('lists the managed servers’ tools and prompts as mcp__<server>__<name> and forwards a call', async () => {
    const { tools } = await main.client.listTools();
    const names = tools.map((t) => t.name);
    for (const server of ['a', 'b']) {
      for (const tool of ['echo', 'add', 'v1_tool', 'env', 'pid']) expect(names).toContain(`mcp__${server}__${tool}`);
    }
    expect(names.some((n) => n.startsWith('mcp__p__')), 'the pending server lists nothing').toBe(false);
    expect(main.client.getServerVersion()?.name).toBe('mcp-reconciler');

    const echo = await main.client.callTool({ name: 'mcp__a__echo', arguments: { text: 'through the gateway' } });
    expect(echo.isError).toBeFalsy();
    expect(textOf(echo)).toBe('through the gateway');
    const add = await main.client.callTool({ name: 'mcp__b__add', arguments: { a: 2, b: 3 } });
    expect(add.structuredContent).toEqual({ sum: 5 });

    const { prompts } = await main.client.listPrompts();
    expect(prompts.map((p) => p.name).sort()).toEqual(['mcp__a__greet', 'mcp__b__greet']);
    const greet = await main.client.getPrompt({ name: 'mcp__a__greet', arguments: { who: 'gateway' } });
    expect(JSON.stringify(greet.messages)).toContain('Hello, gateway!');
  });

  it('a server waiting for approval is started for no session; its tool answers with the reason and the fix', async () => {
    await main.client.listTools();
    expect(ws.serverPids()).toHaveLength(2); // a and b, not p
    const result = await main.client.callTool({ name: 'mcp__p__echo', arguments: { text: 'x' } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/"p" is waiting for your approval/);
    expect(textOf(result)).toMatch(/mcp-reconciler approve p/);
    expect(main.stderr()).toMatch(/"p" is waiting for approval; it starts once you run: mcp-reconciler approve p --cwd /);
  });

  it('sends tools/list_changed (and prompts) after a config edit, and lists the new tools', async () => {
    const before = main.toolChanges();
    const promptsBefore = main.promptChanges();
    ws.writeUser({ a: ws.server('1'), b: ws.server('2') });
    await waitFor(() => main.toolChanges() > before, 'notifications/tools/list_changed');
    await waitFor(async () => (await main.client.listTools()).tools.some((t) => t.name === 'mcp__b__v2_tool'), 'mcp__b__v2_tool to be listed');
    const names = (await main.client.listTools()).tools.map((t) => t.name);
    expect(names).not.toContain('mcp__b__v1_tool');
    expect(names).toContain('mcp__a__v1_tool');
    expect(textOf(await main.client.callTool({ name: 'mcp__b__v2_tool', arguments: {} }))).toBe('tools version 2');
    // b's prompts left with its old generation and came back with the new one.
    await waitFor(() => main.promptChanges() > promptsBefore, 'notifications/prompts/list_changed');
  });

  it('approving the pending server in another terminal starts it and announces its tools', async () => {
    const before = main.toolChanges();
    const approve = await runCliCaptured(['approve', 'p', ...ws.args()], ws.env(), ws.root);
    expect(approve.code, approve.stderr).toBe(0);
    await waitFor(() => main.toolChanges() > before, 'tools/list_changed after the approval');
    await waitFor(async () => (await main.client.listTools()).tools.some((t) => t.name === 'mcp__p__echo'), 'mcp__p__echo to be listed');
    expect(textOf(await main.client.callTool({ name: 'mcp__p__echo', arguments: { text: 'approved' } }))).toBe('approved');
  });

  it('--servers limits the session to those servers', async () => {
    const scoped = await connect(ws, ['--servers', 'a']);
    try {
      const names = (await scoped.client.listTools()).tools.map((t) => t.name);
      expect(names.length).toBeGreaterThan(0);
      expect(names.every((n) => n.startsWith('mcp__a__'))).toBe(true);
      const outside = await scoped.client.callTool({ name: 'mcp__b__echo', arguments: { text: 'x' } });
      expect(outside.isError).toBe(true);
      expect(textOf(outside)).toMatch(/outside the session's servers \(a\)/);
    } finally {
      await scoped.client.close();
    }
  });

  it('starts only the servers its session names: with --servers, the others never start', async () => {
    const ws3 = new Workspace();
    try {
      ws3.writeUser({ one: ws3.server('1'), two: ws3.server('1') });
      const c = await connect(ws3, ['--servers', 'one', '--idle-timeout', '200']);
      try {
        const pid = textOf(await c.client.callTool({ name: 'mcp__one__pid', arguments: {} }));
        expect(ws3.serverPids()).toEqual([Number(pid)]);
        expect((await c.client.listTools()).tools.every((t) => t.name.startsWith('mcp__one__'))).toBe(true);
        expect(c.stderr()).toMatch(/not running until a session uses them: two/);
      } finally {
        await c.client.close();
      }
    } finally {
      expect(await ws3.cleanup()).toBe(0);
    }
  });

  it('ends with its client: closing stdin stops the gateway and every server it started', async () => {
    const ws2 = new Workspace();
    try {
      ws2.writeUser({ one: ws2.server('1') });
      const c = await connect(ws2);
      await c.client.listTools();
      const servers = ws2.serverPids();
      expect(servers).toHaveLength(1);
      const gateway = c.transport.pid!;
      // Close stdin only (no signal): what a client that exits does to us.
      (c.transport as unknown as { _process?: { stdin?: NodeJS.WritableStream } })._process?.stdin?.end();
      await waitFor(() => !pidAlive(gateway) && servers.every((p) => !pidAlive(p)), 'the gateway and its server to exit');
      await c.client.close().catch(() => undefined);
    } finally {
      expect(await ws2.cleanup()).toBe(0);
    }
  });
});
