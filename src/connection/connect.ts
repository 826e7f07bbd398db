/**
 * Everything between a desired server entry and a live SDK `Client`: connect
 * and list under a timeout over the transport `transports.ts` builds, and
 * turn what happens afterwards (exit, close, session loss, list changes) into
 * events. Retrying is not done here: connect throws, the supervisor decides.
 */
import {
  Client,
  LOG_LEVEL_META_KEY,
  type DiscoverResult,
  type FetchLike,
  type McpSubscription,
  type StreamableHTTPClientTransport,
  type SubscriptionFilter,
  type Transport,
  type VersionNegotiationMode,
} from '@modelcontextprotocol/client';
// The package's type vocabulary (registry, listing cache, controller API) is still SDK v1's
// spec types; the wire values are the same JSON (docs/protocol.md, what stays on v1).
import type { CallToolResult, Prompt, ReadResourceResult, Resource, ResourceTemplate, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ProtocolVerdict } from '../cache/listing-cache.js';
import type { DesiredServer, LogLevel, ProtocolChoice } from '../../machines/types.js';
import { transportOf } from '../config/identity.js';
import type { EnvPolicy } from './env.js';
import type { ProcessTracker } from './processes.js';
import type { SessionLoss } from './session-loss.js';
import type { StdioProcessTransport } from './stdio-transport.js';
import { clientCapabilities, installClientHandlers, type ClientFeatures } from './client-capabilities.js';
import {
  abortedError,
  causeChain,
  connectError,
  isConnectionClosed,
  isMethodNotFound,
  isPermanentStatus,
  isRequestTimeout,
  isServerError,
  isSseError,
  exitedOnProtocol,
  isProbeClosed,
  NEWEST_SPOKEN,
  isLegacyProbeAnswer,
  protocolRejectionOf,
  startTimeoutError,
  timeoutError,
} from './errors.js';
import { LazyJsonSchemaValidator } from '../util/ajv.js';
import type { HelperHeaders } from './helper-headers.js';
import { listAll } from './paginate.js';
import { warmLegacySchemas } from './schema-warmup.js';
import { checkToolDefinitions, type InvalidTool } from './tool-definitions.js';
import { buildTransport, shouldFallBackToSse, sseTransport, type TransportContext } from './transports.js';

/** What a live connection reports after it is established. */
export type ConnectionEvent =
  | { type: 'lost'; error: string; sessionLost: boolean }
  | { type: 'tools_changed' }
  | { type: 'prompts_changed' }
  | { type: 'resources_changed' }
  /** `notifications/resources/updated`: a resource the client subscribed to (or one below it) changed. */
  | { type: 'resource_updated'; uri: string };

/** A server's resources and resource templates, as one listing. */
export interface ResourceListing {
  resources: Resource[];
  resourceTemplates: ResourceTemplate[];
}

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
   * keeps starting; the open ends on success, process exit, a transport error,
   * `signal` or `startTimeoutMs`. The caller reports the slow start (the
   * machine's `connecting.slow`). Remote transports keep their deadline.
   */
  backgroundStart?: boolean;
  /**
   * With `backgroundStart`, the bound of a stdio start (spawn, `initialize`
   * and the first listings), counted from this call: past it the open fails
   * with a `timeout` error naming the request that got no answer, and the
   * process group is killed. Default: none (24 h).
   */
  startTimeoutMs?: number;
  clientInfo?: { name: string; version: string };
  /** Called for each event after the connection is established; never after our own `close()`. */
  onEvent?: (event: ConnectionEvent) => void;
  /**
   * Start-phase hooks, for a connect limiter that holds a slot only while a
   * server starts: `spawned` once a stdio child runs, `initialized` once the
   * server answered `initialize` (or `server/discover`), with the era found.
   */
  startPhase?: { spawned?(pid: number): void; answered?(learned: ProtocolVerdict | undefined): void; initialized?(protocol: ProtocolVerdict): void };
  /** Elicitation, sampling and roots offered to the server (docs/oauth.md); none declared when absent. */
  clientFeatures?: ClientFeatures;
  /** Wraps the HTTP fetch of http/sse transports: the OAuth layer (src/auth/manager.ts). */
  wrapFetch?: (next: FetchLike) => FetchLike;
  /** The protocol revision when the entry pins none (the controller's default). Default `auto`. */
  protocol?: ProtocolChoice;
  /**
   * What the last connection of this server negotiated (the listing cache
   * keeps it): under `auto` the connect goes straight to that era, without a
   * probe; if the server now refuses it, it probes once more (docs/protocol.md).
   */
  prior?: ProtocolVerdict;
  /** What a stdio server writes to stderr, chunk by chunk (its log). */
  onStderr?: (chunk: Buffer) => void;
  /** Each MCP log message (`notifications/message`) the server sends. */
  onLogMessage?: (params: { level: string; logger?: string; data?: unknown }) => void;
  /**
   * The least severe log message the server should send: `logging/setLevel`
   * right after the handshake when the server declares `logging` (each
   * connection is new, so every reconnect sends it again); on the 2026 wire,
   * which carries the level per request, it rides in each tool call's `_meta`.
   */
  logLevel?: LogLevel;
}

/** Abort and time limit of one request. */
export interface RequestTimeouts {
  signal?: AbortSignal;
  timeoutMs?: number;
}

/** Options of {@link LiveConnection.callTool}. */
export interface CallToolRequestOptions extends RequestTimeouts {
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
  /** Tools from the latest listing (the valid ones). */
  readonly tools: Tool[];
  /** Tools of the latest listing whose definition is invalid, with why (not in `tools`). */
  readonly invalidTools: InvalidTool[];
  /** Prompts from the latest listing ([] when the server has no prompts capability). */
  readonly prompts: Prompt[];
  /** Re-list all pages of tools/list and update `tools` and `invalidTools`. */
  listTools(): Promise<Tool[]>;
  /** Re-list prompts and update `prompts`. */
  listPrompts(): Promise<Prompt[]>;
  /** Resources from the latest listing ([] when the server has no resources capability). */
  readonly resources: Resource[];
  /** Resource templates from the latest listing. */
  readonly resourceTemplates: ResourceTemplate[];
  /** Why the listing at connect has no resources although the server declared them (it answered with an error). */
  readonly resourceError: string | undefined;
  /** Whether the server declared `resources.subscribe`. */
  readonly canSubscribe: boolean;
  /** Re-list resources and resource templates and update both. */
  listResources(): Promise<ResourceListing>;
  /** `resources/read` of `uri`, the result as the server sent it. */
  readResource(uri: string, opts?: RequestTimeouts): Promise<ReadResourceResult>;
  /** `resources/subscribe`: the server then sends `resource_updated` events for `uri`. */
  subscribeResource(uri: string, opts?: RequestTimeouts): Promise<void>;
  /** `resources/unsubscribe`. */
  unsubscribeResource(uri: string, opts?: RequestTimeouts): Promise<void>;
  /**
   * Call a tool by its server-side name. The result is returned as the server
   * sent it: output contracts are checked by the registry, not here.
   */
  callTool(rawName: string, args: Record<string, unknown> | undefined, opts?: CallToolRequestOptions): Promise<CallToolResult>;
  /** The last few KB of a stdio server's stderr ('' for other transports). */
  stderrTail(): string;
  /**
   * Ask the server for log messages at `level` and above from now on
   * (`logging/setLevel`; the 2026 wire: each later tool call carries it).
   * Resolves `false` when the server does not declare `logging`.
   */
  setLogLevel(level: LogLevel): Promise<boolean>;
  /** Why the `logLevel` sent at connect was refused (the connection stands without it). */
  readonly logLevelError: string | undefined;
  /**
   * The protocol era negotiated: `modern` (2026-07-28, `server/discover`,
   * stateless requests) or `legacy` (2025-11-25 and older, `initialize`),
   * with what the listing cache keeps so the next start skips the probe.
   */
  readonly protocol: ProtocolVerdict;
  /** The revision in use (`2026-07-28`, `2025-11-25`, …). */
  readonly protocolVersion: string | undefined;
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
const STDERR_IN_MESSAGE = 2_000;
/**
 * How long a stdio server has to answer the `server/discover` probe under
 * `auto` before it counts as a 2025-era server (some never answer an unknown
 * request before `initialize`). Bounded by the connect timeout. A new-wire
 * server that was merely slow is caught by its refusal of `initialize`, which
 * names 2026-07-28: the connect then goes again, pinned to it.
 */
const STDIO_PROBE_TIMEOUT_MS = 5_000;
/** Wait before re-opening a `subscriptions/listen` stream that dropped. */
const RELISTEN_DELAY_MS = 250;

/** The SDK's negotiation mode for a `protocol` choice. */
function negotiationOf(protocol: ProtocolChoice): VersionNegotiationMode {
  if (protocol === 'auto') return 'auto';
  if (protocol === NEWEST_SPOKEN) return { pin: NEWEST_SPOKEN };
  // A 2025 pin is the plain `initialize` handshake (it negotiates down to older 2025 revisions itself).
  return 'legacy';
}

class Connection implements LiveConnection {
  readonly name: string;
  readonly generation: number;
  client: Client;
  tools: Tool[] = [];
  invalidTools: InvalidTool[] = [];
  prompts: Prompt[] = [];
  resources: Resource[] = [];
  resourceTemplates: ResourceTemplate[] = [];
  resourceError: string | undefined;
  protocol: ProtocolVerdict = { era: 'legacy' };
  /** Whether the current attempt opens with the SDK's `server/discover` probe (`auto`, no era known). */
  private probing = false;

  private readonly entry: DesiredServer;
  private opts: ConnectOptions;
  private readonly kind: ReturnType<typeof transportOf>;
  /** Differs from `kind` only after the SSE fallback. */
  private used: ReturnType<typeof transportOf>;
  private readonly timeoutMs: number;
  /** `auto`, or the revision pinned by the entry or the controller. */
  private readonly choice: ProtocolChoice;
  private transport: Transport | undefined;
  private stdio: StdioProcessTransport | undefined;
  private http: StreamableHTTPClientTransport | undefined;
  private state: 'connecting' | 'ready' | 'lost' | 'closed' = 'connecting';
  private lastTransportError: string | undefined;
  private sawUnauthorized = false;
  /** The first answer that no retry will change (see `isPermanentStatus`), while connecting. */
  private permanentStatus: number | undefined;
  private sessionDead = false;
  /** The requests of the open still waiting for an answer, in the order they went out: what a start timeout names. */
  private readonly unanswered = new Set<string>();
  /** Bumped by each list_changed notification, so a listing raced by one is taken again. */
  private readonly seq = { tools: 0, prompts: 0, resources: 0 };
  private failConnect: ((err: unknown) => void) | undefined;
  private shutdownPromise: Promise<void> | undefined;
  /** What the entry's `headersHelper` printed (re-run after a 401 once connected); merged over `headers`, never logged. */
  private helper: HelperHeaders | undefined;
  /** What building (and re-building, for the SSE fallback) a transport needs; dropped once open. */
  private transportContext: TransportContext | undefined;
  /** The new wire's change stream (`subscriptions/listen`): list changes and subscribed resources. */
  private listening: McpSubscription | undefined;
  /** Resource URIs subscribed on the new wire: they ride in the listen filter. */
  private readonly listenUris = new Set<string>();
  /** Serialises re-opening the listen stream. */
  private relisten: Promise<void> = Promise.resolve();
  /** The log level asked for (`logLevel`, `setLogLevel`). */
  private logLevel: LogLevel | undefined;
  logLevelError: string | undefined;

  constructor(entry: DesiredServer, opts: ConnectOptions) {
    this.entry = entry;
    this.opts = opts;
    this.name = entry.name;
    this.generation = opts.generation;
    this.kind = transportOf(entry.config);
    this.used = this.kind;
    this.timeoutMs = entry.config.timeout ?? opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.choice = entry.config.protocol ?? opts.protocol ?? 'auto';
    this.logLevel = opts.logLevel;
    this.client = this.newClient(negotiationOf(this.choice));
    this.transportContext = {
      server: entry.name,
      config: entry.config,
      kind: this.kind,
      cwd: opts.cwd,
      parentEnv: opts.parentEnv ?? process.env,
      ...(opts.envPolicy ? { envPolicy: opts.envPolicy } : {}),
      tracker: opts.tracker,
      ...(opts.signal ? { signal: opts.signal } : {}),
      // Through `opts`, which lets go of the hooks once open (`settle`); the transport keeps this one.
      ...(opts.startPhase?.spawned ? { onSpawn: (pid: number) => this.opts.startPhase?.spawned?.(pid) } : {}),
      // Under `auto` with no era known the first answer is the probe's: a refusal is a 2025-era server.
      ...(opts.startPhase?.answered ? { onAnswer: (m: object) => this.opts.startPhase?.answered?.(this.probing && isLegacyProbeAnswer(m) ? { era: 'legacy' } : undefined) } : {}),
      ...(opts.onStderr ? { onStderr: opts.onStderr } : {}),
      ...(opts.wrapFetch ? { wrapFetch: opts.wrapFetch } : {}),
      onStatus: (status) => this.recordStatus(status),
      onSessionLoss: (loss) => this.sessionGone(loss),
      onTransport: (transport) => {
        this.transport = transport;
      },
      // Kept for the message of a loss that may follow; the request itself fails with its 401.
      onHelperRerunFailed: (err) => {
        this.lastTransportError = causeChain(err);
      },
    };
  }

  /** A client with our handlers, negotiating as `mode` says. */
  private newClient(mode: VersionNegotiationMode): Client {
    const opts = this.opts;
    const client = new Client(opts.clientInfo ?? DEFAULT_CLIENT_INFO, {
      capabilities: clientCapabilities(opts.clientFeatures),
      jsonSchemaValidator: new LazyJsonSchemaValidator(),
      versionNegotiation: {
        mode,
        // Over HTTP a silent probe is an outage (the SDK fails the connect); over stdio it is a 2025-era server.
        ...(this.kind === 'stdio' ? { probe: { timeoutMs: Math.min(STDIO_PROBE_TIMEOUT_MS, this.timeoutMs) } } : {}),
      },
    });
    installClientHandlers(client, this.entry.name, opts.clientFeatures);
    client.setNotificationHandler('notifications/tools/list_changed', () => this.listChanged('tools'));
    client.setNotificationHandler('notifications/prompts/list_changed', () => this.listChanged('prompts'));
    client.setNotificationHandler('notifications/resources/list_changed', () => this.listChanged('resources'));
    client.setNotificationHandler('notifications/resources/updated', (n) => {
      if (this.state === 'ready') this.emit({ type: 'resource_updated', uri: n.params.uri });
    });
    if (opts.onLogMessage) {
      const onLog = opts.onLogMessage;
      client.setNotificationHandler('notifications/message', (n) => onLog(n.params));
    }
    client.onerror = (err) => this.transportError(err);
    client.onclose = () => this.transportClosed(client);
    return client;
  }

  get transportType(): ReturnType<typeof transportOf> {
    return this.used;
  }

  get pid(): number | undefined {
    return this.stdio?.pid;
  }

  get protocolVersion(): string | undefined {
    return this.client.getNegotiatedProtocolVersion();
  }

  stderrTail(): string {
    return this.stdio?.stderrTail() ?? '';
  }

  async setLogLevel(level: LogLevel): Promise<boolean> {
    this.logLevel = level;
    if (!this.client.getServerCapabilities()?.logging) return false;
    if (this.client.getProtocolEra() === 'modern') return true;
    await this.client.setLoggingLevel(level, { timeout: this.timeoutMs });
    return true;
  }

  /** The connect-time `logging/setLevel`: a server that refuses it still connects (the refusal is kept for its log). */
  private async sendLogLevel(level: LogLevel, options: { signal: AbortSignal; timeout: number }): Promise<void> {
    this.logLevelError = undefined;
    if (!this.client.getServerCapabilities()?.logging) return;
    try {
      await this.client.setLoggingLevel(level, options);
    } catch (err) {
      if (options.signal.aborted) throw err;
      this.logLevelError = `logging/setLevel "${level}" was refused: ${causeChain(err)}`;
    }
  }

  /** Connect and list under one deadline; on any failure close everything, then throw. */
  async open(): Promise<void> {
    const outer = this.opts.signal;
    if (outer?.aborted) throw abortedError(this.name, outer.reason);
    const deadline = new AbortController();
    let timedOut = false;
    // A stdio server still starting is not failing: with `backgroundStart` its open has
    // no deadline and ends only on success, exit, a transport error or an abort.
    const bounded = !(this.opts.backgroundStart === true && this.kind === 'stdio');
    // Background starts are bounded only by the start bound; the SDK's own request
    // timeouts stay out of the way (the deadline aborts every request it covers).
    const startBound = bounded ? undefined : this.opts.startTimeoutMs;
    const limitMs = bounded ? this.timeoutMs : startBound;
    const openTimeout = bounded ? this.timeoutMs : UNBOUNDED_OPEN_MS;
    const timer =
      limitMs !== undefined
        ? setTimeout(() => {
            timedOut = true;
            deadline.abort(new Error('timeout'));
          }, limitMs)
        : undefined;
    const onOuterAbort = (): void => deadline.abort(outer?.reason);
    outer?.addEventListener('abort', onOuterAbort, { once: true });
    const interrupted = new Promise<never>((_, reject) => {
      this.failConnect = reject;
      deadline.signal.addEventListener('abort', () => reject(deadline.signal.reason), { once: true });
    });
    interrupted.catch(() => {});
    const race = <T>(p: Promise<T>): Promise<T> => Promise.race([p, interrupted]);
    // Under `auto`, the era the listing cache remembers is tried first, without a probe.
    let prior = this.choice === 'auto' ? this.opts.prior : undefined;
    let retried = false;
    try {
      for (;;) {
        try {
          await this.attempt(race, deadline.signal, openTimeout, prior);
          break;
        } catch (err) {
          const next = retried || deadline.signal.aborted ? undefined : this.retryAfter(err, prior);
          if (!next) throw err;
          // One more try, on a fresh transport (a stdio server is started again).
          retried = true;
          prior = next.prior;
          await this.resetAttempt(next.mode);
        }
      }
      if (deadline.signal.aborted) throw deadline.signal.reason;
      this.state = 'ready';
      this.helper?.arm();
      this.settle();
    } catch (err) {
      await this.shutdown();
      if (timedOut && startBound !== undefined) throw startTimeoutError(this.name, startBound, this.unanswered.values().next().value ?? 'initialize', err, (m) => this.withStderr(m));
      if (timedOut) throw timeoutError(this.name, this.timeoutMs, err, (m) => this.withStderr(m));
      if (outer?.aborted) throw abortedError(this.name, outer.reason);
      throw connectError(err, {
        server: this.name,
        kind: this.kind,
        used: this.used,
        timeoutMs: this.timeoutMs,
        protocol: this.choice,
        sawUnauthorized: this.sawUnauthorized,
        permanentStatus: this.permanentStatus,
        exited: this.stdio?.exitDescription(),
        withStderr: (m) => this.withStderr(m),
      });
    } finally {
      clearTimeout(timer);
      outer?.removeEventListener('abort', onOuterAbort);
      this.failConnect = undefined;
    }
  }

  /**
   * Once open, let go of what only the open needed (the start-phase hooks and
   * the limiter's timers they hold, the connect signal, the transport recipe):
   * it would otherwise live as long as the connection.
   */
  private settle(): void {
    const { startPhase: _startPhase, signal: _signal, ...kept } = this.opts;
    this.opts = kept;
    this.transportContext = undefined;
  }

  /** One connect over a new transport: handshake (or adopt `prior`), change stream, listings. */
  private async attempt(race: <T>(p: Promise<T>) => Promise<T>, signal: AbortSignal, timeout: number, prior: ProtocolVerdict | undefined): Promise<void> {
    // What a start timeout names when nothing answered: a silent server under `auto` is taken for a 2025 one.
    const opening = prior?.era === 'modern' || this.choice === NEWEST_SPOKEN ? 'server/discover' : 'initialize';
    this.unanswered.add(opening);
    this.transport = await race(this.buildTransport());
    this.probing = prior === undefined && this.choice === 'auto';
    const connectOptions = { signal, timeout, ...(prior ? { prior: prior.era === 'modern' ? { kind: 'modern' as const, discover: prior.discover as DiscoverResult } : { kind: 'legacy' as const } } : {}) };
    try {
      const connecting = this.client.connect(this.transport, connectOptions);
      // Under `auto` with no era known the SDK probes first: its 2025 schemas are built while the probe is out.
      if (prior === undefined && this.choice === 'auto') setImmediate(warmLegacySchemas);
      await race(connecting);
    } catch (err) {
      if (signal.aborted || !shouldFallBackToSse(err, { config: this.entry.config, kind: this.kind, used: this.used, sawUnauthorized: this.sawUnauthorized, permanentStatus: this.permanentStatus })) throw err;
      // VS Code's and Cursor's rule for `type: http`: a 4xx to the first POST means an SSE-only server (2025 wire only).
      await this.switchToSse();
      await race(this.client.connect(this.transport, { signal, timeout, prior: { kind: 'legacy' } }));
    }
    this.unanswered.delete(opening);
    const modern = this.client.getProtocolEra() === 'modern';
    const discover = this.client.getDiscoverResult();
    this.protocol = modern && discover ? { era: 'modern', discover: JSON.parse(JSON.stringify(discover)) as Record<string, unknown> } : { era: 'legacy' };
    this.opts.startPhase?.initialized?.(this.protocol);
    // Before the listings, so what the server logs while listing is already filtered.
    if (this.logLevel !== undefined && !modern) await race(this.sendLogLevel(this.logLevel, { signal, timeout }));
    // The change stream opens before the listings, so no change between the two is missed.
    if (modern) await race(this.listen(false));
    await this.initialList(race, signal, timeout);
  }

  /**
   * Whether a failed attempt is worth one more, and how: a remembered era the
   * server now refuses is probed afresh; a `2025` opening that a new-wire
   * server refused (a slow server that missed the stdio probe) goes again
   * pinned to the revision it named; a stdio server that quit on the probe
   * is started again with `initialize`.
   */
  private retryAfter(err: unknown, prior: ProtocolVerdict | undefined): { mode: VersionNegotiationMode; prior: ProtocolVerdict | undefined } | undefined {
    if (this.choice !== 'auto') return undefined;
    const rejection = protocolRejectionOf(err);
    // A stdio server that quits on a request it does not know before `initialize` (the probe ran
    // in place, on its one life): start it again and open with `initialize` straight away.
    if (prior === undefined && this.kind === 'stdio' && isProbeClosed(err) && !exitedOnProtocol(this.stdio?.exitDescription())) return { mode: 'auto', prior: { era: 'legacy' } };
    if (prior !== undefined) {
      // A modern verdict that is stale fails at its first request, in any way the server words it.
      const stale = rejection !== undefined || (prior.era === 'modern' && (isServerError(err) || isMethodNotFound(err)));
      return stale ? { mode: 'auto', prior: undefined } : undefined;
    }
    if (rejection?.supported?.includes(NEWEST_SPOKEN) && this.client.getProtocolEra() !== 'modern') return { mode: { pin: NEWEST_SPOKEN }, prior: undefined };
    return undefined;
  }

  /** Tear down a failed attempt (client, transport, child) so the next starts clean. */
  private async resetAttempt(mode: VersionNegotiationMode): Promise<void> {
    const old = this.client;
    this.client = this.newClient(mode);
    await old.close().catch(() => {});
    await this.transport?.close().catch(() => {});
    await this.stdio?.close().catch(() => {});
    this.transport = undefined;
    this.stdio = undefined;
    this.http = undefined;
    this.helper?.close();
    this.helper = undefined;
    this.permanentStatus = undefined;
    this.lastTransportError = undefined;
    this.used = this.kind;
    this.unanswered.clear();
  }

  listTools(): Promise<Tool[]> {
    return this.fetchTools({ timeout: this.timeoutMs });
  }

  listPrompts(): Promise<Prompt[]> {
    return this.fetchPrompts({ timeout: this.timeoutMs });
  }

  listResources(): Promise<ResourceListing> {
    return this.fetchResources({ timeout: this.timeoutMs });
  }

  get canSubscribe(): boolean {
    return this.client.getServerCapabilities()?.resources?.subscribe === true;
  }

  readResource(uri: string, opts: RequestTimeouts = {}): Promise<ReadResourceResult> {
    return this.client.request({ method: 'resources/read', params: { uri } }, requestOptions(opts, undefined)) as Promise<ReadResourceResult>;
  }

  async subscribeResource(uri: string, opts: RequestTimeouts = {}): Promise<void> {
    if (this.client.getProtocolEra() === 'modern') {
      // The new wire has no resources/subscribe: the URIs ride in the listen filter.
      if (this.listenUris.has(uri)) return;
      this.listenUris.add(uri);
      try {
        await this.listen(true, opts);
      } catch (err) {
        this.listenUris.delete(uri);
        throw err;
      }
      return;
    }
    await this.client.request({ method: 'resources/subscribe', params: { uri } }, requestOptions(opts, this.timeoutMs));
  }

  async unsubscribeResource(uri: string, opts: RequestTimeouts = {}): Promise<void> {
    if (this.client.getProtocolEra() === 'modern') {
      if (!this.listenUris.delete(uri)) return;
      await this.listen(true, opts);
      return;
    }
    await this.client.request({ method: 'resources/unsubscribe', params: { uri } }, requestOptions(opts, this.timeoutMs));
  }

  callTool(
    rawName: string,
    args: Record<string, unknown> | undefined,
    opts: CallToolRequestOptions = {},
  ): Promise<CallToolResult> {
    // Not `client.callTool`: it throws away results that break the tool's
    // outputSchema, and the registry must report those as a contract violation.
    // On the new wire an input-required result is answered through our
    // elicitation/sampling/roots handlers inside this one call (the SDK retries it).
    // With a progress callback the SDK sends a progressToken; progress keeps a long call alive.
    const options = opts.onprogress
      ? { ...requestOptions(opts, undefined), onprogress: opts.onprogress, resetTimeoutOnProgress: true }
      : requestOptions(opts, undefined);
    // The 2026 wire has no session to hold a log level: each request carries it (SEP-2577).
    const logMeta = this.logLevel !== undefined && this.client.getProtocolEra() === 'modern' && this.client.getServerCapabilities()?.logging ? { _meta: { [LOG_LEVEL_META_KEY]: this.logLevel } } : {};
    const params = { name: rawName, arguments: args ?? {}, ...logMeta };
    const listed = this.tools.find((t) => t.name === rawName);
    if (listed) {
      // Through `client.callTool` with the listed definition minus its outputSchema: the SDK
      // sends the SEP-2243 `Mcp-Param-*` headers of its `x-mcp-header` parameters (new wire,
      // HTTP) and, with no outputSchema, leaves the result's contract to the registry.
      const { outputSchema: _unchecked, ...toolDefinition } = listed;
      return this.client.callTool(params, { ...options, toolDefinition: toolDefinition as CallToolDefinition }) as Promise<unknown> as Promise<CallToolResult>;
    }
    return this.client.request({ method: 'tools/call', params }, options) as Promise<unknown> as Promise<CallToolResult>;
  }

  close(): Promise<void> {
    if (this.state !== 'connecting') this.state = 'closed';
    return this.shutdown();
  }

  /**
   * Open (or re-open, when `replace`) the new wire's `subscriptions/listen`
   * stream with what the server can tell: its list changes and the
   * subscribed resources. The new stream is acknowledged before the old one
   * closes, so nothing falls between them.
   */
  private listen(replace: boolean, opts: RequestTimeouts = {}): Promise<void> {
    const run = async (): Promise<void> => {
      const caps = this.client.getServerCapabilities();
      const filter: SubscriptionFilter = {
        ...(caps?.tools?.listChanged ? { toolsListChanged: true } : {}),
        ...(caps?.prompts?.listChanged ? { promptsListChanged: true } : {}),
        ...(caps?.resources?.listChanged ? { resourcesListChanged: true } : {}),
        ...(this.listenUris.size > 0 ? { resourceSubscriptions: [...this.listenUris] } : {}),
      };
      const previous = this.listening;
      if (Object.keys(filter).length === 0) {
        this.listening = undefined;
        await previous?.close().catch(() => {});
        return;
      }
      if (previous && !replace) return;
      const sub = await this.client.listen(filter, requestOptions(opts, this.timeoutMs));
      this.listening = sub;
      void sub.closed.then((how) => this.listenEnded(sub, how));
      await previous?.close().catch(() => {});
    };
    const next = this.relisten.then(run);
    this.relisten = next.catch(() => {});
    return next;
  }

  /** The listen stream ended: ours to re-open when the server dropped it, with a re-list for what may have changed meanwhile. */
  private listenEnded(sub: McpSubscription, how: 'local' | 'graceful' | 'remote'): void {
    if (how === 'local' || this.listening !== sub || this.state === 'closed' || this.shutdownPromise) return;
    this.listening = undefined;
    setTimeout(() => {
      if (this.state !== 'ready' || this.listening) return;
      this.listen(false).then(
        () => {
          for (const kind of ['tools', 'prompts', 'resources'] as const) this.listChanged(kind);
        },
        (err: unknown) => this.lose(`the server's change stream (subscriptions/listen) ended and could not be re-opened: ${causeChain(err)}`, false),
      );
    }, RELISTEN_DELAY_MS).unref();
  }

  private async initialList(race: <T>(p: Promise<T>) => Promise<T>, signal: AbortSignal, timeout: number): Promise<void> {
    const options = { signal, timeout };
    const fetchers: Record<keyof typeof this.seq, () => Promise<unknown>> = {
      tools: () => this.fetchTools(options),
      prompts: () => this.fetchPrompts(options),
      resources: () => this.fetchResources(options).catch((err: unknown) => this.resourcesRefused(err)),
    };
    // The three listings go out together: one round trip of the server instead of three.
    await Promise.all(
      (['tools', 'prompts', 'resources'] as const).map(async (kind) => {
        const method = `${kind}/list`;
        this.unanswered.add(method);
        for (let i = 0; i < MAX_INITIAL_RELISTS; i++) {
          const seq = this.seq[kind];
          await race(fetchers[kind]());
          if (seq === this.seq[kind]) break;
        }
        this.unanswered.delete(method);
      }),
    );
  }

  private async fetchTools(options: { signal?: AbortSignal; timeout: number }): Promise<Tool[]> {
    let raw: unknown[] = [];
    try {
      raw = await listAll(this.client, 'tools', options);
    } catch (err) {
      // A server without the tools capability may refuse tools/list: it has no tools.
      const caps = this.client.getServerCapabilities();
      if (!(caps?.tools === undefined && isMethodNotFound(err))) throw err;
    }
    const { tools: checked, invalid } = checkToolDefinitions(raw);
    const tools = this.withoutInvalidHeaderTools(checked, invalid);
    this.tools = tools;
    this.invalidTools = invalid;
    return tools;
  }

  /**
   * SEP-2243 (new wire over HTTP): a tool whose input schema declares an
   * invalid `x-mcp-header` is left out of the listing, as the SDK's own
   * `listTools()` does. Ours lists through `request()` (lenient, see
   * tool-definitions.ts), so the SDK's filter is called on the checked tools:
   * its rules stay the SDK's. Its method is internal (`_`-prefixed), hence
   * the guard: a SDK without it leaves the listing as it is. The SDK says
   * what is wrong only on `console.warn`; that text is taken into the
   * tool's reason (status, `why`, the host's logger) instead of going to the
   * host's stderr.
   */
  private withoutInvalidHeaderTools(tools: Tool[], invalid: InvalidTool[]): Tool[] {
    const exclude = (this.client as unknown as { _excludeInvalidXMcpHeaderTools?: (r: { tools: Tool[] }) => void })._excludeInvalidXMcpHeaderTools;
    if (typeof exclude !== 'function') return tools;
    const result = { tools };
    const faults = new Map<string, string>();
    const warn = console.warn;
    // Synchronous: nothing else runs while the SDK's warnings are taken.
    console.warn = (...args: unknown[]): void => {
      const m = /^\[mcp-sdk\] excluding tool '(.*)' from tools\/list: invalid x-mcp-header declaration — (.*)$/s.exec(String(args[0]));
      if (m) faults.set(m[1]!, m[2]!);
      else warn.apply(console, args);
    };
    try {
      exclude.call(this.client, result);
    } finally {
      console.warn = warn;
    }
    if (result.tools.length === tools.length) return tools;
    const kept = new Set(result.tools);
    for (const t of tools) {
      if (kept.has(t)) continue;
      const fault = faults.get(t.name);
      invalid.push({
        rawName: t.name,
        reason:
          `its input schema declares an invalid "x-mcp-header" (SEP-2243${fault ? `: ${fault}` : ''}), so it cannot be called over HTTP on protocol 2026-07-28; the server's other tools are registered. ` +
          `The server must fix the declaration (report it to its maintainer); "excludeTools": [${JSON.stringify(t.name)}] in its config silences this warning`,
      });
    }
    return result.tools;
  }

  private async fetchPrompts(options: { signal?: AbortSignal; timeout: number }): Promise<Prompt[]> {
    this.prompts = this.client.getServerCapabilities()?.prompts ? await listAll(this.client, 'prompts', options) : [];
    return this.prompts;
  }

  /**
   * A server that answers its resource listing with an error keeps its
   * tools: it connects with no resources and `resourceError` says why. A
   * transport failure or a timeout still fails the connect.
   */
  private resourcesRefused(err: unknown): void {
    // Timeouts and a closed connection are the SDK's own errors, not the server's answer.
    if (!isServerError(err) || isRequestTimeout(err) || isConnectionClosed(err)) throw err;
    this.resourceError = `resources/list failed: ${(err as Error).message}`;
  }

  private async fetchResources(options: { signal?: AbortSignal; timeout: number }): Promise<ResourceListing> {
    if (!this.client.getServerCapabilities()?.resources) {
      this.resources = [];
      this.resourceTemplates = [];
      return { resources: [], resourceTemplates: [] };
    }
    const resources = await listAll(this.client, 'resources', options);
    let resourceTemplates: ResourceTemplate[] = [];
    try {
      resourceTemplates = await listAll(this.client, 'resourceTemplates', options);
    } catch (err) {
      // Templates are optional within the capability: a server without them may not answer the method.
      if (!isMethodNotFound(err)) throw err;
    }
    this.resources = resources;
    this.resourceTemplates = resourceTemplates;
    return { resources, resourceTemplates };
  }

  private async buildTransport(): Promise<Transport> {
    const built = await buildTransport(this.transportContext!);
    this.helper = built.helper;
    this.stdio = built.stdio;
    this.http = built.http;
    return built.transport;
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
    this.transport = await sseTransport(this.transportContext!, this.helper);
  }

  /** Remember a 401 (a connect failure is then needs_auth) and the first status no retry changes. */
  private recordStatus(status: number): void {
    if (status === 401) this.sawUnauthorized = true;
    if (isPermanentStatus(status)) this.permanentStatus ??= status;
  }

  private listChanged(kind: 'tools' | 'prompts' | 'resources'): void {
    this.seq[kind]++;
    if (this.state === 'ready') this.emit({ type: `${kind}_changed` });
  }

  private transportError(err: Error): void {
    this.lastTransportError = causeChain(err);
    if (this.state !== 'ready') return;
    // The SSE stream carries every response: once it breaks, the session is over
    // (EventSource would reconnect into a new, uninitialised session).
    if (isSseError(err)) this.lose(`event stream failed: ${this.lastTransportError}`, false);
    // The streamable-HTTP GET stream could not be re-opened: the server is gone.
    else if (this.http && /Maximum reconnection attempts/.test(err.message)) this.lose(`server unreachable: ${this.lastTransportError}`, false);
  }

  private transportClosed(client: Client): void {
    // A client replaced by a retry closes without meaning anything.
    if (client !== this.client) return;
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
      this.helper?.close();
      const listening = this.listening;
      this.listening = undefined;
      if (listening) await Promise.race([listening.close().catch(() => {}), new Promise((r) => setTimeout(r, TERMINATE_SESSION_MS).unref())]);
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
}

/** The SDK's request options of a call: its signal, and its timeout or `fallback`. */
function requestOptions(opts: RequestTimeouts, fallback: number | undefined): { signal?: AbortSignal; timeout?: number } {
  const timeout = opts.timeoutMs ?? fallback;
  return { ...(opts.signal ? { signal: opts.signal } : {}), ...(timeout !== undefined ? { timeout } : {}) };
}

/**
 * Connect to one server and list its tools (all pages), prompts and
 * resources with their templates (each when it has the capability), all
 * within the timeout. Resolves with a live
 * connection whose later events go to `opts.onEvent`. Rejects with an
 * `McpReconcilerError` (`connect_failed`, `timeout` or `needs_auth`) naming the
 * server and the cause; nothing it started is left running when it rejects.
 */
export async function openConnection(entry: DesiredServer, opts: ConnectOptions): Promise<LiveConnection> {
  const connection = new Connection(entry, opts);
  await connection.open();
  return connection;
}

/** The tool definition `client.callTool` takes (our `Tool` is the spec type, its schema typed more loosely). */
type CallToolDefinition = NonNullable<Parameters<Client['callTool']>[1]>['toolDefinition'];
