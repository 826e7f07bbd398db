/**
 * Everything between a desired server entry and a live SDK `Client`: choose
 * and build the transport, connect and list under a timeout, and turn what
 * happens afterwards (exit, close, session loss, list changes) into events.
 * Retrying is not done here: connect throws, the supervisor decides.
 */
import { resolve as resolvePath } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { SSEClientTransport, SseError } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { FetchLike, Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolResultSchema,
  ErrorCode as McpErrorCode,
  ListPromptsResultSchema,
  ListToolsResultSchema,
  McpError,
  PromptListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
  type CallToolResult,
  type Prompt,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { DesiredServer } from '../../machines/types.js';
import { describeError, ErrorCode, McpReconcilerError } from '../errors.js';
import { transportOf } from '../gating/fingerprint.js';
import { childEnv, type EnvPolicy } from './env.js';
import { runHeadersHelper } from '../config/headers-helper.js';
import type { ProcessTracker } from './processes.js';
import { sessionLossFetch, type SessionLoss } from './session-loss.js';
import { StdioProcessTransport } from './stdio-transport.js';
import { clientCapabilities, installClientHandlers, type ClientFeatures } from './client-capabilities.js';

/** What a live connection reports after it is established. */
export type ConnectionEvent =
  | { type: 'lost'; error: string; sessionLost: boolean }
  | { type: 'tools_changed' }
  | { type: 'prompts_changed' };

/** Options of {@link openConnection}. */
export interface ConnectOptions {
  /** The generation number this connection is (SPEC §5); carried for the caller. */
  generation: number;
  /** Aborts the connect attempt (not an established connection): everything started is closed. */
  signal?: AbortSignal;
  tracker: ProcessTracker;
  envPolicy?: EnvPolicy;
  /** Environment to scrub for stdio children. Default `process.env`. */
  parentEnv?: NodeJS.ProcessEnv;
  /** Workspace root: a relative `cwd` in the config is resolved against it. Also the default cwd. */
  cwd: string;
  /** Connect + list timeout in ms. Default 30000; the entry's `timeout` wins. */
  timeoutMs?: number;
  /**
   * For stdio servers: no connect deadline. A server slower than `timeoutMs`
   * keeps starting; the open ends on success, process exit, a transport error
   * or `signal`. The caller reports the slow start (the machine's
   * `connecting.slow`). Remote transports keep their deadline.
   */
  backgroundStart?: boolean;
  clientInfo?: { name: string; version: string };
  /** Called for each event after the connection is established; never after our own `close()`. */
  onEvent?: (event: ConnectionEvent) => void;
  /**
   * Start-phase hooks, for a connect limiter that holds a slot only while a
   * server starts: `spawned` once a stdio child runs, `initialized` once the
   * server answered `initialize`.
   */
  startPhase?: { spawned?(pid: number): void; initialized?(): void };
  /** Elicitation, sampling and roots offered to the server (issue 11); none declared when absent. */
  clientFeatures?: ClientFeatures;
  /** Wraps the HTTP fetch of http/sse transports: the OAuth layer (src/auth/manager.ts). */
  wrapFetch?: (next: FetchLike) => FetchLike;
}

/** Options of {@link LiveConnection.callTool}. */
export interface CallToolRequestOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
  onprogress?: (progress: { progress: number; total?: number; message?: string }) => void;
}

/** An established connection: one generation of one server. */
export interface LiveConnection {
  readonly name: string;
  readonly generation: number;
  readonly client: Client;
  /** PID of the stdio child (its process-group leader); undefined for other transports. */
  readonly pid: number | undefined;
  /** The transport in use: `sse` for an `http` entry that fell back (`fallbackToSse`). */
  readonly transportType: ReturnType<typeof transportOf>;
  /** Tools from the latest listing. */
  readonly tools: Tool[];
  /** Prompts from the latest listing ([] when the server has no prompts capability). */
  readonly prompts: Prompt[];
  /** Re-list all pages of tools/list and update `tools`. */
  listTools(): Promise<Tool[]>;
  /** Re-list prompts and update `prompts`. */
  listPrompts(): Promise<Prompt[]>;
  /**
   * Call a tool by its server-side name. The result is returned as the server
   * sent it: output contracts are checked by the registry, not here.
   */
  callTool(rawName: string, args: Record<string, unknown> | undefined, opts?: CallToolRequestOptions): Promise<CallToolResult>;
  /** The last few KB of a stdio server's stderr ('' for other transports). */
  stderrTail(): string;
  /** Close the client, the transport and the process group. Idempotent; no `lost` event follows. */
  close(): Promise<void>;
}

const DEFAULT_TIMEOUT_MS = 30_000;
/** Request timeout of an open without a deadline: 24 h, the largest Node timers take comfortably. */
const UNBOUNDED_OPEN_MS = 86_400_000;
const DEFAULT_CLIENT_INFO = Object.freeze({ name: 'mcp-reconciler', version: '0.1.0' });
/** A session DELETE on close is a courtesy; a dead server must not hold up close. */
const TERMINATE_SESSION_MS = 1_000;
/** Re-lists during connect when the server announces a change meanwhile (server-everything does). */
const MAX_INITIAL_RELISTS = 3;
const MAX_PAGES = 1_000;
const STDERR_IN_MESSAGE = 2_000;

/** Any object with `connect(transport)`: an SDK `McpServer` or low-level `Server`. */
interface ConnectableServer {
  connect(transport: Transport): Promise<void>;
}

function isConnectable(value: unknown): value is ConnectableServer {
  return value !== null && typeof value === 'object' && typeof (value as { connect?: unknown }).connect === 'function';
}

/** "fetch failed (connect ECONNREFUSED 127.0.0.1:9)": the causes undici hides. */
function causeChain(err: unknown): string {
  let text = describeError(err);
  let cause = err instanceof Error ? err.cause : undefined;
  for (let depth = 0; cause !== undefined && depth < 3; depth++) {
    const more = describeError(cause);
    if (more && !text.includes(more)) text += ` (${more})`;
    cause = cause instanceof Error ? cause.cause : undefined;
  }
  return text;
}

function isUnauthorized(err: unknown): boolean {
  if (err instanceof UnauthorizedError) return true;
  if (err instanceof StreamableHTTPError && err.code === 401) return true;
  if (err instanceof SseError && err.code === 401) return true;
  return false;
}

/**
 * An HTTP status that no retry will change: a 4xx other than 401 (needs_auth),
 * 404 (a session the server forgot, or a server still starting behind a
 * proxy), 408 and 429 (the server asks us to come back later).
 */
function isPermanentStatus(status: number | undefined): boolean {
  return status !== undefined && status >= 400 && status < 500 && ![401, 404, 408, 429].includes(status);
}

/** The HTTP status an SDK transport error carries, when it carries one. */
function httpStatusOf(err: unknown): number | undefined {
  if ((err instanceof StreamableHTTPError || err instanceof SseError) && typeof err.code === 'number') return err.code;
  return undefined;
}

/** Spawn errors that mean the command itself is wrong, not that it failed this time. */
const PERMANENT_SPAWN_ERRNOS = new Set(['ENOENT', 'EACCES', 'ENOTDIR']);

function isTimeout(err: unknown): boolean {
  return err instanceof McpError && err.code === McpErrorCode.RequestTimeout;
}

class Connection implements LiveConnection {
  readonly name: string;
  readonly generation: number;
  readonly client: Client;
  tools: Tool[] = [];
  prompts: Prompt[] = [];

  private readonly entry: DesiredServer;
  private readonly opts: ConnectOptions;
  private readonly kind: ReturnType<typeof transportOf>;
  /** Differs from `kind` only after the SSE fallback. */
  private used: ReturnType<typeof transportOf>;
  private readonly timeoutMs: number;
  private transport: Transport | undefined;
  private stdio: StdioProcessTransport | undefined;
  private http: StreamableHTTPClientTransport | undefined;
  private state: 'connecting' | 'ready' | 'lost' | 'closed' = 'connecting';
  private lastTransportError: string | undefined;
  private sawUnauthorized = false;
  /** The first answer that no retry will change (see `isPermanentStatus`), while connecting. */
  private permanentStatus: number | undefined;
  private sessionDead = false;
  private toolsSeq = 0;
  private promptsSeq = 0;
  private failConnect: ((err: unknown) => void) | undefined;
  private shutdownPromise: Promise<void> | undefined;
  /** What the entry's `headersHelper` printed for this connect; merged over `headers`, never logged. */
  private helperHeaders: Record<string, string> = {};

  constructor(entry: DesiredServer, opts: ConnectOptions) {
    this.entry = entry;
    this.opts = opts;
    this.name = entry.name;
    this.generation = opts.generation;
    this.kind = transportOf(entry.config);
    this.used = this.kind;
    this.timeoutMs = entry.config.timeout ?? opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.client = new Client(opts.clientInfo ?? DEFAULT_CLIENT_INFO, { capabilities: clientCapabilities(opts.clientFeatures) });
    installClientHandlers(this.client, entry.name, opts.clientFeatures);
    this.client.setNotificationHandler(ToolListChangedNotificationSchema, () => this.listChanged('tools'));
    this.client.setNotificationHandler(PromptListChangedNotificationSchema, () => this.listChanged('prompts'));
    this.client.onerror = (err) => this.transportError(err);
    this.client.onclose = () => this.transportClosed();
  }

  get transportType(): ReturnType<typeof transportOf> {
    return this.used;
  }

  get pid(): number | undefined {
    return this.stdio?.pid;
  }

  stderrTail(): string {
    return this.stdio?.stderrTail() ?? '';
  }

  /** Connect and list under one deadline; on any failure close everything, then throw. */
  async open(): Promise<void> {
    const outer = this.opts.signal;
    if (outer?.aborted) throw this.abortedError(outer.reason);
    const deadline = new AbortController();
    let timedOut = false;
    // A stdio server still starting is not failing: with `backgroundStart` its open has
    // no deadline and ends only on success, exit, a transport error or an abort.
    const bounded = !(this.opts.backgroundStart === true && this.kind === 'stdio');
    const openTimeout = bounded ? this.timeoutMs : UNBOUNDED_OPEN_MS;
    const timer = bounded
      ? setTimeout(() => {
          timedOut = true;
          deadline.abort(new Error('timeout'));
        }, this.timeoutMs)
      : undefined;
    const onOuterAbort = (): void => deadline.abort(outer?.reason);
    outer?.addEventListener('abort', onOuterAbort, { once: true });
    const interrupted = new Promise<never>((_, reject) => {
      this.failConnect = reject;
      deadline.signal.addEventListener('abort', () => reject(deadline.signal.reason), { once: true });
    });
    interrupted.catch(() => {});
    const race = <T>(p: Promise<T>): Promise<T> => Promise.race([p, interrupted]);
    try {
      this.transport = await race(this.buildTransport());
      try {
        await race(this.client.connect(this.transport, { signal: deadline.signal, timeout: openTimeout }));
      } catch (err) {
        if (deadline.signal.aborted || !this.shouldFallBackToSse(err)) throw err;
        // VS Code's and Cursor's rule for `type: http`: a 4xx to the first POST means an SSE-only server.
        await this.switchToSse();
        await race(this.client.connect(this.transport, { signal: deadline.signal, timeout: openTimeout }));
      }
      this.opts.startPhase?.initialized?.();
      await this.initialList(race, deadline.signal, openTimeout);
      if (deadline.signal.aborted) throw deadline.signal.reason;
      this.state = 'ready';
    } catch (err) {
      await this.shutdown();
      if (timedOut) throw this.timeoutError(err);
      if (outer?.aborted) throw this.abortedError(outer.reason);
      throw this.connectError(err);
    } finally {
      clearTimeout(timer);
      outer?.removeEventListener('abort', onOuterAbort);
      this.failConnect = undefined;
    }
  }

  listTools(): Promise<Tool[]> {
    return this.fetchTools({ timeout: this.timeoutMs });
  }

  listPrompts(): Promise<Prompt[]> {
    return this.fetchPrompts({ timeout: this.timeoutMs });
  }

  callTool(
    rawName: string,
    args: Record<string, unknown> | undefined,
    opts: CallToolRequestOptions = {},
  ): Promise<CallToolResult> {
    // Not `client.callTool`: it throws away results that break the tool's
    // outputSchema, and the registry must report those as a contract violation.
    return this.client.request(
      { method: 'tools/call', params: { name: rawName, arguments: args ?? {} } },
      CallToolResultSchema,
      // With a progress callback the SDK sends a progressToken; progress keeps a long call alive.
      opts.onprogress
        ? { signal: opts.signal, timeout: opts.timeoutMs, onprogress: opts.onprogress, resetTimeoutOnProgress: true }
        : { signal: opts.signal, timeout: opts.timeoutMs },
    ) as Promise<CallToolResult>;
  }

  close(): Promise<void> {
    if (this.state !== 'connecting') this.state = 'closed';
    return this.shutdown();
  }

  private async initialList(race: <T>(p: Promise<T>) => Promise<T>, signal: AbortSignal, timeout: number): Promise<void> {
    const options = { signal, timeout };
    for (let i = 0; i < MAX_INITIAL_RELISTS; i++) {
      const seq = this.toolsSeq;
      await race(this.fetchTools(options));
      if (seq === this.toolsSeq) break;
    }
    for (let i = 0; i < MAX_INITIAL_RELISTS; i++) {
      const seq = this.promptsSeq;
      await race(this.fetchPrompts(options));
      if (seq === this.promptsSeq) break;
    }
  }

  private async fetchTools(options: { signal?: AbortSignal; timeout: number }): Promise<Tool[]> {
    const caps = this.client.getServerCapabilities();
    const tools: Tool[] = [];
    let cursor: string | undefined;
    try {
      for (let page = 0; page < MAX_PAGES; page++) {
        const result = await this.client.request({ method: 'tools/list', params: cursor ? { cursor } : {} }, ListToolsResultSchema, options);
        tools.push(...(result.tools as Tool[]));
        if (!result.nextCursor || result.nextCursor === cursor) break;
        cursor = result.nextCursor;
      }
    } catch (err) {
      // A server without the tools capability may refuse tools/list: it has no tools.
      if (!(caps?.tools === undefined && err instanceof McpError && err.code === McpErrorCode.MethodNotFound)) throw err;
    }
    this.tools = tools;
    return tools;
  }

  private async fetchPrompts(options: { signal?: AbortSignal; timeout: number }): Promise<Prompt[]> {
    if (!this.client.getServerCapabilities()?.prompts) {
      this.prompts = [];
      return this.prompts;
    }
    const prompts: Prompt[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const result = await this.client.request({ method: 'prompts/list', params: cursor ? { cursor } : {} }, ListPromptsResultSchema, options);
      prompts.push(...(result.prompts as Prompt[]));
      if (!result.nextCursor || result.nextCursor === cursor) break;
      cursor = result.nextCursor;
    }
    this.prompts = prompts;
    return prompts;
  }

  private async buildTransport(): Promise<Transport> {
    const config = this.entry.config;
    if (config.headersHelper !== undefined && (this.kind === 'http' || this.kind === 'sse')) {
      this.helperHeaders = await runHeadersHelper({ server: this.name, url: config.url, command: config.headersHelper, cwd: this.opts.cwd, env: childEnv(this.opts.parentEnv ?? process.env, config.env, this.opts.envPolicy), ...(this.opts.signal ? { signal: this.opts.signal } : {}) });
    }
    switch (this.kind) {
      case 'stdio': {
        if (!config.command) throw this.configError('has no "command"', 'Set "command" (and "args") for a stdio server.');
        this.stdio = new StdioProcessTransport({
          command: config.command,
          args: config.args ?? [],
          env: childEnv(this.opts.parentEnv ?? process.env, config.env, this.opts.envPolicy),
          cwd: resolvePath(this.opts.cwd, config.cwd ?? '.'),
          tracker: this.opts.tracker,
          ...(this.opts.startPhase?.spawned ? { onSpawn: this.opts.startPhase.spawned } : {}),
        });
        return this.stdio;
      }
      case 'http': {
        const url = this.parseUrl();
        this.http = new StreamableHTTPClientTransport(url, {
          requestInit: { headers: { ...(config.headers ?? {}), ...this.helperHeaders } },
          fetch: sessionLossFetch((loss) => this.sessionGone(loss), this.statusRecorder()),
        });
        return this.http;
      }
      case 'sse':
        return this.sseTransport();
      case 'sdk': {
        const instance = config.instance;
        if (!isConnectable(instance)) {
          throw this.configError('has no in-process server instance', 'Pass an McpServer or Server object as "instance" of an sdk server.');
        }
        const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
        // Known before the await, so a timeout meanwhile still closes both ends.
        this.transport = clientSide;
        try {
          await instance.connect(serverSide);
        } catch (err) {
          throw new McpReconcilerError(ErrorCode.ConnectFailed, `in-process server could not accept a connection: ${describeError(err)}`, {
            hint: 'An SDK server instance serves one client at a time; close its previous connection first.',
            cause: err,
          });
        }
        return clientSide;
      }
    }
  }

  private sseTransport(): SSEClientTransport {
    return new SSEClientTransport(this.parseUrl(), {
      requestInit: { headers: { ...(this.entry.config.headers ?? {}), ...this.helperHeaders } },
      fetch: this.statusRecorder(),
    });
  }

  /**
   * Whether a failed streamable-HTTP connect should be retried over SSE: the
   * entry asks for it and the server answered the first request with a 4xx
   * other than 401 (credentials, not the transport), 408 or 429 (come back later).
   */
  private shouldFallBackToSse(err: unknown): boolean {
    if (this.kind !== 'http' || this.used !== 'http' || this.entry.config.fallbackToSse !== true || this.sawUnauthorized) return false;
    const status = httpStatusOf(err) ?? this.permanentStatus;
    // A 404 here is the path an SSE-only server does not serve, not a lost session.
    return status === 404 || isPermanentStatus(status);
  }

  /** Drop the streamable-HTTP attempt and put an SSE transport in its place. */
  private async switchToSse(): Promise<void> {
    const failed = this.transport;
    this.http = undefined;
    // The client must let go of the failed transport before it can connect another one.
    await this.client.close().catch(() => {});
    await failed?.close().catch(() => {});
    this.permanentStatus = undefined;
    this.lastTransportError = undefined;
    this.used = 'sse';
    this.transport = this.sseTransport();
  }

  private parseUrl(): URL {
    const raw = this.entry.config.url;
    if (!raw) throw this.configError('has no "url"', 'Set "url" for an http or sse server.');
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw this.configError(`has an invalid "url": ${raw}`, 'Use an absolute http:// or https:// URL.');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw this.configError(`has a "url" that is not http(s): ${url.protocol}`, 'Use an absolute http:// or https:// URL.');
    }
    return url;
  }

  /** A fetch that remembers a 401, so a connect failure can be reported as needs_auth. */
  private statusRecorder(): FetchLike {
    // OAuth sits closest to the network, so a 401 it resolves is never recorded here.
    const send: FetchLike = this.opts.wrapFetch ? this.opts.wrapFetch((u, i) => fetch(u, i)) : (u, i) => fetch(u, i);
    return async (url, init) => {
      const response = await send(url, init);
      if (response.status === 401) this.sawUnauthorized = true;
      if (isPermanentStatus(response.status)) this.permanentStatus ??= response.status;
      return response;
    };
  }

  private listChanged(kind: 'tools' | 'prompts'): void {
    if (kind === 'tools') this.toolsSeq++;
    else this.promptsSeq++;
    if (this.state === 'ready') this.emit({ type: kind === 'tools' ? 'tools_changed' : 'prompts_changed' });
  }

  private transportError(err: Error): void {
    this.lastTransportError = causeChain(err);
    if (this.state !== 'ready') return;
    // The SSE stream carries every response: once it breaks, the session is over
    // (EventSource would reconnect into a new, uninitialised session).
    if (err instanceof SseError) this.lose(`event stream failed: ${this.lastTransportError}`, false);
    // The streamable-HTTP GET stream could not be re-opened: the server is gone.
    else if (this.http && /Maximum reconnection attempts/.test(err.message)) this.lose(`server unreachable: ${this.lastTransportError}`, false);
  }

  private transportClosed(): void {
    // While connecting, the SDK fails the pending request itself and the
    // transport's own start error (spawn ENOENT, …) is the better message.
    this.lose(this.lastTransportError ?? 'connection closed', false);
  }

  private sessionGone(loss: SessionLoss): void {
    if (this.state === 'closed' || this.shutdownPromise) return;
    // No courtesy DELETE for a session that no longer exists or a server that cannot be reached.
    this.sessionDead = true;
    if (this.state === 'connecting') this.failConnect?.(new Error(loss.reason));
    else this.lose(loss.reason, loss.sessionLost);
  }

  /** One `lost` event per connection, only after it was established and never after our own close. */
  private lose(error: string, sessionLost: boolean): void {
    if (this.state !== 'ready') return;
    this.state = 'lost';
    this.emit({ type: 'lost', error, sessionLost });
    void this.shutdown();
  }

  private emit(event: ConnectionEvent): void {
    try {
      this.opts.onEvent?.(event);
    } catch {
      // A throwing subscriber must not break the connection.
    }
  }

  private shutdown(): Promise<void> {
    this.shutdownPromise ??= (async () => {
      if (this.http?.sessionId !== undefined && !this.sessionDead) {
        const http = this.http;
        await Promise.race([http.terminateSession().catch(() => {}), new Promise((r) => setTimeout(r, TERMINATE_SESSION_MS).unref())]);
      }
      await this.client.close().catch(() => {});
      // The client never owned a transport whose start failed; close it directly.
      await this.transport?.close().catch(() => {});
      await this.stdio?.close().catch(() => {});
    })();
    return this.shutdownPromise;
  }

  private withStderr(message: string): string {
    if (!this.stdio) return message;
    const exit = this.stdio.exitDescription();
    if (exit) return `${message}: ${exit}`;
    const tail = this.stdio.stderrTail().trim();
    return tail ? `${message}; stderr: ${tail.length > STDERR_IN_MESSAGE ? `…${tail.slice(-STDERR_IN_MESSAGE)}` : tail}` : message;
  }

  private configError(what: string, hint: string): McpReconcilerError {
    // A config mistake fails the same way every time: no retries, straight to `failed`.
    return new McpReconcilerError(ErrorCode.ConnectFailed, `Server "${this.name}" ${what}`, { hint, details: { server: this.name }, permanent: true });
  }

  private timeoutError(cause: unknown): McpReconcilerError {
    return new McpReconcilerError(ErrorCode.Timeout, this.withStderr(`Server "${this.name}" did not connect within ${this.timeoutMs} ms`), {
      hint: 'Check why the server starts slowly, or raise "timeout" (ms) in its config.',
      details: { server: this.name, timeoutMs: this.timeoutMs },
      cause,
    });
  }

  private abortedError(reason: unknown): McpReconcilerError {
    return new McpReconcilerError(ErrorCode.ConnectFailed, `Connecting to server "${this.name}" was aborted`, {
      details: { server: this.name, aborted: true },
      cause: reason,
    });
  }

  private connectError(err: unknown): McpReconcilerError {
    const details = { server: this.name, transport: this.used };
    if (this.sawUnauthorized || isUnauthorized(err)) {
      return new McpReconcilerError(ErrorCode.NeedsAuth, `Server "${this.name}" requires authorization (HTTP 401)`, {
        hint: `Sign in with \`mcp-reconciler auth ${this.name}\` (OAuth), or add credentials to the server config (for example an "Authorization" header) and reconnect.`,
        details,
        cause: err,
      });
    }
    if (isTimeout(err)) return this.timeoutError(err);
    if (err instanceof McpReconcilerError) {
      const message = err.message.startsWith(`Server "${this.name}"`) ? err.message : `Server "${this.name}": ${err.message}`;
      const permanent = err.permanent || PERMANENT_SPAWN_ERRNOS.has(String(err.details.errno));
      return new McpReconcilerError(err.code, message, { hint: err.hint, details: { ...details, ...err.details }, cause: err, permanent });
    }
    const status = httpStatusOf(err) ?? this.permanentStatus;
    if (isPermanentStatus(status)) {
      return new McpReconcilerError(ErrorCode.ConnectFailed, `Server "${this.name}" refused the connection with HTTP ${status}: ${causeChain(err)}`, {
        hint: 'Check the URL, headers and transport type in the server config; the server will not accept it as it is. Edit the config or run `mcp-reconciler reconnect` once fixed.',
        details: { ...details, status },
        cause: err,
        permanent: true,
      });
    }
    const exited = this.stdio?.exitDescription();
    const message = exited
      ? `Server "${this.name}" failed to start: ${exited}`
      : this.withStderr(`Server "${this.name}" failed to connect: ${causeChain(err)}`);
    return new McpReconcilerError(ErrorCode.ConnectFailed, message, {
      hint: this.kind === 'stdio' ? 'Run the command by hand to see why it fails.' : 'Check that the server is running and the URL is right.',
      details,
      cause: err,
    });
  }
}

/**
 * Connect to one server and list its tools (all pages) and prompts (when it
 * has the prompts capability), all within the timeout. Resolves with a live
 * connection whose later events go to `opts.onEvent`. Rejects with an
 * `McpReconcilerError` (`connect_failed`, `timeout` or `needs_auth`) naming the
 * server and the cause; nothing it started is left running when it rejects.
 */
export async function openConnection(entry: DesiredServer, opts: ConnectOptions): Promise<LiveConnection> {
  const connection = new Connection(entry, opts);
  await connection.open();
  return connection;
}
