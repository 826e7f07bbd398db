/**
 * The daemon's faults, with real processes: the daemon SIGKILLed mid-call
 * (the call fails with a clear error, the shim reattaches to a fresh daemon
 * by itself, the tools come back, the dead daemon's servers die), a client
 * SIGKILLed (its holds are released, idle stop applies, the daemon exits
 * idle), two clients racing to start the daemon (one daemon), and a daemon
 * of another build (a clear refusal).
 */
import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { fixturePath } from '../helpers/fixtures.js';
import { pidAlive, waitFor } from '../helpers/processes.js';
import { connectStdio, MARKER, textOf, type StdioConnected } from '../gateway/support.js';
import { daemonDir, daemonPaths, ensurePrivateDir } from '../../src/daemon/paths.js';
import { closeAll, daemonWorkspace, RawShim } from './support.js';

describe('the daemon SIGKILLed mid-call', () => {
  const clients: StdioConnected[] = [];
  const ws = daemonWorkspace(() => closeAll(clients));

  it('the call in flight fails saying so; the session reattaches to a new daemon and its tools come back; the old servers die', async () => {
    ws.writeUser({
      a: ws.server('1'),
      slow: { command: process.execPath, args: [fixturePath('slow-tool-server')], env: { [MARKER]: ws.mark } },
    });
    clients.push(await connectStdio(ws, ['--shared']), await connectStdio(ws, ['--shared']));
    const [one, two] = clients as [StdioConnected, StdioConnected];
    expect((await one.client.listTools()).tools.map((t) => t.name)).toContain('mcp__slow__sleep');
    await two.client.listTools();
    const before = await ws.status();
    const oldDaemon = before!.pid;
    const oldServers = before!.workspaces[0]!.servers.map((s) => s.pid!);
    expect(oldServers).toHaveLength(2);

    const call = one.client.callTool({ name: 'mcp__slow__sleep', arguments: { ms: 120_000 } }, undefined, { timeout: 180_000 });
    const changes = [one.toolChanges(), two.toolChanges()];
    await waitFor(async () => (await ws.status())?.workspaces[0]?.sessions.length === 2, 'the call to be under way', 60_000);
    process.kill(oldDaemon, 'SIGKILL');

    await expect(call).rejects.toThrow(/daemon \(pid \d+\) ended while this tools\/call request was in flight.*send it again/s);
    // Both sessions are told to list again, and do get their tools from a new daemon.
    await waitFor(() => one.toolChanges() > changes[0]! && two.toolChanges() > changes[1]!, 'tools/list_changed after the reattach', 60_000);
    expect((await one.client.listTools()).tools.map((t) => t.name)).toContain('mcp__slow__sleep');
    expect(textOf(await two.client.callTool({ name: 'mcp__a__echo', arguments: { text: 'back' } }))).toBe('back');
    const after = await ws.status();
    expect(after!.pid).not.toBe(oldDaemon);
    expect(after!.workspaces[0]!.sessions).toHaveLength(2);
    // Nothing orphaned: the dead daemon's servers are gone (its watchdog), one new set runs.
    await waitFor(() => oldServers.every((p) => !pidAlive(p)), 'the dead daemon’s servers to exit');
    expect(ws.daemonPids()).toEqual([after!.pid]);
    expect(ws.markedPids().filter((p) => ws.serverPids().includes(p) || p === after!.pid).length).toBeGreaterThan(0);
    expect(one.stderr()).toMatch(/reattached to the daemon/);
  });
});

describe('a client SIGKILLed', () => {
  const shims: RawShim[] = [];
  const ws = daemonWorkspace(() => shims.forEach((s) => s.child.kill('SIGKILL')), 3_000);

  it('its holds are released, its servers stop after their idle timeout, and the idle daemon exits', async () => {
    ws.writeUser({ a: ws.server('1') });
    const shim = new RawShim(ws, ['--idle-timeout', '500']);
    shims.push(shim);
    await shim.initialize();
    shim.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'mcp__a__pid', arguments: {} } });
    const pid = Number(((await shim.answer(2)).result as { content: { text: string }[] }).content[0]!.text);
    expect(pidAlive(pid)).toBe(true);
    const status = await ws.status();
    expect(status!.workspaces[0]!.sessions.map((s) => s.pid)).toEqual([shim.child.pid]);
    const daemon = status!.pid;

    shim.child.kill('SIGKILL');
    // Ended in the daemon: no session left (the idle daemon may already have closed the workspace, or exited).
    await waitFor(async () => {
      const now = await ws.status();
      return now === undefined || now.workspaces.every((w) => w.sessions.length === 0);
    }, 'the session to end in the daemon', 60_000);
    await waitFor(() => !pidAlive(pid), 'the released server to stop after its idle timeout');
    await waitFor(() => !pidAlive(daemon), 'the daemon to exit after its idle timeout', 30_000);
    expect(ws.markedPids()).toEqual([]);
  });
});

describe('two clients racing to start the daemon', () => {
  const clients: StdioConnected[] = [];
  const ws = daemonWorkspace(() => closeAll(clients));

  it('start one daemon between them, and both are served', async () => {
    ws.writeUser({ a: ws.server('1') });
    clients.push(...(await Promise.all([connectStdio(ws, ['--shared']), connectStdio(ws, ['--shared']), connectStdio(ws, ['--shared'])])));
    for (const c of clients) expect((await c.client.listTools()).tools.map((t) => t.name)).toContain('mcp__a__echo');
    expect(ws.daemonPids()).toHaveLength(1);
    expect(ws.serverPids()).toHaveLength(1);
    expect((await ws.status())!.workspaces[0]!.sessions).toHaveLength(3);
  });
});

describe('a daemon of another build', () => {
  const ws = daemonWorkspace();
  let close: (() => void) | undefined;
  afterEach(() => close?.());

  it('the daemon refuses a client of another build, saying which builds they are', async () => {
    ws.writeUser({ a: ws.server('1') });
    const shim = new RawShim(ws);
    await shim.initialize();
    const status = (await ws.status())!;
    const { connectSocket, greet } = await import('../../src/daemon/client.js');
    const socket = await connectSocket(status.socket);
    await expect(greet(socket, { protocol: 1, build: '0.0.0-other', kind: 'status', pid: process.pid })).rejects.toThrow(
      new RegExp(`daemon \\(pid ${status.pid}\\) is mcp-reconciler .*build ${status.build}; the client is build 0\\.0\\.0-other`),
    );
    shim.child.stdin.end();
    await waitFor(() => !shim.alive(), 'the shim to exit');
  });

  it('a shim answered by a daemon of another build refuses clearly instead of serving through it', async () => {
    const status = (await ws.status())!;
    await ws.cli(['daemon', '--stop']);
    await waitFor(() => !pidAlive(status.pid), 'the daemon to stop');
    // An impostor at this build's socket that claims to be another build.
    const paths = daemonPaths(daemonDir(ws.env()), status.build);
    ensurePrivateDir(paths.dir);
    const server = createServer((s) => {
      s.once('data', () => s.write(`${JSON.stringify({ ok: true, build: '9.9.9-elsewhere', version: '9.9.9', pid: 4242 })}\n`));
    });
    await new Promise<void>((resolve) => server.listen(paths.socket, resolve));
    close = () => server.close();
    const shim = new RawShim(ws);
    const exit = await new Promise<number | null>((resolve) => shim.child.once('exit', (code) => resolve(code)));
    expect(exit).toBe(1);
    expect(shim.stderr).toMatch(/the daemon at this socket is mcp-reconciler 9\.9\.9 \(build 9\.9\.9-elsewhere, pid 4242\), not this build/);
    expect(shim.stderr).toMatch(/hint: /);
  });
});
