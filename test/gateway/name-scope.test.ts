/**
 * A session's scope holds for the server that would answer, whatever name
 * the client sends. Server names are sanitised (`files (admin)` becomes
 * `files__admin_`), so under `--separator -` the name `mcp-files-admin___pid`
 * starts with the prefix of `files` while its remainder spells the registry
 * name of `files (admin)`'s tool. A session scoped to `files` must get an
 * error for it, for the prompt named alike and for the out-of-scope
 * server's resources, and the out-of-scope servers (dormant, their cached
 * listing registered) must not start, over stdio and over HTTP.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixturePath } from '../helpers/fixtures.js';
import { waitFor } from '../helpers/processes.js';
import { connectHttp, connectStdio, MARKER, startServeHttp, textOf, Workspace, type ServeProcess } from './support.js';

/** Environment variable marking the out-of-scope servers' processes. */
const ROLE = 'GATEWAY_TEST_ROLE';

const ws = new Workspace();

function notes(instance: string, extraEnv: Record<string, string> = {}): Record<string, unknown> {
  return { command: process.execPath, args: [fixturePath('resource-server')], env: { INSTANCE: instance, [MARKER]: ws.mark, ...extraEnv } };
}

/** Live processes of the out-of-scope servers. */
function adminPids(): number[] {
  return ws.markedPids().filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(`${ROLE}=admin`);
    } catch {
      return false;
    }
  });
}

beforeAll(async () => {
  ws.writeUser({
    files: ws.server('f'),
    'files (admin)': ws.server('x', { [ROLE]: 'admin' }),
    notes: notes('notes'),
    'notes (admin)': notes('admin', { [ROLE]: 'admin' }),
  });
  // One unscoped session starts every server once, so their listings are cached: from then on
  // the out-of-scope servers rest dormant with their tools, prompts and resources registered.
  const prime = await connectStdio(ws);
  try {
    expect((await prime.client.listTools()).tools.map((t) => t.name)).toContain('mcp__files__admin___pid');
  } finally {
    await prime.client.close();
  }
  // The gateway writes the listing cache out before it exits.
  await waitFor(() => ws.markedPids().length === 0, 'the priming gateway and its servers to exit');
});

afterAll(async () => {
  expect(await ws.cleanup(), 'processes left behind').toBe(0);
});

describe('serve --stdio --separator - --servers files,notes', () => {
  it('a name whose remainder spells an out-of-scope server’s tool or prompt is refused, and that server never starts', async () => {
    const s = await connectStdio(ws, ['--separator', '-', '--servers', 'files,notes']);
    try {
      const names = (await s.client.listTools()).tools.map((t) => t.name);
      expect(names).toContain('mcp-files-pid');
      expect(names.filter((n) => !n.startsWith('mcp-files-') && !n.startsWith('mcp-notes-'))).toEqual([]);
      const own = Number(textOf(await s.client.callTool({ name: 'mcp-files-pid' })));
      expect(ws.markedPids()).toContain(own);

      const call = await s.client.callTool({ name: 'mcp-files-admin___pid' });
      expect(call.isError, textOf(call)).toBe(true);
      expect(textOf(call)).toMatch(/^MCP server "files" does not provide tool mcp-files-admin___pid\. List the session's tools with tools\/list\./);
      await expect(s.client.getPrompt({ name: 'mcp-files-admin___greet', arguments: { who: 'x' } })).rejects.toThrow(
        /MCP server "files" does not provide prompt mcp-files-admin___greet/,
      );
      // The real names of the out-of-scope server's entries are refused as outside the session.
      const outside = await s.client.callTool({ name: 'mcp-files__admin_-pid' });
      expect(textOf(outside)).toMatch(/is not available in this session: its MCP server "files \(admin\)" is outside the session's servers \(files, notes\)/);
      // Its resources too: the in-scope server answers, the other's URI is not found.
      expect(JSON.stringify(await s.client.readResource({ uri: 'note://static/hello' }))).toContain('hello from notes');
      await expect(s.client.readResource({ uri: 'note://dynamic/none' })).rejects.toThrow(/not provided by any available MCP server/);
      expect(adminPids()).toEqual([]);
    } finally {
      await s.client.close();
    }
  });

  it('with --servers files only, the other servers’ resources are not found and they never start', async () => {
    const s = await connectStdio(ws, ['--separator', '-', '--servers', 'files']);
    try {
      await expect(s.client.readResource({ uri: 'note://static/hello' })).rejects.toThrow(/Resource note:\/\/static\/hello is not provided by any available MCP server/);
      await expect(s.client.readResource({ uri: 'note://notes/7' })).rejects.toThrow(/not provided by any available MCP server/);
      expect(adminPids()).toEqual([]);
    } finally {
      await s.client.close();
    }
  });
});

describe('serve --http --separator -', () => {
  let serve: ServeProcess;
  let url: string;
  let token: string;

  beforeAll(async () => {
    await waitFor(() => ws.markedPids().length === 0, 'the stdio gateways to exit');
    ({ serve, url, token } = await startServeHttp(ws, ['--separator', '-']));
  });

  afterAll(async () => {
    const exit = await serve?.stop();
    expect(exit?.code, serve?.stderr).toBe(0);
  });

  it('a session scoped to files gets errors for the look-alike names; files (admin) never starts', async () => {
    const s = await connectHttp(url, token, '?servers=files');
    try {
      expect(textOf(await s.client.callTool({ name: 'mcp-files-echo', arguments: { text: 'in scope' } }))).toBe('in scope');
      const call = await s.client.callTool({ name: 'mcp-files-admin___pid' });
      expect(call.isError, textOf(call)).toBe(true);
      expect(textOf(call)).toMatch(/does not provide tool mcp-files-admin___pid/);
      const echo = await s.client.callTool({ name: 'mcp-files-admin___echo', arguments: { text: 'leak' } });
      expect(echo.isError, textOf(echo)).toBe(true);
      await expect(s.client.getPrompt({ name: 'mcp-files-admin___greet', arguments: { who: 'x' } })).rejects.toThrow(/does not provide prompt mcp-files-admin___greet/);
      await expect(s.client.readResource({ uri: 'note://static/hello' })).rejects.toThrow(/not provided by any available MCP server/);
      expect(adminPids()).toEqual([]);
    } finally {
      await s.transport.terminateSession().catch(() => undefined);
      await s.client.close();
    }
  });
});
