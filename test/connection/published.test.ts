import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { desiredServer, modulePath } from '../helpers/fixtures.js';
import { waitFor } from '../helpers/processes.js';
import { connectionsInTempDir, eventLog, firstText } from './support.js';
import { freePort } from '../helpers/ports.js';

const { tracker, connect, options, cwd: tmp } = connectionsInTempDir('mcp-published-', 1_000);
const everything = modulePath('@modelcontextprotocol/server-everything/dist/index.js');

describe('@modelcontextprotocol/server-everything', () => {
  it('connects over stdio with the tools it registers after initialize', async () => {
    const conn = await connect(desiredServer('everything', { command: process.execPath, args: [everything, 'stdio'] }), options());
    const names = conn.tools.map((t) => t.name);
    expect(names).toContain('echo');
    // Registered in `oninitialized`, announced with tools/list_changed.
    expect(names).toContain('simulate-research-query');
    expect(conn.prompts.length).toBeGreaterThan(0);
    expect(firstText(await conn.callTool('echo', { message: 'hi' }))).toContain('hi');
    const pid = conn.pid!;
    await conn.close();
    expect(tracker.pids()).not.toContain(pid);
  });

  it('over streamable HTTP, an unknown session answered with 400 is a lost session', async () => {
    const port = await freePort();
    const child = tracker.spawn(process.execPath, [everything, 'streamableHttp'], { env: { ...process.env, PORT: String(port) }, cwd: tmp });
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdout?.resume();
    await waitFor(() => stderr.includes('listening on port'), 'server-everything to listen');
    const url = `http://127.0.0.1:${port}/mcp`;
    const log = eventLog();
    const conn = await connect(desiredServer('everything-http', { type: 'http', url }), options({ onEvent: log.onEvent }));
    expect(conn.tools.map((t) => t.name)).toContain('echo');
    const sessionId = conn.client.transport?.sessionId;
    expect(sessionId).toBeTypeOf('string');
    // End the session behind the client's back, as an eviction would.
    const deleted = await fetch(url, { method: 'DELETE', headers: { 'mcp-session-id': sessionId! } });
    expect(deleted.ok).toBe(true);
    await expect(conn.listTools()).rejects.toThrow();
    await waitFor(() => log.lost().length > 0, 'the lost event');
    await conn.close();
    expect(log.lost()).toHaveLength(1);
    expect(log.lost()[0]).toMatchObject({ sessionLost: true });
    expect(log.lost()[0]!.error).toContain('HTTP 400');
    await tracker.killTree(child.pid!);
  });
});

describe('@modelcontextprotocol/server-memory', () => {
  it('connects over stdio and answers read_graph', async () => {
    const memoryFile = join(tmp, 'memory.jsonl');
    const conn = await connect(
      desiredServer('memory', {
        command: process.execPath,
        args: [modulePath('@modelcontextprotocol/server-memory/dist/index.js')],
        env: { MEMORY_FILE_PATH: memoryFile },
      }),
      options(),
    );
    expect(conn.tools.map((t) => t.name)).toEqual(expect.arrayContaining(['create_entities', 'read_graph']));
    const graph = await conn.callTool('read_graph', {});
    expect(graph.structuredContent).toMatchObject({ entities: [], relations: [] });
  });
});

describe('@modelcontextprotocol/server-filesystem', () => {
  it('connects over stdio with an allowed directory and lists it', async () => {
    writeFileSync(join(tmp, 'hello.txt'), 'hello');
    const conn = await connect(
      desiredServer('filesystem', { command: process.execPath, args: [modulePath('@modelcontextprotocol/server-filesystem/dist/index.js'), tmp] }),
      options(),
    );
    expect(conn.tools.map((t) => t.name)).toEqual(expect.arrayContaining(['read_text_file', 'list_directory']));
    expect(conn.tools.every((t) => t.outputSchema !== undefined)).toBe(true);
    const listing = await conn.callTool('list_directory', { path: tmp });
    expect(firstText(listing)).toContain('hello.txt');
  });
});
