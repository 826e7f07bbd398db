/**
 * `import --from HOST --to HOST`: servers copied between hosts' own files
 * with the `add` writers, `${VAR}` kept as written, and per server what the
 * target cannot express (a remote server or a headersHelper into Claude
 * Desktop) reported instead of dropped without a word.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCliCaptured } from '../helpers/cli.js';
import { makeTempHome, removeTempHome, type TempHome } from '../helpers/temp-home.js';

let { home, ws, env }: TempHome = { home: '', ws: '', env: {} };
beforeEach(async () => void ({ home, ws, env } = await makeTempHome('mcpr-import')));
afterEach(() => removeTempHome({ home, ws }));

const cli = (...argv: string[]) => runCliCaptured([...argv, '--cwd', ws], env, ws);

const claudeJson = {
  numStartups: 3,
  mcpServers: {
    files: { type: 'stdio', command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '${HOME}/notes'], env: { LOG: '${LOG_LEVEL:-warn}' } },
    internal: { type: 'http', url: 'https://mcp.internal.example/mcp', headersHelper: 'print-token --json' },
  },
};

describe('import', () => {
  it('claude-code → claude-desktop: the command is copied as written, the remote server is skipped with the reason, the headersHelper named', async () => {
    await writeFile(join(home, '.claude.json'), JSON.stringify(claudeJson, null, 2));
    const desktop = join(home, '.config', 'Claude', 'claude_desktop_config.json');

    const dry = await cli('import', '--from', 'claude-code', '--to', 'claude-desktop', '--dry-run');
    expect(dry.stderr).toBe('');
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain(`would add "files" (from ${join(home, '.claude.json')}): {"command":"npx","args":["-y","@modelcontextprotocol/server-filesystem","\${HOME}/notes"],"env":{"LOG":"\${LOG_LEVEL:-warn}"}}`);
    expect(dry.stdout).toContain('skipped "internal"');
    expect(dry.stdout).toContain('Claude Desktop does not load remote servers from its config file');
    expect(dry.stdout).toContain('  not copied: headersHelper: Claude Desktop has no such field, so it cannot be carried over');
    expect(dry.stdout).toMatch(/dry run: 1 of 2 would be added; nothing was written\n$/);
    await expect(readFile(desktop, 'utf8')).rejects.toMatchObject({ code: 'ENOENT' });

    const real = await cli('import', '--from', 'claude-code', '--to', 'claude-desktop', '--json');
    expect(real.code).toBe(0);
    const report = JSON.parse(real.stdout) as { servers: { name: string; status: string; notes?: string[]; dropped: { field: string }[] }[] };
    expect(report.servers.map((s) => [s.name, s.status])).toEqual([
      ['files', 'added'],
      ['internal', 'skipped'],
    ]);
    expect(report.servers[0]!.notes).toEqual(['Claude Desktop does not expand variables, so ${HOME} reaches the server as written']);
    expect(report.servers[1]!.dropped.map((d) => d.field)).toEqual(['headersHelper']);
    expect(JSON.parse(await readFile(desktop, 'utf8'))).toEqual({
      mcpServers: { files: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '${HOME}/notes'], env: { LOG: '${LOG_LEVEL:-warn}' } } },
    });

    // Again: the target has it now, and is left alone.
    const again = await cli('import', '--from', 'claude-code', '--to', 'claude-desktop', 'files');
    expect(again.stdout).toContain(`left alone "files" (from ${join(home, '.claude.json')}): a server named "files" is already in ${desktop} (mcpServers)`);
  });

  it('cursor → vscode (project scope): an SSE server keeps its transport in VS Code\'s spelling; a field VS Code reads but import does not copy is named', async () => {
    await mkdir(join(ws, '.cursor'), { recursive: true });
    await writeFile(
      join(ws, '.cursor', 'mcp.json'),
      JSON.stringify({ mcpServers: { events: { type: 'sse', url: 'https://mcp.example.com/sse', headers: { Authorization: 'Bearer ${env:TOKEN}' } }, tool: { command: 'tool-mcp', envFile: '.env.mcp' } } }, null, 2),
    );
    await writeFile(join(ws, '.env.mcp'), 'A=1\n');
    const r = await cli('import', '--from', 'cursor', '--to', 'vscode', '--scope', 'project', '--json');
    expect(r.stderr).toBe('');
    const report = JSON.parse(r.stdout) as { servers: { name: string; status: string; dropped: { field: string; why: string }[] }[] };
    expect(report.servers.find((s) => s.name === 'tool')!.dropped).toEqual([
      { field: 'envFile', why: 'import copies the command or URL, args, env and headers only: add "envFile" to the entry by hand' },
    ]);
    const vscode = JSON.parse(await readFile(join(ws, '.vscode', 'mcp.json'), 'utf8')) as { servers: Record<string, unknown> };
    expect(vscode.servers.events).toEqual({ type: 'sse', url: 'https://mcp.example.com/sse', headers: { Authorization: 'Bearer ${env:TOKEN}' } });
  });

  it('usage errors say what to do', async () => {
    expect((await cli('import')).stderr).toBe('error: import needs --from HOST\nhint: e.g. mcp-reconciler import --from claude-desktop --to cursor\n');
    const none = await cli('import', '--from', 'cursor', '--to', 'vscode');
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/^error: the cursor preset's files have no servers\n/);
  });
});
