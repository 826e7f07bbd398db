/**
 * `mcp-reconciler daemon` and `serve --stdio --shared` with real processes
 * (the built bin, fixture servers): several SDK clients and the Inspector
 * CLI through the shim at once share one process per server; scopes and the
 * approval gate hold per session; `status --shared` shows who holds what.
 */
import { execFile } from 'node:child_process';
import { dirname } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { modulePath } from '../helpers/fixtures.js';
import { cliMain, connectStdio, textOf, type StdioConnected } from '../gateway/support.js';
import { closeAll, daemonWorkspace, type DaemonWorkspace } from './support.js';

const INSPECTOR = modulePath('@modelcontextprotocol/inspector-cli/build/index.js');

function inspector(ws: DaemonWorkspace, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [INSPECTOR, ...args], { cwd: dirname(INSPECTOR), env: ws.env(), timeout: 90_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

describe('serve --stdio --shared: many sessions, one daemon, one process per server', () => {
  const clients: StdioConnected[] = [];
  const ws = daemonWorkspace(() => closeAll(clients));

  beforeAll(() => {
    ws.writeUser({ a: ws.server('1'), b: ws.server('1') });
    // A project server: gated, never approved here.
    ws.writeProject({ p: ws.server('1') });
  });

  it('three SDK clients and the Inspector CLI at once: the same tools, the same server processes', async () => {
    // The first client starts the daemon; the others attach to it.
    clients.push(...(await Promise.all([connectStdio(ws, ['--shared']), connectStdio(ws, ['--shared']), connectStdio(ws, ['--shared', '--servers', 'a'])])));
    const [one, two, scoped] = clients as [StdioConnected, StdioConnected, StdioConnected];
    const names = (await one.client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['mcp__a__echo', 'mcp__b__echo']));
    expect(names.some((n) => n.startsWith('mcp__p__')), 'the pending server lists nothing').toBe(false);
    expect((await two.client.listTools()).tools.map((t) => t.name).sort()).toEqual([...names].sort());
    // A session keeps its own scope.
    const scopedNames = (await scoped.client.listTools()).tools.map((t) => t.name);
    expect(scopedNames.every((n) => n.startsWith('mcp__a__'))).toBe(true);
    expect(textOf(await scoped.client.callTool({ name: 'mcp__b__echo', arguments: { text: 'x' } }))).toMatch(/not in this session|outside|scope/i);

    const [inspected, pidOne, pidTwo] = await Promise.all([
      inspector(ws, [process.execPath, '--method', 'tools/call', '--tool-name', 'mcp__a__pid', '--', cliMain, 'serve', '--stdio', '--shared', ...ws.args()]),
      one.client.callTool({ name: 'mcp__a__pid', arguments: {} }),
      two.client.callTool({ name: 'mcp__a__pid', arguments: {} }),
    ]);
    expect(inspected.code, inspected.stderr).toBe(0);
    const pidInspector = (JSON.parse(inspected.stdout) as { content: { text: string }[] }).content[0]!.text;
    expect(textOf(pidOne)).toBe(textOf(pidTwo));
    expect(pidInspector).toBe(textOf(pidOne));
    expect(ws.serverPids(), 'one process per server for every session').toHaveLength(2);
    expect(ws.daemonPids()).toHaveLength(1);
  });

  it('the approval gate is the daemon’s: a pending server starts for no session, and its tool says why', async () => {
    const [one] = clients as [StdioConnected];
    const result = await one.client.callTool({ name: 'mcp__p__echo', arguments: { text: 'x' } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/"p" is waiting for your approval/);
    expect(ws.serverPids()).toHaveLength(2);
  });

  it('status --shared lists the workspace, its sessions and which session holds which server', async () => {
    const status = await ws.status();
    expect(status?.workspaces).toHaveLength(1);
    const w = status!.workspaces[0]!;
    expect(w.root).toBe(ws.root);
    expect(w.sessions).toHaveLength(3);
    const scoped = w.sessions.find((s) => s.servers?.join(',') === 'a');
    expect(scoped, 'the --servers a session').toBeDefined();
    const a = w.servers.find((s) => s.name === 'a')!;
    const b = w.servers.find((s) => s.name === 'b')!;
    expect(a.heldBy).toHaveLength(3);
    expect(b.heldBy).toHaveLength(2);
    expect(b.heldBy).not.toContain(scoped!.id);
    expect(a.state).toBe('connected');
    expect(ws.serverPids()).toContain(a.pid);

    const text = await ws.cli(['status', '--shared']);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/daemon pid \d+/);
    expect(text.stdout).toMatch(/HELD BY/);
    expect(text.stdout).toContain('gateway-test');
  });
});
