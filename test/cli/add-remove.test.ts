/**
 * `add` / `remove` from the command line: arguments as `claude mcp add`
 * takes them, `${VAR}` written literally, clear errors, and two `add`
 * processes writing one file at once losing nothing.
 */
import { execFile } from 'node:child_process';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCliCaptured } from '../helpers/cli.js';
import { cliBin } from '../helpers/fixtures.js';
import { makeTempHome, removeTempHome, type TempHome } from '../helpers/temp-home.js';

let { home, ws, env }: TempHome = { home: '', ws: '', env: {} };
beforeEach(async () => void ({ home, ws, env } = await makeTempHome('mcpr-add-cli')));
afterEach(() => removeTempHome({ home, ws }));

const cli = (verb: string, ...argv: string[]) => runCliCaptured([verb, '--cwd', ws, ...argv], env, ws);
const json = async (file: string) => JSON.parse(await readFile(file, 'utf8')) as Record<string, Record<string, unknown>>;

describe('add / remove', () => {
  it('claude-code: a command after --, with --env written as given, goes to the local scope by default', async () => {
    const r = await cli('add', 'fs', '--preset', 'claude-code', '--env', 'ROOT=${HOME}/x', '--env', 'TOKEN=${GH_TOKEN}', '--', 'npx', '-y', '@modelcontextprotocol/server-filesystem', '--help');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const file = join(home, '.claude.json');
    expect(r.stdout).toBe(`added "fs" to ${file} (projects[${JSON.stringify(ws)}].mcpServers) [local]\na running watch or serve of this workspace picks it up now\n`);
    const doc = (await json(file)) as { projects: Record<string, { mcpServers: Record<string, unknown> }> };
    expect(doc.projects[ws]?.mcpServers.fs).toEqual({
      type: 'stdio',
      command: 'npx',
      args: ['-y', '@modelcontextprotocol/server-filesystem', '--help'],
      env: { ROOT: '${HOME}/x', TOKEN: '${GH_TOKEN}' },
    });
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const gone = await cli('remove', 'fs', '--preset', 'claude-code');
    expect(gone.code).toBe(0);
    expect(gone.stdout).toMatch(/^removed "fs" from .*\.claude\.json \(projects\[.*\]\.mcpServers\) \[local\]\n/);
  });

  it('a remote server: --url with --header, or Claude Code\'s `--transport http NAME URL`', async () => {
    expect((await cli('add', 'docs', '--preset', 'vscode', '--scope', 'project', '--url', 'https://mcp.example.com/mcp', '--header', 'Authorization: Bearer ${input:tok}')).code).toBe(0);
    expect((await json(join(ws, '.vscode', 'mcp.json'))).servers).toEqual({
      docs: { type: 'http', url: 'https://mcp.example.com/mcp', headers: { Authorization: 'Bearer ${input:tok}' } },
    });
    const r = await cli('add', '--transport', 'sse', 'events', 'https://mcp.example.com/sse', '--preset', 'claude-code', '--scope', 'project', '--json');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ name: 'events', scope: 'project', needsApproval: true, file: join(ws, '.mcp.json') });
    expect((await json(join(ws, '.mcp.json'))).mcpServers).toEqual({ events: { type: 'sse', url: 'https://mcp.example.com/sse' } });
    const text = await cli('add', 'more', '--preset', 'claude-code', '--scope', 'project', '--', 'x');
    expect(text.stdout).toContain(`it is in the project's own file, so it starts only once approved: mcp-reconciler approve more --cwd ${ws} (a running watch asks)`);
  });

  it('errors say what happened and what to do', async () => {
    const local = await cli('add', 'x', '--preset', 'cursor', '--scope', 'local', '--', 'c');
    expect([local.code, local.stderr]).toEqual([2, 'error: the cursor preset has no local scope\nhint: use --scope user or --scope project\n']);
    const bad = await cli('add', 'x', '--scope', 'team', '--', 'c');
    expect([bad.code, bad.stderr]).toEqual([2, 'error: unknown scope "team"\nhint: use --scope user, project, local, workspace\n']);
    const neither = await cli('add', 'x');
    expect(neither.code).toBe(2);
    expect(neither.stderr).toMatch(/^error: give the server a command to run or a URL\nhint: add NAME -- COMMAND/);
    const env = await cli('add', 'x', '--env', 'NOPE', '--', 'c');
    expect(env.stderr).toMatch(/^error: --env "NOPE" is not KEY=VALUE\n/);
    await cli('add', 'x', '--preset', 'cursor', '--scope', 'user', '--', 'c');
    const dup = await cli('add', 'x', '--preset', 'cursor', '--scope', 'user', '--', 'd');
    expect([dup.code, dup.stderr]).toEqual([2, `error: a server named "x" is already in ${join(home, '.cursor', 'mcp.json')} (mcpServers)\nhint: remove it first (mcp-reconciler remove x --scope user), or add this one under another name\n`]);
    const missing = await cli('remove', 'nope', '--preset', 'cursor');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`error: no server named "nope" in ${join(home, '.cursor', 'mcp.json')} (mcpServers) [user], ${join(ws, '.cursor', 'mcp.json')} (mcpServers) [project]\n`);
  });

  it('concurrent add processes writing one file lose nothing', async () => {
    const names = ['a', 'b', 'c', 'd'];
    const runs = await Promise.all(
      names.map(
        (name) =>
          new Promise<{ code: number | null; stderr: string }>((done) => {
            // execFile waits for exit; the timeout kills a hung child so none outlives the test.
            const child = execFile(process.execPath, [cliBin, 'add', name, '--preset', 'claude-code', '--scope', 'user', '--cwd', ws, '--', 'srv', name], { env, timeout: 60_000 }, (_err, _stdout, stderr) =>
              done({ code: child.exitCode, stderr }),
            );
          }),
      ),
    );
    expect(runs).toEqual(names.map(() => ({ code: 0, stderr: '' })));
    const servers = (await json(join(home, '.claude.json'))).mcpServers!;
    expect(Object.keys(servers).sort()).toEqual(names);
  }, 120_000);
});
