/**
 * The library's way onto the daemon: `createMcpController({ shared: true })`
 * returns a {@link SharedMcpController}, an MCP client of a session on the
 * user's daemon (started when absent, like `serve --stdio --shared` does).
 * The daemon runs the servers, checks approvals and does OAuth; this process
 * runs none of them. Its tools carry the gateway's names
 * (`mcp__<server>__<tool>`), and a daemon loss fails the calls in flight and
 * reconnects by itself (docs/daemon.md).
 */
import { realpathSync } from 'node:fs';
import type { Socket } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { ReadBuffer } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { CallToolResult, JSONRPCMessage, Tool } from '@modelcontextprotocol/sdk/types.js';
import { defaultApprovalsPath } from '../approvals/store.js';
import { defaultInputsPath } from '../config/input-store.js';
import { ErrorCode, McpReconcilerError } from '../errors.js';
import { drainMessages } from '../util/drain-messages.js';
import { notifyAll } from '../util/listeners.js';
import { findOwnPackage } from '../util/own-package.js';
import { connectDaemon, greet, spawnDetachedDaemon, type SpawnedDaemon } from './client.js';
import { buildIdentity, daemonDir, daemonPaths, type DaemonPaths } from './paths.js';
import { DAEMON_PROTOCOL, type SessionRequest } from './protocol.js';

/** Options of `createMcpController({ shared: true, … })`: what `serve --stdio --shared` takes on its command line. */
export interface SharedControllerOptions {
  shared: true;
  /** The workspace root (default `process.cwd()`). */
  cwd?: string;
  /** A preset by name (default `default`). */
  preset?: string;
  /** Extra config files in cli scope (absolute, or relative to `cwd`). */
  configFiles?: string[];
  /** Replaces the preset's user-scope file. */
  userConfig?: string;
  /** The approvals store (default: `$MCP_RECONCILER_APPROVALS` or `~/.config/mcp-reconciler/approvals.json`). */
  approvals?: string;
  /** Only these servers, for this session (its scope). */
  servers?: string[];
  /** The environment sent to the daemon (default `process.env`): it picks the daemon directory, and a workspace opened by this session gives it to its servers. */
  env?: NodeJS.ProcessEnv;
  /** The `mcp-reconciler` bin that runs the daemon (default: this package's). */
  bin?: string;
}

/** A tool as the daemon's session lists it. */
export type SharedTool = Tool;

/** A session socket as an SDK transport: newline-delimited JSON-RPC, as over stdio. */
class SocketTransport implements Transport {
  onmessage?: (message: JSONRPCMessage) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  constructor(
    private readonly socket: Socket,
    private readonly buffer: ReadBuffer,
    private readonly serialize: (message: JSONRPCMessage) => string,
  ) {}

  async start(): Promise<void> {
    this.socket.on('data', (chunk: Buffer) => {
      this.buffer.append(chunk);
      drainMessages(this.buffer, (m) => this.onmessage?.(m), (err) => this.onerror?.(err));
    });
    this.socket.on('error', (err) => this.onerror?.(err));
    this.socket.once('close', () => this.onclose?.());
    this.socket.resume();
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.socket.destroyed) throw new McpReconcilerError(ErrorCode.ConnectFailed, 'the mcp-reconciler daemon connection is closed');
    this.socket.write(this.serialize(message));
  }

  async close(): Promise<void> {
    this.socket.end();
  }
}

/** This package's bin and version, found from this module's place in it. */
function ownPackage(): { bin: string; version: string } {
  const pkg = findOwnPackage(dirname(fileURLToPath(import.meta.url)));
  const bin = pkg?.bin['mcp-reconciler'];
  if (!pkg || !bin) throw new McpReconcilerError(ErrorCode.ConnectFailed, 'cannot find the mcp-reconciler package (its bin runs the daemon)', { hint: 'pass bin: the path of dist/cli/main.js' });
  return { bin: join(pkg.dir, bin), version: pkg.version };
}

/**
 * A session on the user's daemon with a controller's reading methods:
 * {@link start}, {@link tools}, {@link callTool}, `on('tools-changed')`,
 * {@link dispose}. The configuration, approvals, supervision and OAuth are
 * the daemon's.
 */
export class SharedMcpController {
  private client: Client | undefined;
  private listed: SharedTool[] = [];
  private readonly changed = new Set<(change: undefined) => void>();
  private readonly request: SessionRequest;
  private readonly paths: DaemonPaths;
  private readonly build: string;
  private readonly bin: string;
  private readonly env: NodeJS.ProcessEnv;
  private connecting: Promise<void> | undefined;
  private disposed = false;

  constructor(options: SharedControllerOptions) {
    const own = options.bin ? { bin: options.bin, version: ownPackage().version } : ownPackage();
    const env = options.env ?? process.env;
    const cwd = resolve(options.cwd ?? process.cwd());
    this.env = env;
    this.bin = realpathSync(own.bin);
    this.build = buildIdentity(this.bin, own.version).id;
    this.paths = daemonPaths(daemonDir(env), this.build);
    const configFiles = (options.configFiles ?? []).map((f) => resolve(cwd, f));
    const approvals = options.approvals ? resolve(cwd, options.approvals) : env.MCP_RECONCILER_APPROVALS ? resolve(cwd, env.MCP_RECONCILER_APPROVALS) : defaultApprovalsPath(env);
    const userConfig = options.userConfig ? resolve(cwd, options.userConfig) : undefined;
    const values: Record<string, unknown> = { stdio: true, cwd, approvals };
    if (configFiles.length) values.config = configFiles;
    if (userConfig) values['user-config'] = userConfig;
    if (options.preset) values.preset = options.preset;
    if (options.servers) values.servers = options.servers.join(',');
    this.request = {
      values,
      cwd,
      env: { ...env },
      global: {
        root: cwd,
        preset: options.preset ?? 'default',
        configFiles,
        ...(userConfig ? { userConfig } : {}),
        approvalsPath: approvals,
        inputsPath: env.MCP_RECONCILER_INPUTS ? resolve(cwd, env.MCP_RECONCILER_INPUTS) : defaultInputsPath(env),
        json: false,
        home: env.HOME ?? '',
      },
    };
  }

  private spawnDaemon(): SpawnedDaemon {
    return spawnDetachedDaemon(this.paths, this.bin, this.env);
  }

  private async connect(): Promise<void> {
    // Loaded here: a host that never asks for a shared controller does not pay for the SDK client at import.
    const [{ Client }, { ReadBuffer, serializeMessage }, { ToolListChangedNotificationSchema }] = await Promise.all([
      import('@modelcontextprotocol/sdk/client/index.js'),
      import('@modelcontextprotocol/sdk/shared/stdio.js'),
      import('@modelcontextprotocol/sdk/types.js'),
    ]);
    const socket = await connectDaemon(this.paths, () => this.spawnDaemon());
    await greet(socket, { protocol: DAEMON_PROTOCOL, build: this.build, kind: 'session', pid: process.pid, session: this.request });
    const client = new Client({ name: 'mcp-reconciler-shared', version: '1.0.0' });
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      await this.refresh().catch(() => undefined);
    });
    client.onclose = () => {
      if (this.client !== client) return;
      this.client = undefined;
      // The daemon went away: calls in flight have failed; a fresh daemon brings the tools back.
      if (!this.disposed) void this.ensure().catch(() => undefined);
    };
    await client.connect(new SocketTransport(socket, new ReadBuffer(), serializeMessage));
    this.client = client;
    await this.refresh();
  }

  private ensure(): Promise<void> {
    if (this.client) return Promise.resolve();
    this.connecting ??= this.connect().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private async refresh(): Promise<void> {
    const client = this.client;
    if (!client) return;
    const tools: SharedTool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : {});
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    this.listed = tools;
    notifyAll(this.changed, undefined);
  }

  /** Attach to the daemon (starting it when absent) and list the tools. */
  start(): Promise<void> {
    return this.ensure();
  }

  /** The session's tools, as last listed. */
  tools(): SharedTool[] {
    return [...this.listed];
  }

  /** Call a tool through the daemon; a daemon lost mid-call rejects, and the next call goes to a fresh one. */
  async callTool(name: string, args: Record<string, unknown> = {}, options: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<CallToolResult> {
    await this.ensure();
    return (await this.client!.callTool({ name, arguments: args }, undefined, {
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.timeoutMs !== undefined ? { timeout: options.timeoutMs } : {}),
    })) as CallToolResult;
  }

  /** `tools-changed`: the daemon announced a change and the list was read again. Returns the unsubscribe function. */
  on(event: 'tools-changed', listener: () => void): () => void {
    void event;
    const own = (): void => listener();
    this.changed.add(own);
    return () => void this.changed.delete(own);
  }

  /** Leave the daemon (its servers keep running for other sessions, then idle out). Idempotent. */
  async dispose(): Promise<void> {
    this.disposed = true;
    const client = this.client;
    this.client = undefined;
    await client?.close().catch(() => undefined);
  }
}
