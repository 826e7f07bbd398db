/**
 * `disable` / `enable` run as the built binary while `serve --stdio` (also
 * the built binary) runs for the same workspace: the gateway drops the tool
 * at once with tools/list_changed, neither the gateway nor `call` can call
 * it, `why` says who disabled it, and `enable` brings it back. Once in the
 * host's own field (the default format's `excludeTools`), once in Claude
 * Code's own `disabledMcpServers` (its tools in the workspace state file).
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { defaultWorkspaceStatePath } from '../../src/config/workspace-state.js';
import { cliBin } from '../helpers/fixtures.js';
import { waitFor } from '../helpers/processes.js';
import { connectStdio, textOf, Workspace, type StdioConnected } from '../gateway/support.js';

function bin(ws: Workspace, argv: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    // execFile waits for the exit; its timeout kills a hung child so none outlives the test.
    const child = execFile(process.execPath, [cliBin, ...argv, ...ws.args()], { env: ws.env(), timeout: 60_000 }, (_err, stdout, stderr) =>
      done({ code: child.exitCode, stdout, stderr }),
    );
  });
}

const names = async (gw: StdioConnected) => (await gw.client.listTools()).tools.map((t) => t.name);

describe('enable / disable against a running gateway', () => {
  const spaces: Workspace[] = [];
  const clients: StdioConnected[] = [];
  afterAll(async () => {
    for (const c of clients) await c.client.close().catch(() => undefined);
    for (const ws of spaces) expect(await ws.cleanup(), 'processes left behind').toBe(0);
  });

  it("in the host's own field: the tool leaves the gateway with list_changed and is not callable there or by `call`; enable restores it and the file", async () => {
    const ws = new Workspace();
    spaces.push(ws);
    ws.writeUser({ a: ws.server('1') });
    const original = readFileSync(ws.userConfig, 'utf8');
    const gw = await connectStdio(ws);
    clients.push(gw);
    expect(await names(gw)).toContain('mcp__a__echo');

    const before = gw.toolChanges();
    const off = await bin(ws, ['disable', 'a', '--tool', 'echo']);
    expect(off).toEqual({
      code: 0,
      stderr: '',
      stdout: `disabled tool "echo" of "a" in ${ws.userConfig} (its "excludeTools" field)\nprevious version kept as ${ws.userConfig}.bak\na running watch or serve of this workspace applies it now; undo with: mcp-reconciler enable a --tool echo\n`,
    });
    await waitFor(() => gw.toolChanges() > before, 'tools/list_changed from the gateway');
    await waitFor(async () => !(await names(gw)).includes('mcp__a__echo'), 'echo to leave the gateway list');
    expect(await names(gw)).toContain('mcp__a__add');

    const through = await gw.client.callTool({ name: 'mcp__a__echo', arguments: { text: 'x' } });
    expect(through.isError).toBe(true);
    expect(textOf(through)).toBe(`Tool mcp__a__echo of MCP server "a" is not registered: disabled by ${ws.userConfig} (enable it with \`mcp-reconciler enable a --tool echo\`).`);
    const call = await bin(ws, ['call', 'mcp__a__echo', '{"text":"x"}']);
    expect(call.code).not.toBe(0);
    expect(call.stderr).toContain(`Tool mcp__a__echo of MCP server "a" is disabled by ${ws.userConfig}`);
    const why = await bin(ws, ['why', 'mcp__a__echo']);
    expect(why.stdout).toContain('To fix: enable it with `mcp-reconciler enable a --tool echo`');

    const back = gw.toolChanges();
    expect((await bin(ws, ['enable', 'a', '--tool', 'echo'])).code).toBe(0);
    await waitFor(() => gw.toolChanges() > back, 'tools/list_changed after enable');
    await waitFor(async () => (await names(gw)).includes('mcp__a__echo'), 'echo back in the gateway list');
    expect(textOf(await gw.client.callTool({ name: 'mcp__a__echo', arguments: { text: 'again' } }))).toBe('again');
    expect(readFileSync(ws.userConfig, 'utf8')).toBe(original);
  });

  it("in Claude Code's own field (projects[<root>].disabledMcpServers): the running gateway picks it up; disabling the server drops all its tools; a tool switch goes to the state file", async () => {
    const ws = new Workspace();
    spaces.push(ws);
    ws.writeUser({ cc: ws.server('1') });
    const original = readFileSync(ws.userConfig, 'utf8');
    const gw = await connectStdio(ws, ['--preset', 'claude-code']);
    clients.push(gw);
    expect(await names(gw)).toContain('mcp__cc__echo');
    const statePath = defaultWorkspaceStatePath(ws.root, ws.env());

    const off = await bin(ws, ['disable', 'cc', '--preset', 'claude-code']);
    expect(off.code).toBe(0);
    expect(off.stdout).toContain(`disabled "cc" in ${ws.userConfig} (its "disabledMcpServers" field)`);
    const written = JSON.parse(readFileSync(ws.userConfig, 'utf8')) as { projects: Record<string, { disabledMcpServers: string[] }> };
    expect(Object.values(written.projects).map((p) => p.disabledMcpServers)).toEqual([['cc']]);
    await waitFor(async () => !(await names(gw)).some((n) => n.startsWith('mcp__cc__')), 'cc to leave the gateway');
    await waitFor(() => ws.serverPids().length === 0, 'the disabled server to stop');
    const through = await gw.client.callTool({ name: 'mcp__cc__echo', arguments: { text: 'x' } });
    expect(through.isError).toBe(true);
    expect(textOf(through)).toContain(`MCP server "cc" is disabled by disabledMcpServers in ${ws.userConfig}`);

    expect((await bin(ws, ['enable', 'cc', '--preset', 'claude-code'])).code).toBe(0);
    expect(readFileSync(ws.userConfig, 'utf8')).toBe(original);
    await waitFor(async () => (await names(gw)).includes('mcp__cc__echo'), 'cc back in the gateway');
    expect(textOf(await gw.client.callTool({ name: 'mcp__cc__echo', arguments: { text: 'on' } }))).toBe('on');

    // Claude Code has no per-tool field: a tool switch is kept in the workspace state file.
    const tool = await bin(ws, ['disable', 'cc', '--tool', 'echo', '--preset', 'claude-code']);
    expect(tool.stdout).toContain(`disabled tool "echo" of "cc": kept in the workspace state file ${statePath}`);
    expect(readFileSync(ws.userConfig, 'utf8')).toBe(original);
  });

  it('an unknown server exits 1 naming the configured ones', async () => {
    const ws = new Workspace();
    spaces.push(ws);
    ws.writeUser({ a: ws.server('1') });
    const r = await bin(ws, ['disable', 'nope']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('error: no MCP server named "nope" is configured\nhint: configured servers: a\n');
  });
});
