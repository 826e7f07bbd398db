/**
 * `createMcpController({ shared: true })`: the library as a session on the
 * user's daemon (started on demand by the built bin): tools, calls, the
 * server process shared with a `serve --stdio --shared` session, and a
 * daemon loss that fails the call in flight and comes back by itself.
 */
import { describe, expect, it } from 'vitest';
import { createMcpController, type SharedMcpController } from '../../src/index.js';
import { fixturePath } from '../helpers/fixtures.js';
import { pidAlive, waitFor } from '../helpers/processes.js';
import { cliMain, connectStdio, MARKER, textOf, type StdioConnected } from '../gateway/support.js';
import { daemonWorkspace } from './support.js';

describe('createMcpController({ shared: true })', () => {
  let shared: SharedMcpController | undefined;
  let other: StdioConnected | undefined;
  const ws = daemonWorkspace(async () => {
    await shared?.dispose();
    await other?.client.close().catch(() => undefined);
  });

  it('lists and calls the daemon’s tools, shares its servers with shim sessions, and survives a daemon loss', async () => {
    ws.writeUser({
      a: ws.server('1'),
      slow: { command: process.execPath, args: [fixturePath('slow-tool-server')], env: { [MARKER]: ws.mark } },
    });
    shared = createMcpController({ shared: true, cwd: ws.root, userConfig: ws.userConfig, approvals: ws.approvals, env: ws.env(), bin: cliMain });
    await shared.start();
    expect(shared.tools().map((t) => t.name)).toEqual(expect.arrayContaining(['mcp__a__echo', 'mcp__slow__sleep']));
    expect(textOf(await shared.callTool('mcp__a__echo', { text: 'library' }))).toBe('library');

    other = await connectStdio(ws, ['--shared']);
    const viaShim = textOf(await other.client.callTool({ name: 'mcp__a__pid', arguments: {} }));
    expect(textOf(await shared.callTool('mcp__a__pid'))).toBe(viaShim);
    expect(ws.serverPids()).toHaveLength(1);
    expect(ws.daemonPids()).toHaveLength(1);
    expect((await ws.status())!.workspaces[0]!.sessions).toHaveLength(2);

    const daemon = (await ws.status())!.pid;
    const call = shared.callTool('mcp__slow__sleep', { ms: 120_000 });
    let changes = 0;
    shared.on('tools-changed', () => changes++);
    process.kill(daemon, 'SIGKILL');
    await expect(call).rejects.toThrow();
    await waitFor(() => changes > 0, 'the tools listed again from a new daemon', 60_000);
    expect(shared.tools().map((t) => t.name)).toContain('mcp__a__echo');
    expect(textOf(await shared.callTool('mcp__a__echo', { text: 'again' }))).toBe('again');
    await waitFor(() => !pidAlive(daemon), 'the old daemon gone');
  });
});
