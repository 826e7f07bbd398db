import { availableParallelism, homedir } from 'node:os';
import path from 'node:path';
import { createActor, type Actor, type AnyActorRef } from 'xstate';
import type { CallToolResult, GetPromptResult, ReadResourceResult, Root, Tool } from '@modelcontextprotocol/sdk/types.js';
import { reconcilerMachine } from '../../machines/reconciler.machine.js';
import { isInTransit, stateNameOf } from '../../machines/reason.js';
import { slowStartOf, type ServerContext } from '../../machines/server.machine.js';
import { GATED_SCOPES, LOG_LEVELS, type DesiredMap, type DesiredServer, type LogLevel, type Scope, type ServerConfig } from '../../machines/types.js';
import { ConfigReader, configSources } from '../config/reader.js';
import { resolvePreset, type Preset } from '../config/presets.js';
import type { ConfigSource } from '../config/sources.js';
import type { ComputedGating, SourceSettings } from '../gating/compute.js';
import { canonicalRoot, defaultApprovalsPath, FileApprovalStore } from '../approvals/store.js';
import { defaultProcessStatePath } from '../connection/process-records.js';
import { ProcessTracker } from '../connection/processes.js';
import { defaultLogDir, readServerLog, ServerLogWriter, type LogRecord, type ReadLogOptions } from './server-logs.js';
import { ToolRegistry, type RegisteredPrompt, type RegisteredTool } from '../registry/registry.js';
import { defaultListingCacheDir, ListingCache } from '../cache/listing-cache.js';
import { watchConfigFiles } from '../watch/config-watcher.js';
import { ReloadCoalescer } from '../watch/coalescer.js';
import { ErrorCode, McpReconcilerError, describeError } from '../errors.js';
import type { AuthorizeOptions } from '../auth/manager.js';
import type { SearchToolsOptions, ToolMatch, ToolSearch } from '../search/tool-search.js';
import { selectTools, type ExposedTools } from '../search/exposure.js';
import { ToolUsage } from '../search/usage.js';
import { ToolDefinitions } from '../approvals/tool-definitions.js';
import { getOwn } from '../util/own.js';
import { AuthHooks } from './auth.js';
import { Calls } from './calls.js';
import { Connections } from './connections.js';
import { decisionEntry, Decisions, entryOrThrow } from './decisions.js';
import { DesiredState } from './desired.js';
import { SafeEmitter } from './emitter.js';
import { Semaphore } from './semaphore.js';
import { StatusView } from './status.js';
import { Transitions } from './transitions.js';
import { Workspace } from './workspace.js';
import { entryFile, Switches, type SetEnabledOptions, type SetEnabledResult } from './switches.js';
import { profileNames } from './profiles.js';
import { ToolPolicy } from './tool-policy.js';
import type {
  CallToolOptions,
  Logger,
  McpControllerEvents,
  McpControllerOptions,
  Reason,
  RegisteredResource,
  RegisteredResourceTemplate,
  ResourceOptions,
  ResourceUpdateListener,
  ServerStatus,
} from './types.js';

// Measured by `npm run bench` (N=50 stdio servers on 2 cores): 4 at once beat 2, 8,
// 16 and all-at-once; starting servers is CPU-bound, so more only adds contention.
const DEFAULT_CONNECT_CONCURRENCY = Math.max(2, 2 * availableParallelism());

/** The start bound of a server whose config sets no `startTimeoutMs`: patient enough for a first `npx` download. */
export const DEFAULT_START_TIMEOUT_MS = 180_000;

/** `start()`'s readiness wait per server, counted from when its start left the connect queue. */
const DEFAULT_READY_TIMEOUT_MS = 10_000;

const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };

/**
 * The controller: owns the reconciler actor, the connections, the tool
 * registry and the config watcher of one workspace. Create it with
 * {@link createMcpController}.
 */
export class McpController {
  /** The reconciler actor, for inspection (dashboards, tests). */
  readonly actor: Actor<typeof reconcilerMachine>;

  /** What the collaborators share: options, registry, reader, root, cache, desired map, the actor. */
  private readonly ws: Workspace;
  /** Status rows and unavailability reasons, read from the actors. */
  private readonly view: StatusView;
  /** Tool calls and prompt gets, waiting for a connection where they may. */
  private readonly calls: Calls;
  private readonly coalescer: ReloadCoalescer;
  /** The machines' I/O: connect and session actors and their connections. */
  private readonly connections: Connections;
  /** Server state changes as the host hears of them (events, logs, holds). */
  private readonly transitions: Transitions;
  /** The config → machines side: desired map, gating, runtime servers. */
  private readonly state: DesiredState;
  /** Servers and tools switched on and off (setEnabled), laid over the config read. */
  private readonly switches: Switches;
  /** `permissions.ask` / `allow` at call time. */
  private readonly policy: ToolPolicy;
  private started: Promise<void> | undefined;
  private disposing: Promise<void> | undefined;
  /** OAuth of the remote servers (docs/oauth.md) and the wake-ups it causes. */
  private readonly auth: AuthHooks;
  /** The tool search index, loaded and built on the first search, then kept in step with the registry. */
  private searchIndex: Promise<ToolSearch> | undefined;
  private searchReady: ToolSearch | undefined;
  /** Call counts of this workspace's tools; persisted once `start()` knows the cache folder. */
  private usage = new ToolUsage(false, '');
  private definitions = new ToolDefinitions(false, '');
  /** Log levels set by `setLogLevel`, over the config's, for this controller's life. */
  private readonly logLevels = new Map<string, LogLevel>();

  /** The composition root: builds the workspace and its collaborators, and wires the one reconciler actor. */
  constructor(private readonly options: McpControllerOptions) {
    const logger: Logger = { ...silentLogger, ...(options.logger ?? {}) };
    const emitter = new SafeEmitter<McpControllerEvents>((event, err) => logger.warn(`listener of "${event}" threw: ${describeError(err)}`));
    const env = options.env ?? process.env;
    const root = path.resolve(options.cwd);
    // An explicit source list needs no preset (and an unknown preset name then is no error).
    const preset: Preset | undefined = options.sources
      ? undefined
      : typeof options.preset === 'object'
        ? options.preset
        : resolvePreset(options.preset ?? 'default');
    const ws = new Workspace({
      options,
      env,
      logger,
      emitter,
      root,
      registry: new ToolRegistry(),
      tracker: new ProcessTracker({ graceMs: options.killGraceMs ?? 2_000, warn: (message) => logger.warn(message) }),
      // An explicit concurrency is kept as given; the default adapts to how heavy starts are (docs/performance.md).
      semaphore:
        options.connectConcurrency !== undefined
          ? new Semaphore(options.connectConcurrency)
          : new Semaphore(DEFAULT_CONNECT_CONCURRENCY, { cores: availableParallelism() }),
      reader: new ConfigReader({
        sources: configSources({
          root,
          home: env.HOME ?? homedir(),
          env,
          ...(preset ? { preset } : {}),
          ...(options.sources ? { sources: options.sources } : {}),
          ...(options.userConfigPath ? { userConfigPath: options.userConfigPath } : {}),
          ...(options.cliConfigFiles ? { configFiles: options.cliConfigFiles } : {}),
        }),
        env,
        ...(options.resolveInput ? { resolveInput: options.resolveInput } : {}),
      }),
      decisions: new Decisions(
        typeof options.approvals === 'object' ? options.approvals : new FileApprovalStore(options.approvals ?? defaultApprovalsPath(env)),
        { logger, emitter },
      ),
    });
    this.ws = ws;
    this.auth = new AuthHooks(ws);
    this.switches = new Switches({
      root: () => ws.root,
      env,
      stateFile: options.workspaceStateFile,
      profile: options.profile,
      sources: () => ws.reader.sources,
      warn: (message) => logger.warn(message),
    });
    this.policy = new ToolPolicy({
      settings: () => this.switches.settings,
      serverPermissions: (server) => ((e) => (e?.config.permissions ? { permissions: e.config.permissions, file: entryFile(e) } : undefined))(getOwn(ws.desired, server)),
      stateFile: () => this.switches.stateFile(),
      handler: options.onToolApproval,
    });
    this.state = new DesiredState(ws, this.auth, (desired, settings) => this.switches.overlay(desired, settings));
    // The reload path goes straight from the coalescer to the desired state (docs/architecture.md).
    this.coalescer = new ReloadCoalescer(this.state.reconcile.bind(this.state));
    const connectTimeoutMs = options.connectTimeoutMs ?? 30_000;
    this.connections = new Connections(ws, this.auth, {
      envPolicy: options.envPolicy,
      connectTimeoutMs,
      startTimeoutMs: options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS,
      protocol: options.protocol,
      reviewTools: (name, entry, tools) => this.reviewTools(name, entry, tools),
      logLevel: (name, entry) => this.logLevelFor(name, entry),
    });
    // The registry may change another server's tools too (a pending listing that fits
    // once a name frees up), so tools-changed comes from the registry, not from our calls.
    ws.registry.onChange((change) => {
      if (change.added.length > 0 || change.removed.length > 0 || change.updated.length > 0) {
        emitter.emit('tools-changed', {
          server: change.server,
          added: [...change.added],
          removed: [...change.removed],
          updated: [...change.updated],
        });
      }
      this.searchReady?.apply(change);
      ws.clientUpdate(change.server);
    });
    ws.registry.resources.onChange((change) => emitter.emit('resources-changed', change));

    this.transitions = new Transitions(ws, this.auth);
    const server = this.connections.provideMachine();
    const lifecycle = {
      ...(options.startup ? { startup: options.startup } : {}),
      ...(options.idleTimeoutMs !== undefined ? { idleTimeoutMs: options.idleTimeoutMs } : {}),
      slowStartMs: connectTimeoutMs,
      ...(options.onDemand ? { onDemand: true } : {}),
    };
    this.actor = createActor(reconcilerMachine.provide({ actors: { server }, actions: this.connections.reconcilerActions() }), {
      input: { desired: {}, gating: { excluded: [], trusted: true, approvals: {} }, backoff: options.backoff, lifecycle, systemIds: true },
    });
    // Starts with no servers, so every server actor is announced before it starts (and heard from its first step).
    this.transitions.follow(this.actor);
    this.view = new StatusView(ws, this.connections, {
      toolDrift: (name, entry) => this.definitions.drift(name, entry.fingerprint),
      disabledBy: (server) => this.switches.serverOrigin(server),
      toolDisabledBy: (server, tool) => this.switches.toolOrigin(server, tool),
      profileOf: (server) => this.switches.serverProfile(server),
      toolProfileOrigin: (server, tool) => this.switches.profileToolOrigin(server, tool),
      toolDeniedBy: (server, tool) => this.switches.deniedOrigin(server, tool),
    });
    ws.attach(this.actor, () => this.view.rows());
    this.calls = new Calls(ws, this.connections, this.view, connectTimeoutMs);
  }

  /** The connect limiter; tests take its slots to queue starts behind them. */
  private get semaphore(): Semaphore {
    return this.ws.semaphore;
  }

  // ── lifecycle ──────────────────────────────────────────────────────────

  /**
   * Read the config, connect every admitted server and resolve once each has
   * settled (connected, failed, waiting for approval or auth) or its
   * readiness time ran out (SPEC §3.3): `readyTimeoutMs`, or its `timeout`
   * when shorter, counted from when its start left the connect queue (time
   * queued behind other starts is not its own). With `readyWait:
   * 'start-bound'` a starting server is waited for until it connects or its
   * start bound (`startTimeoutMs`) fails it. Idempotent.
   */
  start(): Promise<void> {
    this.ws.started = true;
    this.started ??= this.doStart();
    return this.started;
  }

  private async doStart(): Promise<void> {
    this.assertLive();
    this.ws.root = await canonicalRoot(this.ws.root).catch(() => this.ws.root);
    if (this.disposing) return;
    const cacheDir = this.options.listingCache ?? defaultListingCacheDir(this.ws.env);
    this.ws.cache = new ListingCache({
      dir: cacheDir === false ? false : path.resolve(this.ws.root, cacheDir),
      root: this.ws.root,
      onError: (err) => this.ws.logger.warn(`listing cache: ${describeError(err)}`),
      onWarning: (message) => this.ws.logger.warn(message),
      ...(this.options.listingCacheSecondLevel ? { second: this.options.listingCacheSecondLevel } : {}),
    });
    const counted = this.usage.snapshot();
    this.usage.cancel();
    this.usage = new ToolUsage(cacheDir === false ? false : path.resolve(this.ws.root, cacheDir), this.ws.root, (err) =>
      this.ws.logger.warn(`tool usage counts: ${describeError(err)}`),
    );
    for (const [name, n] of counted) for (let i = 0; i < n; i++) this.usage.record(name);
    this.definitions = new ToolDefinitions(cacheDir === false ? false : path.resolve(this.ws.root, cacheDir), this.ws.root, (err) =>
      this.ws.logger.warn(`accepted tool definitions: ${describeError(err)}`),
    );
    // Before anything is spawned: a previous host of this workspace that was SIGKILLed
    // may have left detached servers running (docs/library.md).
    if (this.options.logDir !== false) {
      this.ws.serverLog = new ServerLogWriter(path.resolve(this.ws.root, this.options.logDir ?? defaultLogDir(this.ws.root, this.ws.env)), {
        ...(this.options.logMaxBytes !== undefined ? { maxBytes: this.options.logMaxBytes } : {}),
        onError: (err) => this.ws.logger.warn(`server logs: ${describeError(err)}`),
      });
    }
    const stateFile = this.options.processStateFile ?? defaultProcessStatePath(this.ws.root, this.ws.env);
    if (stateFile !== false) {
      const reaped = await this.ws.tracker.useStateFile(stateFile).catch((err: unknown) => {
        this.ws.logger.warn(`process state file ${stateFile}: ${describeError(err)}`);
        return [];
      });
      if (reaped.length > 0) this.ws.logger.info(`reaped ${reaped.length} server process group(s) left by a previous run: ${reaped.join(', ')}`);
    }
    if (this.disposing) return;
    this.actor.start();
    // The first read comes before the watches, so cached tools never wait for the watcher
    // (nor for chokidar's first load); once the watches are in place the files are read once
    // more, so a save that landed in between is not missed (docs/spec.md §3.2). By level,
    // that read changes nothing otherwise.
    await this.coalescer.request();
    if (this.disposing) return;
    if (this.options.watch !== false) {
      // The approvals file is watched too, so `mcp-reconciler approve` run in another
      // terminal takes effect in a running host. Our own writes cause one re-read
      // that finds nothing new to send.
      const storePath = this.ws.decisions.store.path;
      // The token store too: tokens stored by `mcp-reconciler auth` in another terminal wake servers in needs_auth.
      const tokenPath = this.auth.store.path;
      // The workspace state file too: `mcp-reconciler disable` in another terminal applies at once.
      const switchesPath = this.switches.path;
      this.ws.storePaths = [...(storePath ? [storePath] : []), ...(tokenPath ? [tokenPath] : []), ...(switchesPath ? [switchesPath] : [])];
      const watcher = watchConfigFiles({
        files: [...this.ws.reader.sources.map((s) => s.path), ...this.ws.storePaths],
        debounceMs: this.options.debounceMs ?? 300,
        onChange: () => {
          this.coalescer.request().catch((err) => this.ws.logger.error(`reload failed: ${describeError(err)}`));
          if (tokenPath) void this.auth.pickUpStoredTokens();
        },
        onError: (err) => this.ws.logger.warn(`config watcher: ${err.message}`),
      });
      this.ws.watcher = watcher;
      await watcher.ready;
      if (this.disposing) return;
      await this.coalescer.request();
      if (this.disposing) return;
    }
    await this.waitSettled(this.options.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS, this.options.readyWait === 'start-bound');
  }

  /**
   * Force a re-read of every source and a reconcile (SPEC §3.2). Before
   * `start()` it only re-reads: `config()` and the `config-error` event see
   * the files as they are now, and nothing connects until `start()`.
   */
  async reload(): Promise<void> {
    this.assertLive();
    if (!this.started) {
      this.ws.root = await canonicalRoot(this.ws.root).catch(() => this.ws.root);
      return this.state.refresh();
    }
    await this.started;
    await this.coalescer.request();
  }

  /** Disconnect everything, kill every child, stop watching. Idempotent. */
  dispose(): Promise<void> {
    this.ws.disposing = true;
    this.disposing ??= this.doDispose();
    return this.disposing;
  }

  private async doDispose(): Promise<void> {
    this.coalescer.dispose();
    await this.ws.watcher?.close().catch(() => undefined);
    if (this.actor.getSnapshot().status === 'active') this.actor.send({ type: 'DISPOSE' });
    // Every close, including those the machines started on their way out and an
    // HTTP session DELETE, is over before dispose() resolves.
    await this.connections.closeAll();
    this.auth.dispose();
    await this.ws.tracker.killAll();
    await this.ws.serverLog?.close();
    await this.ws.cache?.flush();
    await this.usage.flush();
    await this.definitions.flush();
    this.actor.stop();
    this.ws.registry.clear();
    this.searchReady?.close();
    // The final rows (everything stopped, the registry empty) go out now: nothing fires after dispose().
    this.ws.flushClientUpdate();
    this.ws.emitter.clear();
  }

  private assertLive(): void {
    if (this.disposing) {
      throw new McpReconcilerError(ErrorCode.Disposed, 'this controller was disposed', {
        hint: 'create a new controller with createMcpController()',
      });
    }
  }

  /**
   * `server`'s log, oldest record first: its stderr, the MCP log messages it
   * sent and the supervisor's lines (state changes with their errors).
   * `since` skips older records; `follow` keeps yielding new ones until
   * `signal` aborts. Nothing when logs are off (`logDir: false`).
   */
  async *logs(server: string, options: ReadLogOptions = {}): AsyncGenerator<LogRecord> {
    const dir = this.options.logDir === false ? undefined : (this.ws.serverLog?.dir ?? path.resolve(this.ws.root, this.options.logDir ?? defaultLogDir(await canonicalRoot(this.ws.root).catch(() => this.ws.root), this.ws.env)));
    if (dir === undefined) return;
    await this.ws.serverLog?.flush();
    yield* readServerLog(dir, server, options);
  }

  /**
   * Resolve once every server has settled or run out of readiness time (see
   * {@link start}). A server still queued for a connect slot is always waited
   * for: its clock has not started. A `connecting` one is waited for
   * `min(readyMs, its timeout)` from when its start left the queue (with
   * `untilStartBound`, until it leaves `connecting`: its start bound ends
   * that); a reconnecting one `readyMs` from its first start.
   */
  private async waitSettled(readyMs: number, untilStartBound: boolean): Promise<void> {
    /** `undefined` when settled, else until when it is waited for (`Infinity`: until its state or queue position changes). */
    const waitUntil = (ref: AnyActorRef): number | undefined => {
      const snap = ref.getSnapshot();
      if (snap.status !== 'active') return undefined;
      const state = stateNameOf(snap);
      if (!isInTransit(state)) return undefined;
      const name = ref.id;
      if (state === 'connecting') {
        const ctx = snap.context as ServerContext;
        const started = this.connections.startedConnect(name);
        if (!started || started.generation !== ctx.generation || untilStartBound) return Infinity;
        return started.at + Math.min(readyMs, slowStartOf(ctx));
      }
      // Never started (queued, or failed before it left the queue): waited for like a queued one.
      const first = this.connections.firstStartedAt(name);
      return first === undefined ? Infinity : first + readyMs;
    };
    // A server waited for until its state changes is checked first: while it is still on its way,
    // the other servers' events need no scan of every actor (N² checks at a 50-server start).
    let blockedBy: AnyActorRef | undefined;
    // Where the scan found `blockedBy`: the next scan starts there and goes round to it, so the
    // servers after it are checked first and the ones before it (settled, or waited for until a
    // time, when the scan passed them) last, once in each full round. Starting from the first
    // server at every settled blocker was N² checks as well.
    let resumeAt = 0;
    let timer: NodeJS.Timeout | undefined;
    let wake: () => void = () => {};
    const settled = (): boolean => {
      if (blockedBy && waitUntil(blockedBy) === Infinity) return false;
      blockedBy = undefined;
      clearTimeout(timer);
      const now = performance.now();
      let next = Infinity;
      // The actors as they are, no name map: this runs at every transition of every server.
      const refs = this.ws.serverRefs();
      for (let k = 0; k < refs.length; k++) {
        const i = (resumeAt + k) % refs.length;
        const until = waitUntil(refs[i]!);
        if (until === undefined || until <= now) continue;
        if (until === Infinity) {
          blockedBy = refs[i];
          resumeAt = i;
          return false;
        }
        next = Math.min(next, until);
      }
      if (next === Infinity) return true;
      // Not unref'd: a host awaiting start() must not exit underneath it.
      timer = setTimeout(() => wake(), Math.ceil(next - now) + 1);
      return false;
    };
    if (settled()) return;
    await new Promise<void>((resolve) => {
      const check = (): void => {
        if (!settled()) return;
        offState();
        offStart();
        clearTimeout(timer);
        resolve();
      };
      wake = check;
      const offState = this.ws.emitter.on('server-state', check);
      const offStart = this.connections.onConnectStarted(check);
    });
  }

  /** Per-server status (SPEC §7), servers in name order; removed servers last seen are included. */
  status(): ServerStatus[] {
    return this.view.rows();
  }

  /** Why `server` is unavailable, from its actor's state only (SPEC §7); `undefined` when fine or unknown. */
  unavailableReason(server: string): Reason | undefined {
    return this.view.unavailableReason(server);
  }

  /**
   * The configured (or removed) server a `mcp__<server>__<tool>` name belongs
   * to, by the longest matching sanitised prefix: server names may contain `__`
   * or characters the naming replaced. `undefined` when none matches.
   */
  serverOfTool(toolName: string): string | undefined {
    return this.view.serverOfTool(toolName);
  }

  /**
   * A sentence for the model or the user: which server a tool belongs to, why
   * it is unavailable, and what fixes it (SPEC §7).
   */
  toolUnavailableMessage(toolName: string): string {
    const message = this.view.toolUnavailableMessage(toolName);
    // A tool budget (toolExposure) may keep a registered tool from the model's list.
    if (this.options.toolExposure && this.ws.registry.getTool(toolName) && !this.exposedTools().tools.some((t) => t.name === toolName)) {
      return `${message} It is not in the tool list handed to the model: the tool budget (toolExposure ${JSON.stringify(this.options.toolExposure)}) leaves it out; the model reaches it through search_tools and call_tool, or pin it with pinnedTools.`;
    }
    return message;
  }

  /** Every registered tool, across servers. */
  tools(): RegisteredTool[] {
    return this.ws.registry.tools();
  }

  /**
   * The registered tools that best match `query` (words of a task, e.g.
   * "delete the old folder"), best first, each as {@link tools} lists it with
   * its score. BM25+ over each tool's name (split at `_`, `-`, camelCase),
   * title, description, parameter names and descriptions and server name;
   * the query is widened with stems, prefixes, typos, developer shorthand and
   * WordNet synonyms and related words (weighted below the query's own).
   * Only registered tools are found: never one of a server that is pending
   * approval, rejected, excluded or disabled. `servers` narrows the search to
   * those servers, `limit` (default 10) caps the list. The index is built
   * on the first call and then follows the registry, one server at a time.
   */
  async searchTools(query: string, options: SearchToolsOptions = {}): Promise<ToolMatch[]> {
    this.assertLive();
    const index = await this.toolSearch();
    return index.search(query, options);
  }

  /**
   * The tools to hand a model under the `toolExposure` option: every
   * registered tool (of `servers`, when given) in `all` mode, or while they
   * fit `auto`'s caps; otherwise the tools `found` by this session's
   * searches, the pinned ones and the most called ones that fit, with
   * `searchTools: true` telling the host to offer a search tool and a call
   * tool (see `SEARCH_TOOL`, `CALL_TOOL`) for the rest.
   */
  exposedTools(options: { servers?: Iterable<string>; found?: ReadonlySet<string> } = {}): ExposedTools {
    const scope = options.servers === undefined ? undefined : new Set(options.servers);
    const tools = scope ? this.ws.registry.tools().filter((t) => scope.has(t.server)) : this.ws.registry.tools();
    return selectTools(tools, this.exposure(), { usage: this.usage.snapshot(), ...(options.found ? { found: options.found } : {}) });
  }

  /**
   * A settings file's `mcp` default for every server (docs/tool-definitions.md):
   * of the files that set it, the highest scope's (the settings come lowest scope first).
   */
  private settingsDefault<K extends 'pinToolDefinitions' | 'pinnedTools' | 'logLevel'>(key: K): SourceSettings[K] | undefined {
    let value: SourceSettings[K] | undefined;
    for (const s of this.switches.settings) if (s.settings[key] !== undefined) value = s.settings[key];
    return value;
  }

  /**
   * The log level asked of server `name` (docs/manage.md): `setLogLevel`'s,
   * else its entry's `logLevel`, else the highest-scope file's
   * `mcp.logLevel`, else the controller's `logLevel` option.
   */
  private logLevelFor(name: string, entry: DesiredServer): LogLevel | undefined {
    return this.logLevels.get(name) ?? entry.config.logLevel ?? this.settingsDefault('logLevel') ?? this.options.logLevel;
  }

  /**
   * `pinToolDefinitions` for `entry`: its own value, else the highest-scope
   * settings file's, else the controller option. A pin is a protection the
   * user sets; like gating it only narrows as trust drops, so a `false` from a
   * checked-in project or workspace file (entry or settings) never lifts a
   * pin set by the user's own settings or the host (docs/tool-definitions.md).
   */
  private pinFor(entry: DesiredServer): boolean {
    const userPin = this.options.pinToolDefinitions === true || this.switches.settings.some((s) => !GATED_SCOPES.has(s.scope) && s.settings.pinToolDefinitions === true);
    const lifts = (value: boolean | undefined, scope: Scope): boolean => value === false && userPin && GATED_SCOPES.has(scope);
    const own = entry.config.pinToolDefinitions;
    if (own !== undefined && !lifts(own, entry.scope)) return own;
    let fromFiles: boolean | undefined;
    for (const s of this.switches.settings) {
      const v = s.settings.pinToolDefinitions;
      if (v !== undefined && !lifts(v, s.scope)) fromFiles = v;
    }
    return fromFiles ?? this.options.pinToolDefinitions ?? userPin;
  }

  /** The `toolExposure` option with the config's `pinnedTools` of each server after its own pinned names. */
  private exposure(): McpControllerOptions['toolExposure'] {
    const exposure = this.options.toolExposure;
    if (!exposure) return undefined;
    const fromConfig = Object.values(this.ws.desired).flatMap((e) => {
      const raw = new Set(e.config.pinnedTools ?? this.settingsDefault('pinnedTools') ?? []);
      return raw.size ? this.ws.registry.toolsOf(e.name).filter((t) => raw.has(t.rawName)).map((t) => t.name) : [];
    });
    return fromConfig.length ? { ...exposure, pinnedTools: [...(exposure.pinnedTools ?? []), ...fromConfig] } : exposure;
  }

  /** How often each tool was called in this workspace (kept across runs beside the listing cache). */
  toolUsage(): ReadonlyMap<string, number> {
    return this.usage.snapshot();
  }

  private toolSearch(): Promise<ToolSearch> {
    this.searchIndex ??= import('../search/tool-search.js').then(({ ToolSearch }) => {
      // Built from the registry as it is now; every change from here on reaches it through onChange.
      this.searchReady = ToolSearch.build(this.ws.registry);
      return this.searchReady;
    });
    return this.searchIndex;
  }

  /** Every registered prompt, across servers. */
  prompts(): RegisteredPrompt[] {
    return this.ws.registry.prompts();
  }

  /** The effective config: desired map and gating verdicts, as last reconciled. */
  config(): { desired: DesiredMap; gating: ComputedGating | undefined; sources: ConfigSource[]; root: string } {
    return { desired: this.ws.desired, gating: this.ws.gating, sources: [...this.ws.reader.sources], root: this.ws.root };
  }

  /**
   * Call a registered tool. A `dormant` server is started for the call, and a
   * `connecting` one serving cached tools is waited for: the caller waits
   * until it is connected, within `timeoutMs` (which covers the wait and the
   * call; without it the wait is bounded by the server's connect timeout),
   * else gets `tool_unavailable` with the reason. Fails with
   * `tool_unavailable` at once while its server is reconnecting, failed, …;
   * results of tools with an `outputSchema` are checked (SPEC §6).
   */
  async callTool(name: string, args: Record<string, unknown> = {}, opts: CallToolOptions = {}): Promise<CallToolResult> {
    this.assertLive();
    const tool = this.ws.registry.getTool(name);
    if (tool) await this.policy.check(tool, args, opts.onToolApproval);
    this.usage.record(name);
    return this.calls.callTool(name, args, opts);
  }

  /**
   * Get a registered prompt (`mcp__<server>__<prompt>`) from its server, for
   * hosts and the gateway that pass prompts on. Fails with `unknown_tool` /
   * `tool_unavailable` like {@link callTool}.
   */
  async getPrompt(name: string, args: Record<string, string> = {}, opts: CallToolOptions = {}): Promise<GetPromptResult> {
    this.assertLive();
    return this.calls.getPrompt(name, args, opts);
  }

  /**
   * The resources of the connected (and dormant, cached) servers, URIs as
   * the servers list them. A URI several servers list appears once: its
   * owner is the first of them in code-point order (a `resources-changed`
   * event and a logged warning report the conflict). `servers` narrows the
   * servers considered (a gateway session's scope), and the owner is picked
   * among them. Servers that are not admitted list nothing.
   */
  resources(servers?: Iterable<string>): RegisteredResource[] {
    return this.calls.resources(servers);
  }

  /** The resource templates of the same servers, one per URI template with the same owner rule as {@link resources}. */
  resourceTemplates(servers?: Iterable<string>): RegisteredResourceTemplate[] {
    return this.calls.resourceTemplates(servers);
  }

  /** The server that answers for `uri` among `servers` (listed, else a matching template; see {@link resources}), if any lists it. */
  resourceOwner(uri: string, servers?: Iterable<string>): string | undefined {
    return this.calls.ownerOfResource(uri, servers);
  }

  /**
   * Read a resource from the server that owns `uri` (listed, else a
   * matching template; see {@link resources}). A dormant server is started
   * and a connecting one waited for, like {@link callTool}. Fails with
   * `tool_unavailable` and the reason (and fix) when the owner cannot answer
   * now — or when only an unavailable server is known to list `uri` (its
   * cached listing) — and with `unknown_tool` when no server has it.
   */
  async readResource(uri: string, opts: ResourceOptions = {}): Promise<ReadResourceResult> {
    this.assertLive();
    return this.calls.readResource(uri, opts);
  }

  /**
   * Subscribe to `notifications/resources/updated` of `uri` on its owner
   * (which must declare `resources.subscribe`). Resolves once the server
   * accepted, with the unsubscribe function. The subscription outlives
   * reconnects and idle stops: it is sent again to each new connection of
   * that server. A server with a subscription is never idle-stopped; after
   * the last unsubscribe `idleTimeoutMs` applies again. Fails like
   * {@link readResource}.
   */
  async subscribeResource(uri: string, onUpdated: ResourceUpdateListener, opts: ResourceOptions = {}): Promise<() => Promise<void>> {
    this.assertLive();
    return this.calls.subscribeResource(uri, onUpdated, opts);
  }

  // ── user decisions and runtime edits ───────────────────────────────────

  /**
   * Approve a gated server for its current config hash. `persist: false`
   * approves for this controller's life only.
   */
  async approve(server: string, { persist = true }: { persist?: boolean } = {}): Promise<void> {
    this.assertLive();
    const entry = await this.decisionEntry(server);
    await this.ws.decisions.approve(this.ws.root, entry, persist);
    if (this.started) await this.coalescer.request();
  }

  /**
   * Accept `server`'s current tool definitions (definition drift,
   * docs/tool-definitions.md): with `pinToolDefinitions` the held-back
   * changes and new tools are registered now. `false` when no listing of the
   * server was seen in this run (connect it first).
   */
  approveTools(server: string): boolean {
    this.assertLive();
    const entry = getOwn(this.ws.desired, server);
    if (!entry || this.definitions.accept(server, entry.fingerprint) === undefined) return false;
    this.connections.recommitTools(server);
    return true;
  }

  /** What of a listing registers: drift is recorded, and with a pin held back (docs/tool-definitions.md). */
  private reviewTools(name: string, entry: DesiredServer, tools: Tool[]): Tool[] {
    const pin = this.pinFor(entry);
    const before = this.definitions.drift(name, entry.fingerprint);
    const out = this.definitions.review(name, entry.fingerprint, tools, pin);
    const after = this.definitions.drift(name, entry.fingerprint);
    if (after && JSON.stringify(after) !== JSON.stringify(before)) {
      const what = [after.changed.length ? `changed ${after.changed.join(', ')}` : '', after.added.length ? `added ${after.added.join(', ')}` : ''].filter(Boolean).join('; ');
      this.ws.logger.warn(
        `MCP server "${name}" changed its tool definitions since they were accepted (${what})` +
          (after.held ? `; the changes are held back until you run \`mcp-reconciler approve ${name} --tool-definitions\`` : `; review them, or set pinToolDefinitions to hold such changes back`),
      );
    }
    return out;
  }

  /** The entry a decision is about; before `start()` the config is read for it, and nothing starts. */
  private decisionEntry(server: string): Promise<DesiredServer> {
    return decisionEntry(server, {
      started: this.started !== undefined,
      desired: this.ws.desired,
      readDesired: async () => {
        this.ws.root = await canonicalRoot(this.ws.root).catch(() => this.ws.root);
        return (await this.state.read()).desired;
      },
    });
  }

  /** Reject a gated server for its current config hash (persisted); it stays disconnected. */
  async reject(server: string): Promise<void> {
    this.assertLive();
    const entry = await this.decisionEntry(server);
    await this.ws.decisions.reject(this.ws.root, entry);
    if (this.started) await this.coalescer.request();
  }

  /**
   * Sign `server` in with OAuth now (authorization code + PKCE through a
   * loopback redirect, or a refresh / client credentials when that is
   * enough). The URL to open goes to `options.onAuthorizationUrl`, else to
   * the controller's `onAuthorizationUrl`. Resolves once tokens are stored
   * and the server was told (it leaves `needs_auth` with a new generation);
   * rejects with `needs_auth` saying what failed.
   */
  async authenticate(server: string, options: AuthorizeOptions = {}): Promise<void> {
    this.assertLive();
    const entry = await this.decisionEntry(server);
    await (await this.auth.oauth()).authorize(server, entry, options);
    // The manager's `authorized` event already told the machine; a server that was not waiting reconnects.
    if (this.started && this.unavailableReason(server) === 'failed') this.actor.send({ type: 'RECONNECT', name: server });
  }

  /**
   * Forget the stored OAuth credentials of `server` (by its URL). A live
   * connection keeps its session until it next needs a token. Resolves with
   * whether anything was stored.
   */
  async logout(server: string): Promise<boolean> {
    this.assertLive();
    const entry = await this.decisionEntry(server);
    return (await this.auth.oauth()).logout(entry);
  }

  /**
   * Replace the roots offered to servers and send them
   * `notifications/roots/list_changed`. Has no effect when the host turned
   * roots off (`roots: false`).
   */
  async setRoots(roots: Root[]): Promise<void> {
    this.assertLive();
    if (this.options.roots === false) return;
    this.ws.roots = [...roots];
    await Promise.allSettled(this.connections.all().map((rec) => rec.conn.client.sendRootsListChanged()));
  }

  /**
   * OAuth tokens were stored outside this controller (another process, or
   * another replica of a cluster, signed in): every server waiting in
   * `needs_auth` that has tokens now connects with them. Servers in other
   * states are left alone; they use the stored tokens at their next connect.
   */
  async tokensStored(): Promise<void> {
    this.assertLive();
    await this.auth.pickUpStoredTokens();
  }

  /** Reconnect a server now with a fresh retry budget (from `failed`, `needs_auth` or while reconnecting). */
  async reconnect(server: string): Promise<void> {
    this.assertLive();
    entryOrThrow(server, this.ws.desired);
    this.actor.send({ type: 'RECONNECT', name: server });
  }

  /**
   * Add or replace a server in the `runtime` scope (or `sdk` when `type: 'sdk'`).
   * The config is validated with the same schema as config files; an invalid
   * one throws `config_invalid` naming the field at once, and nothing changes.
   */
  async addRuntimeServer(name: string, config: ServerConfig): Promise<void> {
    this.assertLive();
    this.state.addRuntimeServer(name, config);
    if (this.started) await this.coalescer.request();
  }

  /** Remove a server added with {@link addRuntimeServer}. */
  async removeRuntimeServer(name: string): Promise<void> {
    this.assertLive();
    this.state.removeRuntimeServer(name);
    if (this.started) await this.coalescer.request();
  }

  /**
   * Switch a server, or some of its tools (`tools`: raw or registered
   * names), on or off, now and persisted (docs/manage.md): in the
   * host's own field where its file has one (`disabled`, `enabled: false`,
   * `disabledTools`, `excludeTools`…), else in the workspace state file;
   * `persist: false` keeps it for this controller's life only. A running
   * controller applies it at once: a disabled server disconnects and rests in
   * `disabled`, a disabled tool leaves the registry (`tools-changed`, so a
   * gateway sends `list_changed`). Throws `unknown_server` for a name not in
   * the config. Before `start()` it only writes.
   */
  async setEnabled(server: string, on: boolean, options: SetEnabledOptions = {}): Promise<SetEnabledResult> {
    this.assertLive();
    const entry = await this.decisionEntry(server);
    const tools = options.tools?.map((t) => this.ws.registry.getTool(t)?.rawName ?? t);
    const result = await this.switches.set(entry, on, { ...options, ...(tools ? { tools } : {}) });
    if (this.started) await this.coalescer.request();
    else await this.state.refresh();
    return result;
  }

  /**
   * Ask `server` for MCP log messages at `level` and above (`logging/setLevel`)
   * from now on, over its config's `logLevel`, for this controller's life:
   * at once when it is connected, and after every reconnect. Resolves `true`
   * when a live connection was asked now, `false` when the server is not
   * connected (it is asked when it connects) or does not declare `logging`.
   * Throws `unknown_server`, or `usage` for a level MCP does not define.
   */
  async setLogLevel(server: string, level: LogLevel): Promise<boolean> {
    this.assertLive();
    if (!(LOG_LEVELS as readonly string[]).includes(level)) {
      throw new McpReconcilerError(ErrorCode.Usage, `"${String(level)}" is not an MCP log level`, { hint: `use one of ${LOG_LEVELS.join(', ')}`, details: { level } });
    }
    await this.decisionEntry(server);
    this.logLevels.set(server, level);
    return this.connections.setLogLevel(server, level);
  }

  /**
   * Use profile `name` (`undefined`: none) from now on (docs/manage.md):
   * servers it leaves out stop and rest in `disabled`, tools it leaves out
   * leave the registry (a gateway sends `list_changed`). Throws `usage`
   * naming the defined profiles when no settings file defines `name`.
   */
  async setProfile(name: string | undefined): Promise<void> {
    this.assertLive();
    if (name !== undefined) {
      const { settings } = await this.state.read();
      const known = profileNames(settings);
      if (!known.includes(name)) {
        throw new McpReconcilerError(ErrorCode.Usage, `no profile named "${name}" is defined`, {
          hint: known.length ? `defined profiles: ${known.join(', ')}` : 'define one under "profiles" in a settings file, e.g. { "profiles": { "research": { "servers": ["search"] } } }',
          details: { profile: name },
        });
      }
    }
    this.switches.setProfile(name);
    if (this.started) await this.coalescer.request();
    else await this.state.refresh();
  }

  /** The profile in use, if any. */
  get profile(): string | undefined {
    return this.switches.activeProfile;
  }

  /** Subscribe to an event (SPEC §9); returns the unsubscribe function. Listeners that throw are isolated. */
  on<K extends keyof McpControllerEvents>(event: K, listener: (payload: McpControllerEvents[K]) => void): () => void {
    return this.ws.emitter.on(event, listener);
  }

  /** How many reconciles sent something to the machines (for tests and benchmarks). */
  get reconciles(): number {
    return this.state.reconciles;
  }

  /** PIDs of every live stdio child (for tests and leak checks). */
  pids(): number[] {
    return this.ws.tracker.pids();
  }

  /**
   * Hold `server` running for a host (the gateway: a session whose scope
   * names it). A `dormant` held server starts (a `lazy` one with cached
   * tools on its first call), and a held server is never idle-stopped.
   * Holding passes no gate: a server waiting for approval, rejected,
   * excluded, … stays so, and starts once admitted. A name not configured
   * yet is held when it appears. Idempotent.
   */
  hold(server: string): void {
    this.assertLive();
    this.transitions.hold(server);
  }

  /**
   * Let go of a server held with {@link hold}: once it is connected with no
   * call for its idle timeout (its `idleTimeoutMs`, else the controller's),
   * it is stopped into `dormant`, its tools staying registered; a new hold
   * before then keeps it running. Idempotent; a no-op after `dispose()`.
   */
  release(server: string): void {
    this.transitions.release(server);
  }

  /**
   * Stop `server` now, not after its idle timeout: a live server goes
   * `dormant` at once (its process stopped, its tools staying registered)
   * and any hold is dropped. For a host that learnt the server must not run
   * here (docs/cluster.md: a singleton whose lease this replica lost). A
   * later {@link hold} or call starts it again. Idempotent.
   */
  park(server: string): void {
    this.transitions.park(server);
  }
}

/** Create a controller for one workspace (SPEC §10). Call `start()` next. */
export function createMcpController(options: McpControllerOptions): McpController {
  if (!options || typeof options.cwd !== 'string' || options.cwd === '') {
    throw new McpReconcilerError(ErrorCode.Usage, 'createMcpController needs a `cwd` (the workspace root)');
  }
  return new McpController(options);
}
