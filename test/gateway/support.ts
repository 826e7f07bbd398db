/**
 * Shared setup of the gateway tests: a temp workspace whose config lists
 * fixture servers, `serve` as a subprocess of the built binary, and a leak
 * check that finds every process of the test by a marker variable (servers
 * get it through their config `env`, so it survives the controller's env
 * allow-list and reparenting).
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { PromptListChangedNotificationSchema, ToolListChangedNotificationSchema, type CallToolResult, type ClientCapabilities } from '@modelcontextprotocol/sdk/types.js';
import { expect } from 'vitest';
import { z } from 'zod';
import type { McpController } from '../../src/controller/controller.js';
import type { GatewayPool } from '../../src/gateway/pool.js';
import { createSessionServer, type GatewaySession } from '../../src/gateway/server.js';
import { fixturePath, cliBin as cliMain } from '../helpers/fixtures.js';
import { pidAlive, waitFor } from '../helpers/processes.js';

/** The built CLI entry point (`npm run build` first). */
export { cliMain };

/** Environment variable marking every process one test file starts. */
export const MARKER = 'MCPR_GATEWAY_TEST';

/** A temp workspace: user settings (`user.json`), a project `.mcp.json`, an approvals file. */
export class Workspace {
  readonly dir: string;
  readonly root: string;
  readonly userConfig: string;
  readonly approvals: string;
  readonly mark = randomBytes(6).toString('hex');

  constructor() {
    this.dir = realpathSync(mkdtempSync(join(tmpdir(), 'mcpr-gateway-')));
    this.root = this.dir;
    this.userConfig = join(this.dir, 'user.json');
    this.approvals = join(this.dir, 'approvals.json');
    this.writeUser({});
  }

  /** A basic-server fixture entry carrying this workspace's marker. */
  server(version = '1', extraEnv: Record<string, string> = {}): Record<string, unknown> {
    return { command: process.execPath, args: [fixturePath('basic-server')], env: { TOOLS_VERSION: version, [MARKER]: this.mark, ...extraEnv } };
  }

  /** Write the user-scope settings (not gated). */
  writeUser(servers: Record<string, unknown>): void {
    writeFileSync(this.userConfig, `${JSON.stringify({ mcpServers: servers }, null, 2)}\n`);
  }

  /** Write the project `.mcp.json` (gated: its servers need approval). */
  writeProject(servers: Record<string, unknown>): void {
    writeFileSync(join(this.root, '.mcp.json'), `${JSON.stringify({ mcpServers: servers }, null, 2)}\n`);
  }

  /** Global CLI options pointing at this workspace. */
  args(): string[] {
    return ['--cwd', this.root, '--user-config', this.userConfig, '--approvals', this.approvals];
  }

  /** Environment for subprocesses: HOME inside the workspace, the marker set. */
  env(): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: this.dir, [MARKER]: this.mark };
    delete env.NODE_OPTIONS;
    delete env.MCP_RECONCILER_APPROVALS;
    return env;
  }

  /** Live processes carrying this workspace's marker (the serve process, its servers, clients). */
  markedPids(): number[] {
    const needle = `${MARKER}=${this.mark}\0`;
    const out: number[] = [];
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
      let environ: string;
      try {
        environ = readFileSync(`/proc/${entry}/environ`, 'latin1');
      } catch {
        continue;
      }
      if (`\0${environ}`.includes(`\0${needle}`) && pidAlive(Number(entry))) out.push(Number(entry));
    }
    return out;
  }

  /** Marked processes running the basic-server fixture: the managed servers. */
  serverPids(): number[] {
    return this.markedPids().filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('basic-server');
      } catch {
        return false;
      }
    });
  }

  /** SIGKILL whatever is still marked, then remove the directory; returns how many were left. */
  async cleanup(): Promise<number> {
    const left = this.markedPids();
    for (const pid of left) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
    await waitFor(() => left.every((p) => !pidAlive(p)), 'leftover processes to die', 10_000);
    rmSync(this.dir, { recursive: true, force: true });
    return left.length;
  }
}

/** `serve` as a subprocess, with its stderr collected. */
export class ServeProcess {
  readonly child: ChildProcessWithoutNullStreams;
  stderr = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(ws: Workspace, args: string[]) {
    this.child = spawn(process.execPath, [cliMain, 'serve', ...args, ...ws.args()], { env: ws.env(), stdio: 'pipe' });
    this.child.stderr.setEncoding('utf8');
    this.child.stderr.on('data', (chunk: string) => (this.stderr += chunk));
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve({ code, signal })));
  }

  /** The first capture group of `re` in stderr, once it appears. */
  async fromStderr(re: RegExp, what: string, timeoutMs = 20_000): Promise<string> {
    let found: string | undefined;
    await waitFor(() => (found = re.exec(this.stderr)?.[1]) !== undefined, `${what} on serve's stderr (so far: ${this.stderr})`, timeoutMs);
    return found!;
  }

  /** SIGTERM and wait for the exit (SIGKILL after 15 s so a hung stop cannot hang the suite). */
  async stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 15_000);
    const result = await this.exited;
    clearTimeout(timer);
    return result;
  }
}

/** `serve --http` with `extra` options, once it printed its URL and access token. */
export async function startServeHttp(ws: Workspace, extra: string[] = []): Promise<{ serve: ServeProcess; url: string; token: string }> {
  const serve = new ServeProcess(ws, ['--http', ...extra]);
  const url = await serve.fromStderr(/listening on (http:\/\/127\.0\.0\.1:\d+\/mcp)/, 'the URL');
  const token = await serve.fromStderr(/access token: ([0-9a-f]{64})/, 'the access token');
  return { serve, url, token };
}

/** The text of a tool result's first text part. */
export function textOf(result: unknown): string {
  const content = (result as { content?: Array<{ type: string; text?: string }> }).content ?? [];
  return content.find((c) => c.type === 'text')?.text ?? '';
}

/** An in-process gateway session of `pool` (optionally scoped) with an SDK client connected to it. */
export async function inProcessClient(
  pool: GatewayPool,
  scope?: Set<string>,
  callTimeoutMs?: number,
  capabilities: ClientCapabilities = {},
): Promise<{ client: Client; session: GatewaySession; close(): Promise<void> }> {
  const session = createSessionServer(pool, { transport: 'test', ...(scope ? { scope } : {}), ...(callTimeoutMs ? { callTimeoutMs } : {}) });
  const [a, b] = InMemoryTransport.createLinkedPair();
  await session.server.connect(b);
  const client = new Client({ name: 'in-process', version: '1.0.0' }, { capabilities });
  await client.connect(a);
  return {
    client,
    session,
    close: async () => {
      await client.close();
      await session.close();
    },
  };
}

/** An SDK client connected to `serve --stdio` (the built binary), counting list_changed notifications. */
export interface StdioConnected {
  client: Client;
  transport: StdioClientTransport;
  stderr: () => string;
  toolChanges: () => number;
  promptChanges: () => number;
}

/** Start `serve --stdio` with `extra` options as an SDK client's server and connect to it. */
export async function connectStdio(ws: Workspace, extra: string[] = []): Promise<StdioConnected> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [cliMain, 'serve', '--stdio', ...extra, ...ws.args()],
    env: ws.env() as Record<string, string>,
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const client = new Client({ name: 'gateway-test', version: '1.0.0' });
  let tools = 0;
  let prompts = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => void tools++);
  client.setNotificationHandler(PromptListChangedNotificationSchema, () => void prompts++);
  try {
    await client.connect(transport);
  } catch (err) {
    // Say why the gateway went away: its stderr holds the reason.
    throw new Error(`serve --stdio did not connect: ${(err as Error).message}\nits stderr:\n${stderr}`);
  }
  return { client, transport, stderr: () => stderr, toolChanges: () => tools, promptChanges: () => prompts };
}

/** An SDK client of one `serve --http` session, counting tools/list_changed. */
export interface HttpConnected {
  client: Client;
  transport: StreamableHTTPClientTransport;
  toolChanges: () => number;
}

/** Open a session of the HTTP gateway at `url` (`query` like `?servers=a,b`), with the access token. */
export async function connectHttp(url: string, token: string, query = '', headers: Record<string, string> = {}): Promise<HttpConnected> {
  const transport = new StreamableHTTPClientTransport(new URL(`${url}${query}`), {
    requestInit: { headers: { authorization: `Bearer ${token}`, ...headers } },
  });
  const client = new Client({ name: 'gateway-http-test', version: '1.0.0' });
  let changes = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changes++);
  await client.connect(transport);
  return { client, transport, toolChanges: () => changes };
}

/** `serve --http` over its own workspace, the sessions opened to it, and a stop that reports what was left behind. */
export class HttpServe {
  readonly ws = new Workspace();
  serve: ServeProcess | undefined;
  url = '';
  token = '';
  readonly sessions: HttpConnected[] = [];

  /** Start `serve --http` with `extra` options (write the workspace's config first). */
  async start(extra: string[] = []): Promise<void> {
    ({ serve: this.serve, url: this.url, token: this.token } = await startServeHttp(this.ws, extra));
  }

  /** Open a session (`query` like `?servers=a,b`); {@link stop} closes it. */
  async open(query = '', headers: Record<string, string> = {}): Promise<HttpConnected> {
    const s = await connectHttp(this.url, this.token, query, headers);
    this.sessions.push(s);
    return s;
  }

  /** Close every session, stop serve, clean the workspace: serve's exit code and stderr, and how many processes were left. */
  async stop(): Promise<{ code: number | null | undefined; stderr: string; left: number }> {
    for (const s of this.sessions) await s.client.close().catch(() => undefined);
    const exit = this.serve ? await this.serve.stop() : undefined;
    return { code: exit?.code, stderr: this.serve?.stderr ?? '', left: await this.ws.cleanup() };
  }
}

/** What the `wait` tool of {@link registerCallTools} saw: calls started and calls cancelled. */
export interface CallsSeen {
  started: number;
  aborted: number;
}

/**
 * The in-process tools the gateway's call tests use: `wait` (runs until
 * cancelled, counted in `seen`), `ask` (a form elicitation) and `steps`
 * (`n` progress notifications, then a result).
 */
export function registerCallTools(server: McpServer, seen: CallsSeen): McpServer {
  server.registerTool('wait', { description: 'Waits until cancelled.', inputSchema: {} }, (_args, extra) => {
    seen.started++;
    return new Promise<CallToolResult>((resolve) => {
      extra.signal.addEventListener('abort', () => {
        seen.aborted++;
        resolve({ content: [{ type: 'text', text: 'cancelled' }] });
      });
    });
  });
  server.registerTool('ask', { description: 'Asks the user for a name.', inputSchema: {} }, async () => {
    const answer = await server.server.elicitInput({
      mode: 'form',
      message: 'Who are you?',
      requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
    });
    return { content: [{ type: 'text', text: `${answer.action}:${JSON.stringify(answer.content ?? {})}` }] };
  });
  server.registerTool('steps', { description: 'Reports n progress steps.', inputSchema: { n: z.number() } }, async ({ n }, extra) => {
    const token = extra._meta?.progressToken;
    for (let i = 1; i <= n; i++) {
      if (token !== undefined) await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: n, message: `step ${i}` } });
    }
    return { content: [{ type: 'text', text: `did ${n} steps` }] };
  });
  return server;
}

/** An in-process pool's end: close `pool`, dispose `controller` (no managed process may outlive it) and remove the workspace `dir`. */
export async function closeInProcessPool(pool: GatewayPool | undefined, controller: McpController | undefined, dir: string): Promise<void> {
  pool?.close();
  const pids = controller?.pids() ?? [];
  await controller?.dispose();
  expect(pids.filter(pidAlive)).toEqual([]);
  rmSync(dir, { recursive: true, force: true });
}
