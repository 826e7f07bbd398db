/**
 * The official MCP Inspector CLI (`@modelcontextprotocol/inspector-cli`
 * 1.0.3, a client nobody here wrote) against `serve --stdio` and
 * `serve --http`: list, call, and a config edit seen by the next list.
 *
 * It runs `build/index.js`, the inspector's CLI mode (what
 * `npx @modelcontextprotocol/inspector --cli` runs), with the server command
 * after `--`. Its `mcp-inspector-cli` launcher is not used: it reads
 * `--config`/`--server` itself, which collides with our options. Its working
 * directory must be its own `build/`, because it finds its package.json
 * relative to the process's working directory.
 */
import { execFile } from 'node:child_process';
import { dirname } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { modulePath } from '../helpers/fixtures.js';
import { waitFor } from '../helpers/processes.js';
import { cliMain, startServeHttp, Workspace, type ServeProcess } from './support.js';

const INSPECTOR = modulePath('@modelcontextprotocol/inspector-cli/build/index.js');

interface InspectorRun {
  code: number;
  stdout: string;
  stderr: string;
}

function inspector(ws: Workspace, args: string[]): Promise<InspectorRun> {
  return new Promise((resolve) => {
    execFile(process.execPath, [INSPECTOR, ...args], { cwd: dirname(INSPECTOR), env: ws.env(), timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? ((err as { code: number }).code) : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

function json<T>(run: InspectorRun): T {
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as T;
}

type ToolList = { tools: Array<{ name: string }> };
type CallResult = { content: Array<{ type: string; text: string }>; isError?: boolean };

describe('MCP Inspector CLI against serve --stdio', () => {
  const ws = new Workspace();
  const serveArgs = (): string[] => ['--', cliMain, 'serve', '--stdio', ...ws.args()];

  beforeAll(() => {
    ws.writeUser({ docs: ws.server('1'), files: ws.server('1') });
  });

  afterAll(async () => {
    expect(await ws.cleanup(), 'processes left behind').toBe(0);
  });

  it('tools/list, tools/call and prompts/list', async () => {
    const list = json<ToolList>(await inspector(ws, ['node', '--method', 'tools/list', ...serveArgs()]));
    expect(list.tools.map((t) => t.name)).toEqual(expect.arrayContaining(['mcp__docs__echo', 'mcp__files__v1_tool']));

    const call = json<CallResult>(await inspector(ws, ['node', '--method', 'tools/call', '--tool-name', 'mcp__docs__echo', '--tool-arg', 'text=from the inspector', ...serveArgs()]));
    expect(call.content[0]?.text).toBe('from the inspector');

    const prompts = json<{ prompts: Array<{ name: string }> }>(await inspector(ws, ['node', '--method', 'prompts/list', ...serveArgs()]));
    expect(prompts.prompts.map((p) => p.name).sort()).toEqual(['mcp__docs__greet', 'mcp__files__greet']);

    // Each run started its own gateway; each one ended with its client, servers included.
    await waitFor(() => ws.markedPids().length === 0, 'every gateway and server to exit');
  });
});

describe('MCP Inspector CLI against serve --http', () => {
  const ws = new Workspace();
  let serve: ServeProcess;
  let url: string;
  let token: string;

  beforeAll(async () => {
    ws.writeUser({ docs: ws.server('1') });
    ({ serve, url, token } = await startServeHttp(ws));
  });

  afterAll(async () => {
    const exit = serve ? await serve.stop() : undefined;
    expect(await ws.cleanup(), 'processes left behind').toBe(0);
    expect(exit?.code, serve?.stderr).toBe(0);
  });

  const http = (args: string[]): string[] => [url, '--transport', 'http', ...args, '--header', `Authorization: Bearer ${token}`];

  it('tools/list and tools/call; a config edit shows in the next tools/list', async () => {
    const list = json<ToolList>(await inspector(ws, http(['--method', 'tools/list'])));
    expect(list.tools.map((t) => t.name)).toContain('mcp__docs__v1_tool');

    const call = json<CallResult>(await inspector(ws, http(['--method', 'tools/call', '--tool-name', 'mcp__docs__add', '--tool-arg', 'a=2', 'b=40'])));
    expect(call.content[0]?.text).toBe('42');

    ws.writeUser({ docs: ws.server('2'), more: ws.server('1') });
    await waitFor(async () => {
      const names = json<ToolList>(await inspector(ws, http(['--method', 'tools/list']))).tools.map((t) => t.name);
      return names.includes('mcp__docs__v2_tool') && names.includes('mcp__more__echo') && !names.includes('mcp__docs__v1_tool');
    }, 'the edited config in tools/list');
  });

  it('without the token the inspector is refused', async () => {
    const run = await inspector(ws, [url, '--transport', 'http', '--method', 'tools/list']);
    expect(run.code).not.toBe(0);
    expect(run.stdout + run.stderr).toMatch(/401|access token|Unauthorized/i);
  });
});
