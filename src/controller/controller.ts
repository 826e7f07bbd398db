import { availableParallelism, homedir } from 'node:os';
import path from 'node:path';
import { createActor, type Actor, type AnyActorRef, type InspectionEvent, type StateValue } from 'xstate';
import type { CallToolResult, GetPromptResult, ReadResourceResult } from '@modelcontextprotocol/sdk/types.js';
import { reconcilerMachine } from '../../machines/reconciler.machine.js';
import { isInTransit, reasonOf, stateNameOf } from '../../machines/reason.js';
import { slowStartOf, type ServerContext } from '../../machines/server.machine.js';
import type { DesiredMap, DesiredServer, ServerConfig } from '../../machines/types.js';
import { ConfigReader, configSources } from '../config/reader.js';
import { resolvePreset, type Preset } from '../config/presets.js';
import type { ConfigSource } from '../config/sources.js';
import type { ComputedGating } from '../gating/compute.js';
import { canonicalRoot, defaultApprovalsPath, FileApprovalStore } from '../approvals/store.js';
import { defaultProcessStatePath, ProcessTracker } from '../connection/processes.js';
import { defaultLogDir, readServerLog, ServerLogWriter, type LogRecord, type ReadLogOptions } from './server-logs.js';
import { ToolRegistry, type RegisteredPrompt, type RegisteredTool } from '../registry/registry.js';
import { defaultListingCacheDir, ListingCache } from '../cache/listing-cache.js';
import { watchConfigFiles, type ConfigWatcher } from '../watch/config-watcher.js';
import { ReloadCoalescer } from '../watch/coalescer.js';
import { ErrorCode, McpReconcilerError, describeError } from '../errors.js';
import type { AuthorizeOptions } from '../auth/manager.js';
import { workspaceRoots, type ClientFeatures } from '../connection/client-capabilities.js';
import type { Root } from '@modelcontextprotocol/sdk/types.js';
import type { SearchToolsOptions, ToolMatch, ToolSearch } from '../search/tool-search.js';
import { selectTools, type ExposedTools } from '../search/exposure.js';
import { ToolUsage } from '../search/usage.js';
import { AuthHooks } from './auth.js';
import { Calls } from './calls.js';
import { Connections } from './connections.js';
import { decisionEntry, Decisions, entryOrThrow } from './decisions.js';
import { DesiredState } from './desired.js';
import { SafeEmitter } from './emitter.js';
import { Semaphore } from './semaphore.js';
import { StatusView } from './status.js';
import { Switches, type SetEnabledOptions, type SetEnabledResult } from './switches.js';
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
  ServerStateName,
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

  private readonly registry = new ToolRegistry();
  private readonly tracker: ProcessTracker;
  private readonly emitter: SafeEmitter<McpControllerEvents>;
  private readonly logger: Logger;
  private readonly env: NodeJS.ProcessEnv;
  private readonly reader: ConfigReader;
  /** Approval decisions: the store's and this session's. */
  private readonly decisions: Decisions;
  /** Status rows and unavailability reasons, read from the actors. */
  private readonly view: StatusView;
  /** Tool calls and prompt gets, waiting for a connection where they may. */
  private readonly calls: Calls;
  private readonly semaphore: Semaphore;
  private readonly coalescer: ReloadCoalescer;
  /** The machines' I/O: connect and session actors and their connections. */
  private readonly connections: Connections;
  private readonly stateCache = new Map<string, ServerStateName>();
  private readonly transitionKeys = new Map<string, string>();
  /** The config → machines side: desired map, gating, runtime servers. */
  private readonly state: DesiredState;
  /** Servers and tools switched on and off (setEnabled), laid over the config read. */
  private readonly switches: Switches;
  /** `permissions.ask` / `allow` at call time. */
  private readonly policy: ToolPolicy;
  private root: string;
  private watcher: ConfigWatcher | undefined;
  /** Each server's stderr, log messages and supervisor lines (server-logs.ts); created by `start()`. */
  private serverLog: ServerLogWriter | undefined;
  private started: Promise<void> | undefined;
  private disposing: Promise<void> | undefined;
  /** Listings by fingerprint (SPEC §12); created by `start()` once the root is canonical. */
  private cache: ListingCache | undefined;
  /** OAuth of the remote servers (docs/oauth.md) and the wake-ups it causes. */
  private readonly auth: AuthHooks;
  /** Roots offered to servers; `undefined` when the host turned roots off. */
  private roots: Root[] | undefined;
  /** Servers a host holds ({@link hold}), and the actor each was last told: a re-spawned actor is told again. */
  private readonly holds = new Map<string, AnyActorRef | undefined>();
  /** The tool search index, loaded and built on the first search, then kept in step with the registry. */
  private searchIndex: Promise<ToolSearch> | undefined;
  private searchReady: ToolSearch | undefined;
  /** Call counts of this workspace's tools; persisted once `start()` knows the cache folder. */
  private usage = new ToolUsage(false, '');

  constructor(private readonly options: McpControllerOptions) {
    this.logger = { ...silentLogger, ...(options.logger ?? {}) };
    this.emitter = new SafeEmitter((event, err) => this.logger.warn(`listener of "${event}" threw: ${describeError(err)}`));
    this.env = options.env ?? process.env;
    this.root = path.resolve(options.cwd);
    this.tracker = new ProcessTracker({ graceMs: options.killGraceMs ?? 2_000, warn: (message) => this.logger.warn(message) });
    // An explicit concurrency is kept as given; the default adapts to how heavy starts are (docs/performance.md).
    this.semaphore =
      options.connectConcurrency !== undefined
        ? new Semaphore(options.connectConcurrency)
        : new Semaphore(DEFAULT_CONNECT_CONCURRENCY, { cores: availableParallelism() });
    // An explicit source list needs no preset (and an unknown preset name then is no error).
    const preset: Preset | undefined = options.sources
      ? undefined
      : typeof options.preset === 'object'
        ? options.preset
        : resolvePreset(options.preset ?? 'default');
    this.reader = new ConfigReader({
      sources: configSources({
        root: this.root,
        home: this.env.HOME ?? homedir(),
        env: this.env,
        ...(preset ? { preset } : {}),
        ...(options.sources ? { sources: options.sources } : {}),
        ...(options.userConfigPath ? { userConfigPath: options.userConfigPath } : {}),
        ...(options.cliConfigFiles ? { configFiles: options.cliConfigFiles } : {}),
      }),
      env: this.env,
      ...(options.resolveInput ? { resolveInput: options.resolveInput } : {}),
      watcher: () => this.watcher,
    });
    this.decisions = new Decisions(
      typeof options.approvals === 'object' ? options.approvals : new FileApprovalStore(options.approvals ?? defaultApprovalsPath(this.env)),
      { logger: this.logger, configError: (issues) => this.emitter.emit('config-error', { issues }) },
    );
    this.switches = new Switches({
      root: () => this.root,
      env: this.env,
      stateFile: options.workspaceStateFile,
      profile: options.profile,
      sources: () => this.reader.sources,
      warn: (message) => this.logger.warn(message),
    });
    this.policy = new ToolPolicy({ settings: () => this.switches.settings, stateFile: () => this.switches.stateFile(), handler: options.onToolApproval });
    this.state = new DesiredState(
      {
        overlay: (desired, settings) => this.switches.overlay(desired, settings),
        reader: this.reader,
        decisions: this.decisions,
        logger: this.logger,
        emitter: this.emitter,
        // Captured once and immutable.
        cliBound: options.cliAllowedServerNames ? Object.freeze([...options.cliAllowedServerNames]) : undefined,
        isTrustedFolder: options.isTrustedFolder,
        send: (event) => this.actor.send(event),
        root: () => this.root,
        cache: () => this.cache,
        disposing: () => this.disposing !== undefined,
        reread: () => void this.auth.pickUpStoredTokens(),
      },
      options.sdkServers,
    );
    this.coalescer = new ReloadCoalescer(() => this.state.reconcile());
    this.connections = new Connections({
      registry: this.registry,
      tracker: this.tracker,
      semaphore: this.semaphore,
      logger: this.logger,
      env: this.env,
      envPolicy: options.envPolicy,
      connectTimeoutMs: options.connectTimeoutMs ?? 30_000,
      startTimeoutMs: options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS,
      protocol: options.protocol,
      root: () => this.root,
      desired: () => this.state.desired,
      cache: () => this.cache,
      disposing: () => this.disposing !== undefined,
      clientFeatures: () => this.clientFeatures(),
      fetchFor: (name, entry) => this.auth.fetchFor(name, entry),
      connectStarted: (name) => this.auth.connectStarted(name),
      promptsChanged: () => this.emitClientUpdate(),
      report: (name, event) => this.view.serverActors().get(name)?.send(event),
      serverLog: () => this.serverLog,
    });
    this.auth = new AuthHooks({
      options,
      env: this.env,
      logger: this.logger,
      sendAuthenticated: (name) => this.actor.send({ type: 'AUTHENTICATED', name }),
      running: () => this.started !== undefined && this.actor.getSnapshot().status === 'active',
      disposing: () => this.disposing !== undefined,
      serverActors: () => this.view.serverActors(),
      desired: () => this.state.desired,
    });
    this.roots = options.roots === false ? undefined : (options.roots ?? undefined);
    // The registry may change another server's tools too (a pending listing that fits
    // once a name frees up), so tools-changed comes from the registry, not from our calls.
    this.registry.onChange((change) => {
      if (change.added.length > 0 || change.removed.length > 0 || change.updated.length > 0) {
        this.emitter.emit('tools-changed', {
          server: change.server,
          added: [...change.added],
          removed: [...change.removed],
          updated: [...change.updated],
        });
      }
      this.searchReady?.apply(change);
      // A server that lost entries to another's shared prefix ends its generation.
      if (change.removed.length > 0 || change.prompts.removed.length > 0) this.connections.endIfConflicted(change.server);
      this.emitClientUpdate();
    });
    this.registry.resources.onChange((change) => this.emitter.emit('resources-changed', change));

    const server = this.connections.provideMachine();
    const lifecycle = {
      ...(options.startup ? { startup: options.startup } : {}),
      ...(options.idleTimeoutMs !== undefined ? { idleTimeoutMs: options.idleTimeoutMs } : {}),
      slowStartMs: options.connectTimeoutMs ?? 30_000,
      ...(options.onDemand ? { onDemand: true } : {}),
    };
    this.actor = createActor(reconcilerMachine.provide({ actors: { server } }), {
      input: { desired: {}, gating: { excluded: [], trusted: true, approvals: {} }, backoff: options.backoff, lifecycle },
      inspect: (ev) => this.onInspect(ev),
    });
    this.view = new StatusView({
      actor: this.actor,
      registry: this.registry,
      connections: this.connections,
      desired: () => this.state.desired,
      gating: () => this.state.computed,
      issues: () => this.state.issues,
      scopeOf: (file) => this.reader.sources.find((s) => s.path === file)?.scope,
      disabledBy: (server) => this.switches.serverOrigin(server),
      toolDisabledBy: (server, tool) => this.switches.toolOrigin(server, tool),
      profileOf: (server) => this.switches.serverProfile(server),
      toolProfileOrigin: (server, tool) => this.switches.profileToolOrigin(server, tool),
      toolDeniedBy: (server, tool) => this.switches.deniedOrigin(server, tool),
    });
    this.calls = new Calls({
      registry: this.registry,
      connections: this.connections,
      view: this.view,
      connectTimeoutMs: options.connectTimeoutMs ?? 30_000,
    });
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
    this.started ??= this.doStart();
    return this.started;
  }

  private async doStart(): Promise<void> {
    this.assertLive();
    this.root = await canonicalRoot(this.root).catch(() => this.root);
    if (this.disposing) return;
    const cacheDir = this.options.listingCache ?? defaultListingCacheDir(this.env);
    this.cache = new ListingCache({
      dir: cacheDir === false ? false : path.resolve(this.root, cacheDir),
      root: this.root,
      onError: (err) => this.logger.warn(`listing cache: ${describeError(err)}`),
      onWarning: (message) => this.logger.warn(message),
    });
    const counted = this.usage.snapshot();
    this.usage = new ToolUsage(cacheDir === false ? false : path.resolve(this.root, cacheDir), this.root, (err) =>
      this.logger.warn(`tool usage counts: ${describeError(err)}`),
    );
    for (const [name, n] of counted) for (let i = 0; i < n; i++) this.usage.record(name);
    // Before anything is spawned: a previous host of this workspace that was SIGKILLed
    // may have left detached servers running (docs/library.md).
    if (this.options.logDir !== false) {
      this.serverLog = new ServerLogWriter(path.resolve(this.root, this.options.logDir ?? defaultLogDir(this.root, this.env)), {
        ...(this.options.logMaxBytes !== undefined ? { maxBytes: this.options.logMaxBytes } : {}),
        onError: (err) => this.logger.warn(`server logs: ${describeError(err)}`),
      });
    }
    const stateFile = this.options.processStateFile ?? defaultProcessStatePath(this.root, this.env);
    if (stateFile !== false) {
      const reaped = await this.tracker.useStateFile(stateFile).catch((err: unknown) => {
        this.logger.warn(`process state file ${stateFile}: ${describeError(err)}`);
        return [];
      });
      if (reaped.length > 0) this.logger.info(`reaped ${reaped.length} server process group(s) left by a previous run: ${reaped.join(', ')}`);
    }
    if (this.disposing) return;
    this.actor.start();
    // Watch before the first read: a save landing between that read and the watches
    // being in place would otherwise go unnoticed until the next save.
    if (this.options.watch !== false) {
      // The approvals file is watched too, so `mcp-reconciler approve` run in another
      // terminal takes effect in a running host. Our own writes cause one re-read
      // that finds nothing new to send.
      const storePath = this.decisions.store.path;
      // The token store too: tokens stored by `mcp-reconciler auth` in another terminal wake servers in needs_auth.
      const tokenPath = this.auth.store.path;
      // The workspace state file too: `mcp-reconciler disable` in another terminal applies at once.
      const switchesPath = this.switches.path;
      this.watcher = watchConfigFiles({
        files: [...this.reader.sources.map((s) => s.path), ...(storePath ? [storePath] : []), ...(tokenPath ? [tokenPath] : []), ...(switchesPath ? [switchesPath] : [])],
        debounceMs: this.options.debounceMs ?? 300,
        onChange: () => {
          this.coalescer.request().catch((err) => this.logger.error(`reload failed: ${describeError(err)}`));
          if (tokenPath) void this.auth.pickUpStoredTokens();
        },
        onError: (err) => this.logger.warn(`config watcher: ${err.message}`),
      });
      await this.watcher.ready;
    }
    await this.coalescer.request();
    if (this.disposing) return;
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
      this.root = await canonicalRoot(this.root).catch(() => this.root);
      return this.state.refresh();
    }
    await this.started;
    await this.coalescer.request();
  }

  /** Disconnect everything, kill every child, stop watching. Idempotent. */
  dispose(): Promise<void> {
    this.disposing ??= this.doDispose();
    return this.disposing;
  }

  private async doDispose(): Promise<void> {
    this.coalescer.dispose();
    await this.watcher?.close().catch(() => undefined);
    if (this.actor.getSnapshot().status === 'active') this.actor.send({ type: 'DISPOSE' });
    // Every close, including those the machines started on their way out and an
    // HTTP session DELETE, is over before dispose() resolves.
    await this.connections.closeAll();
    this.auth.dispose();
    await this.tracker.killAll();
    await this.serverLog?.flush();
    await this.cache?.flush();
    this.usage.save();
    this.actor.stop();
    this.registry.clear();
    this.searchReady?.close();
    this.emitter.clear();
  }

  private assertLive(): void {
    if (this.disposing) {
      throw new McpReconcilerError(ErrorCode.Disposed, 'this controller was disposed', {
        hint: 'create a new controller with createMcpController()',
      });
    }
  }

  // ── observation ────────────────────────────────────────────────────────

  private onInspect(ev: InspectionEvent): void {
    if (ev.type !== '@xstate.snapshot') return;
    const snapshot = ev.snapshot as { machine?: { id?: string } };
    if (snapshot.machine?.id !== 'server') return;
    const name = (ev.actorRef as AnyActorRef).id;
    // A held server's new actor (first spawn, re-added, replaced) is held too; the event is queued, never nested.
    if (this.holds.has(name) && this.holds.get(name) !== ev.actorRef) this.tellHold(name, ev.actorRef as AnyActorRef);
    const state = stateNameOf(ev.snapshot as never);
    const ctx = (ev.snapshot as unknown as { context: { generation: number; attempt: number } }).context;
    // Every transition counts (SPEC §9), including the sub-states of `reconnecting`
    // and a new generation; a snapshot that only changed context otherwise does not.
    const path = statePath((ev.snapshot as unknown as { value: StateValue }).value);
    const key = `${path}#${ctx.generation}`;
    if (this.transitionKeys.get(name) === key) return;
    this.transitionKeys.set(name, key);
    const previous = this.stateCache.get(name);
    this.stateCache.set(name, state);
    this.auth.onState(name, state);
    if (state !== previous) this.logTransition(name, state, ctx.attempt, (ev.snapshot as unknown as { context: { lastError?: string } }).context.lastError);
    this.emitter.emit('server-state', {
      name,
      state,
      previous,
      reason: reasonOf(ev.snapshot as never),
      generation: ctx.generation,
      path,
      attempt: ctx.attempt,
    });
    this.emitClientUpdate();
  }

  /** The supervisor's line in the server's log: the new state, and the error that moved it there. */
  private logTransition(name: string, state: ServerStateName, attempt: number, lastError: string | undefined): void {
    const log = this.serverLog;
    if (!log) return;
    const failing = state === 'failed' || state === 'reconnecting';
    // The process is gone in every other state: its unfinished last line comes before the reason.
    if (state !== 'connecting' && state !== 'connected') log.endStderr(name);
    const text = `${state}${state === 'connecting' && attempt > 1 ? ` (attempt ${attempt})` : ''}${failing && lastError ? `: ${lastError}` : ''}`;
    log.supervisor(name, text, state === 'failed' ? 'error' : failing ? 'warning' : 'info');
  }

  /**
   * `server`'s log, oldest record first: its stderr, the MCP log messages it
   * sent and the supervisor's lines (state changes with their errors).
   * `since` skips older records; `follow` keeps yielding new ones until
   * `signal` aborts. Nothing when logs are off (`logDir: false`).
   */
  async *logs(server: string, options: ReadLogOptions = {}): AsyncGenerator<LogRecord> {
    const dir = this.options.logDir === false ? undefined : (this.serverLog?.dir ?? path.resolve(this.root, this.options.logDir ?? defaultLogDir(await canonicalRoot(this.root).catch(() => this.root), this.env)));
    if (dir === undefined) return;
    await this.serverLog?.flush();
    yield* readServerLog(dir, server, options);
  }

  private emitClientUpdate(): void {
    if (this.emitter.has('client-update')) this.emitter.emit('client-update', { status: this.status() });
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
    let timer: NodeJS.Timeout | undefined;
    let wake: () => void = () => {};
    const settled = (): boolean => {
      if (blockedBy && waitUntil(blockedBy) === Infinity) return false;
      blockedBy = undefined;
      clearTimeout(timer);
      const now = performance.now();
      let next = Infinity;
      for (const ref of this.view.serverActors().values()) {
        const until = waitUntil(ref);
        if (until === undefined || until <= now) continue;
        if (until === Infinity) {
          blockedBy = ref;
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
      const offState = this.emitter.on('server-state', check);
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
    return this.view.toolUnavailableMessage(toolName);
  }

  /** Every registered tool, across servers. */
  tools(): RegisteredTool[] {
    return this.registry.tools();
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
    const tools = scope ? this.registry.tools().filter((t) => scope.has(t.server)) : this.registry.tools();
    return selectTools(tools, this.options.toolExposure, { usage: this.usage.snapshot(), ...(options.found ? { found: options.found } : {}) });
  }

  /** How often each tool was called in this workspace (kept across runs beside the listing cache). */
  toolUsage(): ReadonlyMap<string, number> {
    return this.usage.snapshot();
  }

  private toolSearch(): Promise<ToolSearch> {
    this.searchIndex ??= import('../search/tool-search.js').then(({ ToolSearch }) => {
      // Built from the registry as it is now; every change from here on reaches it through onChange.
      this.searchReady = ToolSearch.build(this.registry);
      return this.searchReady;
    });
    return this.searchIndex;
  }

  /** Every registered prompt, across servers. */
  prompts(): RegisteredPrompt[] {
    return this.registry.prompts();
  }

  /** The effective config: desired map and gating verdicts, as last reconciled. */
  config(): { desired: DesiredMap; gating: ComputedGating | undefined; sources: ConfigSource[]; root: string } {
    return { desired: this.state.desired, gating: this.state.computed, sources: [...this.reader.sources], root: this.root };
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
    const tool = this.registry.getTool(name);
    if (tool) await this.policy.check(tool, args);
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
    await this.decisions.approve(this.root, entry, persist);
    if (this.started) await this.coalescer.request();
  }

  /** The entry a decision is about; before `start()` the config is read for it, and nothing starts. */
  private decisionEntry(server: string): Promise<DesiredServer> {
    return decisionEntry(server, {
      started: this.started !== undefined,
      desired: this.state.desired,
      readDesired: async () => {
        this.root = await canonicalRoot(this.root).catch(() => this.root);
        return (await this.state.read()).desired;
      },
    });
  }

  /** Reject a gated server for its current config hash (persisted); it stays disconnected. */
  async reject(server: string): Promise<void> {
    this.assertLive();
    const entry = await this.decisionEntry(server);
    await this.decisions.reject(this.root, entry);
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
    this.roots = [...roots];
    await Promise.allSettled(this.connections.all().map((rec) => rec.conn.client.sendRootsListChanged()));
  }

  /** Elicitation, sampling and roots as declared to every server. */
  private clientFeatures(): ClientFeatures {
    return {
      ...(this.options.onElicitation ? { onElicitation: this.options.onElicitation } : {}),
      ...(this.options.onSampling ? { onSampling: this.options.onSampling } : {}),
      ...(this.options.roots === false ? {} : { roots: () => this.roots ?? workspaceRoots(this.root) }),
    };
  }

  /** Reconnect a server now with a fresh retry budget (from `failed`, `needs_auth` or while reconnecting). */
  async reconnect(server: string): Promise<void> {
    this.assertLive();
    entryOrThrow(server, this.state.desired);
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
    const tools = options.tools?.map((t) => this.registry.getTool(t)?.rawName ?? t);
    const result = await this.switches.set(entry, on, { ...options, ...(tools ? { tools } : {}) });
    if (this.started) await this.coalescer.request();
    else await this.state.refresh();
    return result;
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
    return this.emitter.on(event, listener);
  }

  /** How many reconciles sent something to the machines (for tests and benchmarks). */
  get reconciles(): number {
    return this.state.reconciles;
  }

  /** PIDs of every live stdio child (for tests and leak checks). */
  pids(): number[] {
    return this.tracker.pids();
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
    if (this.holds.has(server)) return;
    this.holds.set(server, undefined);
    const ref = this.view.serverActors().get(server);
    if (ref) this.tellHold(server, ref);
  }

  /**
   * Let go of a server held with {@link hold}: once it is connected with no
   * call for its idle timeout (its `idleTimeoutMs`, else the controller's),
   * it is stopped into `dormant`, its tools staying registered; a new hold
   * before then keeps it running. Idempotent; a no-op after `dispose()`.
   */
  release(server: string): void {
    if (!this.holds.delete(server) || this.disposing) return;
    const ref = this.view.serverActors().get(server);
    if (ref?.getSnapshot().status === 'active') ref.send({ type: 'RELEASE' });
  }

  private tellHold(server: string, ref: AnyActorRef): void {
    this.holds.set(server, ref);
    if (ref.getSnapshot().status === 'active') ref.send({ type: 'HOLD' });
  }
}

/** `live.reconnecting.waiting` for `{ live: { reconnecting: 'waiting' } }`. */
function statePath(value: StateValue): string {
  if (typeof value === 'string') return value;
  const [key, inner] = Object.entries(value)[0] ?? ['', ''];
  return inner === undefined || inner === '' ? key : `${key}.${statePath(inner as StateValue)}`;
}

/** Create a controller for one workspace (SPEC §10). Call `start()` next. */
export function createMcpController(options: McpControllerOptions): McpController {
  if (!options || typeof options.cwd !== 'string' || options.cwd === '') {
    throw new McpReconcilerError(ErrorCode.Usage, 'createMcpController needs a `cwd` (the workspace root)');
  }
  return new McpController(options);
}
