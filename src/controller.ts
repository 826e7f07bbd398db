import { availableParallelism, homedir } from 'node:os';
import path from 'node:path';
import deepEqual from 'fast-deep-equal';
import { createActor, fromCallback, fromPromise, type Actor, type AnyActorRef, type InspectionEvent, type StateValue } from 'xstate';
import type { CallToolResult, GetPromptResult } from '@modelcontextprotocol/sdk/types.js';
import { reconcilerMachine } from '../machines/reconciler.machine.js';
import { serverMachine, type ConnectionLostEvent } from '../machines/server.machine.js';
import { isStartingSlowly, publicStatusOf, reasonOf, SERVER_STATE_NAMES, stateNameOf } from '../machines/reason.js';
import { isGated } from '../machines/admission.js';
import type { ApprovalDecision, DesiredMap, DesiredServer, ServerConfig } from '../machines/types.js';
import { assemble } from './config/assemble.js';
import { parseServerConfig } from './config/schema.js';
import { loadSource, type LoadedSource, type ScopedSettings } from './config/load.js';
import { nameCollisionIssues } from './config/name-collisions.js';
import { resolvePreset, type Preset } from './config/presets.js';
import type { ConfigIssue, ConfigSource } from './config/sources.js';
import { computeGating, type ComputedGating } from './gating/compute.js';
import { canonicalRoot, defaultApprovalsPath, FileApprovalStore, type ApprovalRecord, type ApprovalStore } from './approvals/store.js';
import { promptableServers } from './approvals/promptable.js';
import { openConnection, type ConnectionEvent, type LiveConnection } from './connection/connect.js';
import { defaultProcessStatePath, processTreeCpuTicks, ProcessTracker } from './connection/processes.js';
import { transportOf } from './gating/fingerprint.js';
import { ToolRegistry, type RegisteredPrompt, type RegisteredTool } from './registry/registry.js';
import { enforceOutputContract } from './registry/output-contract.js';
import { defaultListingCacheDir, ListingCache } from './cache/listing-cache.js';
import { sanitiseNamePart } from './registry/naming.js';
import { watchConfigFiles, type ConfigWatcher } from './watch/config-watcher.js';
import { ReloadCoalescer } from './watch/coalescer.js';
import { ErrorCode, McpReconcilerError, describeError } from './errors.js';
import { SafeEmitter } from './controller/emitter.js';
import { OAuthManager, type AuthorizeOptions } from './auth/manager.js';
import { defaultTokenStorePath, FileTokenStore } from './auth/token-store.js';
import { workspaceRoots, type ClientFeatures } from './connection/client-capabilities.js';
import type { Root } from '@modelcontextprotocol/sdk/types.js';
import { holdWhileStarting, Semaphore } from './controller/semaphore.js';
import { describeReason, fixFor } from './controller/messages.js';
import type {
  CallToolOptions,
  Logger,
  McpControllerEvents,
  McpControllerOptions,
  Reason,
  ServerStateName,
  ServerStatus,
} from './controller/types.js';

/**
 * States in which a server is done starting, for `start()` readiness (SPEC §3.3):
 * every state but the three that are still on their way to a connection.
 */
const SETTLED: ReadonlySet<ServerStateName> = new Set<ServerStateName>(
  SERVER_STATE_NAMES.filter((s) => s !== 'connecting' && s !== 'reconnecting' && s !== 'fingerprint_changed'),
);

// Measured by `npm run bench` (N=50 stdio servers on 2 cores): 4 at once beat 2, 8,
// 16 and all-at-once; starting servers is CPU-bound, so more only adds contention.
const DEFAULT_CONNECT_CONCURRENCY = Math.max(2, 2 * availableParallelism());

/** How a connection ended; `permanent` when the generation was closed because its listing was rejected. */
interface Lost {
  error: string;
  sessionLost: boolean;
  permanent?: boolean;
}

interface ConnectionRecord {
  conn: LiveConnection;
  generation: number;
  /**
   * Identity of this connection. Generations restart at 1 when a server is
   * removed and added again, so (name, generation) alone could let a late
   * event of the old actor's connection hit the new one.
   */
  token: symbol;
  /** Set once the connection reported a loss (kept until the session actor reads it). */
  lost?: Lost;
  /** The fingerprint it was opened with: its listings are cached under it. */
  fingerprint?: string;
  /** The session actor's channel back into the machine, while `connected`. */
  notify?: (lost: Lost) => void;
}

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
  private readonly sources: ConfigSource[];
  private readonly store: ApprovalStore;
  private readonly cliBound: readonly string[] | undefined;
  private readonly semaphore: Semaphore;
  private readonly coalescer: ReloadCoalescer;
  private readonly connections = new Map<string, ConnectionRecord>();
  /** Connections being closed; `dispose()` waits for every one. */
  private readonly closing = new Set<Promise<unknown>>();
  private readonly lastErrors = new Map<string, string>();
  private readonly stateCache = new Map<string, ServerStateName>();
  private readonly transitionKeys = new Map<string, string>();
  private readonly lastGood = new Map<string, LoadedSource>();
  private readonly runtimeServers: Record<string, ServerConfig> = {};
  private readonly sdkServers: Record<string, ServerConfig> = {};
  private sessionDecisions: Record<string, ApprovalDecision> = {};
  private storeDecisions: Record<string, ApprovalRecord> = {};
  private desired: DesiredMap = {};
  private computed: ComputedGating | undefined;
  private lastSentKey: unknown = undefined;
  private lastIssuesKey = '[]';
  private lastStoreError: string | undefined;
  private removedNames = new Set<string>();
  private root: string;
  private watcher: ConfigWatcher | undefined;
  private started: Promise<void> | undefined;
  private disposing: Promise<void> | undefined;
  /** Listings by fingerprint (issue 13); created by `start()` once the root is canonical. */
  private cache: ListingCache | undefined;
  private reconcileCount = 0;
  /** OAuth of the remote servers (issue 11). */
  private readonly oauth: OAuthManager;
  /** Roots offered to servers; `undefined` when the host turned roots off. */
  private roots: Root[] | undefined;
  /** Servers that got new tokens since their current connect attempt began (see `onInspect`). */
  private readonly authFresh = new Set<string>();

  constructor(private readonly options: McpControllerOptions) {
    this.logger = { ...silentLogger, ...(options.logger ?? {}) };
    this.emitter = new SafeEmitter((event, err) => this.logger.warn(`listener of "${event}" threw: ${describeError(err)}`));
    this.env = options.env ?? process.env;
    this.root = path.resolve(options.cwd);
    this.cliBound = options.cliAllowedServerNames ? Object.freeze([...options.cliAllowedServerNames]) : undefined;
    this.tracker = new ProcessTracker({ graceMs: options.killGraceMs ?? 2_000 });
    this.semaphore = new Semaphore(options.connectConcurrency ?? DEFAULT_CONNECT_CONCURRENCY);
    this.sources = this.resolveSources();
    this.store =
      typeof options.approvals === 'object'
        ? options.approvals
        : new FileApprovalStore(options.approvals ?? defaultApprovalsPath(this.env));
    for (const [name, instance] of Object.entries(options.sdkServers ?? {})) {
      this.sdkServers[name] = { type: 'sdk', instance };
    }
    this.coalescer = new ReloadCoalescer(() => this.reconcileOnce());
    const tokenStore = options.oauth?.tokenStore;
    this.oauth = new OAuthManager({
      store: typeof tokenStore === 'object' ? tokenStore : new FileTokenStore(tokenStore ?? defaultTokenStorePath(this.env)),
      ...(options.onAuthorizationUrl ? { onAuthorizationUrl: options.onAuthorizationUrl } : {}),
      ...(options.onAuthorizationGrant ? { onAuthorizationGrant: options.onAuthorizationGrant } : {}),
      ...(options.oauth?.clientName ? { clientName: options.oauth.clientName } : {}),
      ...(options.oauth?.clientMetadataUrl ? { clientMetadataUrl: options.oauth.clientMetadataUrl } : {}),
      ...(options.oauth?.authorizationTimeoutMs ? { authorizationTimeoutMs: options.oauth.authorizationTimeoutMs } : {}),
      warn: (message) => this.logger.warn(message),
    });
    this.oauth.onAuthorized((name) => this.tokensArrived(name));
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
      // A server whose entries the registry took out because another server won their
      // shared prefix (names that sanitise alike) must not keep serving calls: its
      // generation ends like any rejected listing. Deferred: we are inside a commit.
      const conflict = change.removed.length > 0 || change.prompts.removed.length > 0 ? this.registry.conflictOf(change.server) : undefined;
      const rec = conflict ? this.connections.get(change.server) : undefined;
      if (conflict && rec && !rec.lost) {
        queueMicrotask(() => {
          if (this.connections.get(change.server) === rec && !rec.lost) this.rejectGeneration(change.server, rec, conflict);
        });
      }
      this.emitClientUpdate();
    });

    const server = serverMachine.provide({
      actors: {
        connect: fromPromise<{ generation: number }, { name: string; entry: DesiredServer; generation: number }>(
          ({ input, signal }) => this.connectGeneration(input.name, input.entry, input.generation, signal),
        ),
        session: fromCallback<ConnectionLostEvent, { name: string; generation: number }>(
          ({ input, sendBack }) => this.watchSession(input.name, input.generation, sendBack),
        ),
      },
      actions: {
        dropTools: (_args: unknown, params: { name: string }) => this.dropTools(params.name),
        disconnect: (_args: unknown, params: { name: string }) => this.closeConnection(params.name),
        applyFilter: (_args: unknown, params: { name: string; entry: DesiredServer }) => this.applyFilter(params.name, params.entry),
        restoreCached: (_args: unknown, params: { name: string; entry: DesiredServer; generation: number }) =>
          this.restoreCached(params.name, params.entry, params.generation),
      },
    });
    const lifecycle = {
      ...(options.startup ? { startup: options.startup } : {}),
      ...(options.idleTimeoutMs !== undefined ? { idleTimeoutMs: options.idleTimeoutMs } : {}),
      startTimeoutMs: options.connectTimeoutMs ?? 30_000,
    };
    this.actor = createActor(reconcilerMachine.provide({ actors: { server } }), {
      input: { desired: {}, gating: { excluded: [], trusted: true, approvals: {} }, backoff: options.backoff, lifecycle },
      inspect: (ev) => this.onInspect(ev),
    });
  }

  // ── lifecycle ──────────────────────────────────────────────────────────

  /**
   * Read the config, connect every admitted server and resolve once each has
   * settled (connected, failed, waiting for approval or auth) or after
   * `readyTimeoutMs` (SPEC §3.3). Idempotent.
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
    });
    // Before anything is spawned: a previous host of this workspace that was SIGKILLed
    // may have left detached servers running (issue 10).
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
      const storePath = this.store.path;
      // The token store too: tokens stored by `mcp-reconciler auth` in another terminal wake servers in needs_auth.
      const tokenPath = this.oauth.store.path;
      this.watcher = watchConfigFiles({
        files: [...this.sources.map((s) => s.path), ...(storePath ? [storePath] : []), ...(tokenPath ? [tokenPath] : [])],
        debounceMs: this.options.debounceMs ?? 300,
        onChange: () => {
          this.coalescer.request().catch((err) => this.logger.error(`reload failed: ${describeError(err)}`));
          if (tokenPath) void this.pickUpStoredTokens();
        },
        onError: (err) => this.logger.warn(`config watcher: ${err.message}`),
      });
      await this.watcher.ready;
    }
    await this.coalescer.request();
    if (this.disposing) return;
    await this.waitSettled(this.options.readyTimeoutMs ?? 10_000);
  }

  /** Force a re-read of every source and a reconcile (SPEC §3.2). */
  async reload(): Promise<void> {
    this.assertLive();
    if (!this.started) return this.start();
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
    for (const rec of this.connections.values()) this.trackClose(rec.conn.close());
    this.connections.clear();
    // Every close, including those the machines started on their way out and an
    // HTTP session DELETE, is over before dispose() resolves.
    await Promise.allSettled([...this.closing]);
    this.oauth.dispose();
    await this.tracker.killAll();
    await this.cache?.flush();
    this.actor.stop();
    this.registry.clear();
    this.emitter.clear();
  }

  private assertLive(): void {
    if (this.disposing) {
      throw new McpReconcilerError(ErrorCode.Disposed, 'this controller was disposed', {
        hint: 'create a new controller with createMcpController()',
      });
    }
  }

  // ── config → machines ──────────────────────────────────────────────────

  private resolveSources(): ConfigSource[] {
    const o = this.options;
    let list: ConfigSource[];
    if (o.sources) {
      list = [...o.sources];
    } else {
      const preset: Preset = typeof o.preset === 'object' ? o.preset : resolvePreset(o.preset ?? 'default');
      list = preset.sources({ root: this.root, home: this.env.HOME ?? homedir(), env: this.env });
      if (o.userConfigPath) {
        list = list.filter((s) => s.scope !== 'user');
        list.unshift({ scope: 'user', path: path.resolve(this.root, o.userConfigPath), root: this.root, ...(preset.format ? { format: preset.format } : {}) });
      }
    }
    for (const file of o.cliConfigFiles ?? []) list.push({ scope: 'cli', path: path.resolve(this.root, file), root: this.root });
    return list.map((s) => ({ ...s, path: path.resolve(this.root, s.path) }));
  }

  // Settings stay per source: computeGating merges them under this reconcile's trust (SPEC §2.3).
  private async readConfig(): Promise<{ desired: DesiredMap; settings: ScopedSettings[]; issues: ConfigIssue[] }> {
    const loaded = await Promise.all(this.sources.map((s) => loadSource(s, this.env, { resolveInput: this.options.resolveInput })));
    const used: LoadedSource[] = [];
    for (const fresh of loaded) {
      const prev = this.lastGood.get(fresh.source.path);
      if (fresh.fatal) {
        // A file that does not parse keeps its last good content in force (SPEC §3.2).
        if (prev) used.push({ ...prev, issues: fresh.issues });
        else used.push(fresh);
        continue;
      }
      // An entry that became invalid keeps its last good config rather than disconnecting.
      const badNames = new Set(fresh.issues.map((i) => i.server).filter((n): n is string => n !== undefined));
      const servers = { ...fresh.servers };
      for (const name of badNames) {
        const keep = prev?.servers[name];
        if (keep && !(name in servers)) servers[name] = keep;
      }
      // Likewise an invalid `mcp.allowed`/`mcp.excluded` keeps its last good list: reading a
      // typo as "absent" would un-exclude servers (fail open).
      const settings = { ...fresh.settings };
      for (const key of ['allowed', 'excluded'] as const) {
        const invalid = fresh.issues.some((i) => i.server === undefined && i.field === `mcp.${key}`);
        const keep = prev?.settings[key];
        if (invalid && settings[key] === undefined && keep !== undefined) settings[key] = keep;
      }
      const merged: LoadedSource = { ...fresh, servers, settings };
      this.lastGood.set(fresh.source.path, { ...merged, issues: [] });
      used.push(merged);
    }
    const assembled = assemble(used, { runtime: this.runtimeServers, sdk: this.sdkServers });
    return { desired: assembled.desired, settings: assembled.scopedSettings, issues: assembled.issues };
  }

  private async refreshDecisions(): Promise<void> {
    const { decisions, error } = await this.store.load(this.root);
    this.storeDecisions = decisions;
    // Report a store problem once per distinct error, not on every reload it persists through.
    const errorKey = error ? error.message : undefined;
    if (errorKey === this.lastStoreError) return;
    this.lastStoreError = errorKey;
    if (error) {
      this.logger.error(error.message);
      this.emitter.emit('config-error', {
        issues: [{ file: this.store.path ?? 'approvals store', message: `${error.message}${error.hint ? ` — ${error.hint}` : ''}` }],
      });
    }
  }

  private mergedDecisions(): Record<string, ApprovalDecision> {
    const out: Record<string, ApprovalDecision> = {};
    for (const [name, rec] of Object.entries(this.storeDecisions)) out[name] = { hash: rec.hash, decision: rec.decision };
    // A session approval for the current hash wins over a stored decision for the session's life.
    for (const [name, d] of Object.entries(this.sessionDecisions)) out[name] = d;
    return out;
  }

  /** One level-based reconcile: read everything, send the machines the difference. */
  private async reconcileOnce(): Promise<void> {
    if (this.disposing) return;
    const read = await this.readConfig();
    const { settings, issues } = read;
    // Tokens another process stored (`mcp-reconciler auth`) count on every re-read too.
    void this.pickUpStoredTokens();
    const desired = await this.withCacheFlags(read.desired);
    issues.push(...nameCollisionIssues(desired));
    await this.refreshDecisions();
    const trusted = this.options.isTrustedFolder ? await this.options.isTrustedFolder() : true;
    if (this.disposing) return;

    const issuesKey = JSON.stringify(issues);
    if (issuesKey !== this.lastIssuesKey) {
      this.lastIssuesKey = issuesKey;
      if (issues.length > 0) {
        for (const i of issues) this.logger.warn(`${i.file}${i.line ? `:${i.line}` : ''}: ${i.message}`);
        this.emitter.emit('config-error', { issues });
      }
    }

    const computed = computeGating(desired, {
      settings,
      ...(this.cliBound ? { cliAllowedServerNames: this.cliBound } : {}),
      trusted,
      approvals: this.mergedDecisions(),
    });
    this.desired = desired;
    this.computed = computed;
    for (const name of Object.keys(desired)) this.removedNames.delete(name);

    const key = {
      servers: Object.fromEntries(
        Object.entries(desired).map(([n, d]) => [
          n,
          // startup / idleTimeoutMs are outside both hashes (no new approval), so they are compared here.
          { scope: d.scope, source: d.source, hash: d.hash, fingerprint: d.fingerprint, startup: d.config.startup, idleTimeoutMs: d.config.idleTimeoutMs },
        ]),
      ),
      gating: computed.gating,
    };
    if (deepEqual(key, this.lastSentKey)) return;
    for (const name of Object.keys((this.lastSentKey as typeof key | undefined)?.servers ?? {})) {
      if (!(name in desired)) this.removedNames.add(name);
    }
    this.lastSentKey = key;
    this.actor.send({ type: 'CONFIG', desired, gating: computed.gating });
    this.reconcileCount++;
    this.emitter.emit('reconciled', { count: this.reconcileCount, servers: Object.keys(desired) });
    // Strictly pending from the store (never a name diff), and only servers that would
    // otherwise connect: asking about an excluded or disabled server helps no one.
    const promptable = promptableServers(desired, this.mergedDecisions()).filter(
      (n) => computed.verdicts[n] === 'pending_approval',
    );
    if (promptable.length > 0) this.emitter.emit('pending-approval', { servers: promptable });
  }

  /** `desired` with `cached: true` on every entry whose fingerprint has a cached listing (read from disk once). */
  private async withCacheFlags(desired: DesiredMap): Promise<DesiredMap> {
    const cache = this.cache;
    if (!cache) return desired;
    await cache.prepare(Object.values(desired).map((d) => d.fingerprint));
    const out: Record<string, DesiredServer> = {};
    for (const [name, d] of Object.entries(desired)) out[name] = cache.has(d.fingerprint) ? { ...d, cached: true } : d;
    return out;
  }

  // ── injected actors and actions ────────────────────────────────────────

  private async connectGeneration(name: string, entry: DesiredServer, generation: number, signal: AbortSignal): Promise<{ generation: number }> {
    const token = Symbol(`${name}#${generation}`);
    // Tokens that arrive from here on are news to this attempt (see `onInspect`).
    this.authFresh.delete(name);
    // The limiter bounds concurrent CPU-heavy process starts only (issue 10): the slot
    // goes back once the server answered `initialize` or sits idle, so hung handshakes
    // cannot starve the queue. Remote and in-process connects start no process here.
    const hold =
      transportOf(entry.config) === 'stdio'
        ? holdWhileStarting(await this.semaphore.acquire(signal), { cpuTicks: processTreeCpuTicks })
        : undefined;
    let conn: LiveConnection;
    try {
      conn = await openConnection(entry, {
        generation,
        signal,
        tracker: this.tracker,
        ...(this.options.envPolicy ? { envPolicy: this.options.envPolicy } : {}),
        parentEnv: this.env,
        cwd: this.root,
        timeoutMs: this.options.connectTimeoutMs ?? 30_000,
        // Slow starts are the machine's `connecting.slow`, not a failure (issue 13).
        backgroundStart: true,
        clientInfo: { name: 'mcp-reconciler', version: '0.1.0' },
        onEvent: (e) => this.onConnectionEvent(name, token, e),
        ...(hold ? { startPhase: hold } : {}),
        clientFeatures: this.clientFeatures(),
        ...((wrap) => (wrap ? { wrapFetch: wrap } : {}))(this.oauth.fetchFor(name, entry)),
      });
    } finally {
      hold?.release();
    }
    if (signal.aborted || this.disposing) {
      await conn.close();
      throw new McpReconcilerError(ErrorCode.ConnectFailed, `connect of "${name}" was cancelled`);
    }
    // Whole generation or nothing: a listing the registry rejects closes this
    // generation, and the server goes to `failed` (its old tools leave with `live`).
    const result = this.registry.commit(name, generation, { tools: conn.tools, prompts: conn.prompts }, filterOf(entry));
    if (!result.ok) {
      this.trackClose(conn.close());
      this.logger.warn(result.error.message);
      throw rejectedListing(name, result.error);
    }
    this.lastErrors.delete(name);
    this.cache?.store(entry.fingerprint, name, { tools: conn.tools, prompts: conn.prompts });
    const previous = this.connections.get(name);
    this.connections.set(name, { conn, generation, token, fingerprint: entry.fingerprint });
    if (previous && previous.conn !== conn) this.trackClose(previous.conn.close());
    return { generation };
  }

  /** Remember a closing connection so that `dispose()` can wait for it (HTTP session DELETE included). */
  private trackClose(closing: Promise<void>): void {
    const p = closing.catch(() => undefined);
    this.closing.add(p);
    void p.finally(() => this.closing.delete(p));
  }

  private onConnectionEvent(name: string, token: symbol, e: ConnectionEvent): void {
    const rec = this.connections.get(name);
    if (e.type === 'lost') {
      const lost = { error: e.error, sessionLost: e.sessionLost };
      if (rec && rec.token === token) {
        rec.lost = lost;
        rec.notify?.(lost);
      }
      return;
    }
    if (!rec || rec.token !== token) return; // a late event from an old generation
    void this.relist(name, rec, e.type).catch((err) => {
      this.lastErrors.set(name, `re-list after ${e.type} failed: ${describeError(err)}`);
    });
  }

  private async relist(name: string, rec: ConnectionRecord, what: 'tools_changed' | 'prompts_changed'): Promise<void> {
    const entry = this.desired[name];
    if (!entry) return;
    if (what === 'tools_changed') {
      const tools = await rec.conn.listTools();
      if (this.connections.get(name) !== rec) return;
      const result = this.registry.commitTools(name, rec.generation, tools, filterOf(entry));
      if (!result.ok) this.rejectGeneration(name, rec, result.error);
      else if (rec.fingerprint) this.cache?.store(rec.fingerprint, name, { tools, prompts: rec.conn.prompts });
    } else {
      const prompts = await rec.conn.listPrompts();
      if (this.connections.get(name) !== rec) return;
      const result = this.registry.commitPrompts(name, rec.generation, prompts);
      if (!result.ok) this.rejectGeneration(name, rec, result.error);
      else if (rec.fingerprint) this.cache?.store(rec.fingerprint, name, { tools: rec.conn.tools, prompts });
      this.emitClientUpdate();
    }
  }

  /**
   * A re-listing the registry rejected ends the generation: calls must not go
   * on to a server whose tools no longer match what is registered. The
   * machine takes it to `failed` (permanent), which drops the tools.
   */
  private rejectGeneration(name: string, rec: ConnectionRecord, error: McpReconcilerError): void {
    const lost = { error: rejectedListing(name, error).message, sessionLost: false, permanent: true };
    this.logger.warn(lost.error);
    rec.lost = lost;
    rec.notify?.(lost);
  }

  private watchSession(
    name: string,
    generation: number,
    sendBack: (e: ConnectionLostEvent) => void,
  ): () => void {
    const rec = this.connections.get(name);
    if (!rec || rec.generation !== generation) {
      sendBack({ type: 'CONNECTION_LOST', generation, error: 'connection vanished before it was watched' });
      return () => {};
    }
    rec.notify = (lost) => {
      this.lastErrors.set(name, lost.error);
      sendBack({ type: 'CONNECTION_LOST', generation, error: lost.error, sessionLost: lost.sessionLost, ...(lost.permanent ? { permanent: true } : {}) });
    };
    if (rec.lost) rec.notify(rec.lost);
    return () => {
      rec.notify = undefined;
      // Leaving `connected` for any reason ends this generation's connection.
      if (this.connections.get(name) === rec) this.connections.delete(name);
      this.trackClose(rec.conn.close());
    };
  }

  private closeConnection(name: string): void {
    const rec = this.connections.get(name);
    if (!rec) return;
    this.connections.delete(name);
    this.trackClose(rec.conn.close());
  }

  private dropTools(name: string): void {
    this.registry.drop(name);
  }

  /**
   * Register the cached listing of `entry`'s fingerprint, marked `cached`, on
   * entry into the admitted states (the machine gates this like a connect).
   * Nothing when none is cached or the server already has entries.
   */
  private restoreCached(name: string, entry: DesiredServer, generation: number): void {
    const listing = this.cache?.get(entry.fingerprint);
    if (!listing || this.registry.toolsOf(name).length > 0 || this.registry.promptsOf(name).length > 0) return;
    const result = this.registry.commit(name, generation, listing, filterOf(entry), { cached: true });
    // A clash is reported like any listing's; the live listing gets its own try.
    if (!result.ok) this.logger.debug(`cached listing of "${name}" not registered: ${result.error.message}`);
  }

  private applyFilter(name: string, entry: DesiredServer): void {
    const { error } = this.registry.setFilter(name, filterOf(entry));
    if (error) this.lastErrors.set(name, error.message);
  }

  // ── observation ────────────────────────────────────────────────────────

  private onInspect(ev: InspectionEvent): void {
    if (ev.type !== '@xstate.snapshot') return;
    const snapshot = ev.snapshot as { machine?: { id?: string } };
    if (snapshot.machine?.id !== 'server') return;
    const name = (ev.actorRef as AnyActorRef).id;
    const state = stateNameOf(ev.snapshot as never);
    const ctx = (ev.snapshot as unknown as { context: { generation: number; attempt: number; lastError?: string } }).context;
    // Every transition counts (SPEC §9), including the sub-states of `reconnecting`
    // and a new generation; a snapshot that only changed context otherwise does not.
    const path = statePath((ev.snapshot as unknown as { value: StateValue }).value);
    const key = `${path}#${ctx.generation}`;
    if (this.transitionKeys.get(name) === key) return;
    this.transitionKeys.set(name, key);
    const previous = this.stateCache.get(name);
    this.stateCache.set(name, state);
    // A removed server's errors die with it: a later server of the same name starts clean.
    if (state === 'removed') this.lastErrors.delete(name);
    else if (ctx.lastError && state !== 'connected') this.lastErrors.set(name, ctx.lastError);
    // Tokens that came in while the attempt was still failing with 401: use them now.
    if (state === 'needs_auth' && this.authFresh.has(name)) queueMicrotask(() => this.actor.send({ type: 'AUTHENTICATED', name }));
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

  private emitClientUpdate(): void {
    if (this.emitter.has('client-update')) this.emitter.emit('client-update', { status: this.status() });
  }

  private serverActors(): Record<string, AnyActorRef> {
    const children = this.actor.getSnapshot().children as Record<string, AnyActorRef | undefined>;
    const out: Record<string, AnyActorRef> = {};
    for (const [id, ref] of Object.entries(children)) {
      if (ref && (ref.getSnapshot() as { machine?: { id?: string } }).machine?.id === 'server') out[id] = ref;
    }
    return out;
  }

  private async waitSettled(timeoutMs: number): Promise<void> {
    // A server starting slower than its start timeout is settled-with-reason: it keeps
    // starting in the background, and the host need not wait for it.
    const settled = (): boolean =>
      Object.values(this.serverActors()).every((ref) => SETTLED.has(stateNameOf(ref.getSnapshot())) || isStartingSlowly(ref.getSnapshot()));
    if (settled()) return;
    await new Promise<void>((resolve) => {
      // Not unref'd: a host awaiting start() must not exit underneath it.
      const timer = setTimeout(done, timeoutMs);
      const off = this.emitter.on('server-state', () => {
        if (settled()) done();
      });
      function done(): void {
        clearTimeout(timer);
        off();
        resolve();
      }
    });
  }

  /** Per-server status (SPEC §7), servers in name order; removed servers last seen are included. */
  status(): ServerStatus[] {
    const rows: ServerStatus[] = [];
    const actors = this.serverActors();
    for (const [name, ref] of Object.entries(actors)) {
      const snap = ref.getSnapshot();
      const ctx = snap.context as { entry: DesiredServer; generation: number; attempt: number; lastError?: string };
      const state = stateNameOf(snap);
      rows.push({
        name,
        scope: ctx.entry.scope,
        source: ctx.entry.source,
        state,
        status: publicStatusOf(snap),
        reason: reasonOf(snap),
        tools: this.registry.toolsOf(name).map((t) => t.name),
        prompts: this.registry.promptsOf(name).map((p) => p.name),
        skippedTools: this.registry.skippedOf(name),
        cached: this.registry.toolsOf(name).some((t) => t.cached === true) || this.registry.promptsOf(name).some((p) => p.cached === true),
        lastError: this.lastErrorOf(name),
        generation: ctx.generation,
        attempt: ctx.attempt,
        pid: this.connections.get(name)?.conn.pid,
        transport: this.connections.get(name)?.conn.transportType ?? transportOf(ctx.entry.config),
      });
    }
    for (const name of this.removedNames) {
      if (name in actors) continue;
      rows.push({
        name,
        scope: undefined,
        source: undefined,
        state: 'removed',
        status: 'disabled',
        reason: 'removed',
        tools: [],
        prompts: [],
        skippedTools: [],
        cached: false,
        lastError: undefined,
        generation: 0,
        attempt: 0,
        pid: undefined,
        transport: undefined,
      });
    }
    return rows.sort((a, b) => a.name.localeCompare(b.name));
  }

  /** The most specific error known for a live server actor: a registry conflict, then the controller's, then the machine's. */
  private lastErrorOf(name: string): string | undefined {
    const ref = this.serverActors()[name];
    const ctx = ref?.getSnapshot().context as { lastError?: string } | undefined;
    return this.registry.conflictOf(name)?.message ?? this.lastErrors.get(name) ?? ctx?.lastError;
  }

  /** Why `server` is unavailable, from its actor's state only (SPEC §7); `undefined` when fine or unknown. */
  unavailableReason(server: string): Reason | undefined {
    const ref = this.serverActors()[server];
    if (ref) return reasonOf(ref.getSnapshot());
    return this.removedNames.has(server) ? 'removed' : undefined;
  }

  /**
   * The configured (or removed) server a `mcp__<server>__<tool>` name belongs
   * to, by the longest matching sanitised prefix: server names may contain `__`
   * or characters the naming replaced. `undefined` when none matches.
   */
  serverOfTool(toolName: string): string | undefined {
    const registered = this.registry.getTool(toolName);
    if (registered) return registered.server;
    const known = new Set([...Object.keys(this.serverActors()), ...this.removedNames, ...Object.keys(this.desired)]);
    let best: string | undefined;
    for (const name of known) {
      if (toolName.startsWith(`mcp__${sanitiseNamePart(name)}__`) && (!best || name.length > best.length)) best = name;
    }
    return best;
  }

  /**
   * A sentence for the model or the user: which server a tool belongs to, why
   * it is unavailable, and what fixes it (SPEC §7).
   */
  toolUnavailableMessage(toolName: string): string {
    const registered = this.registry.getTool(toolName);
    const server = this.serverOfTool(toolName);
    if (!server) {
      const servers = Object.keys(this.desired);
      return `Tool ${toolName} is not provided by any configured MCP server${servers.length ? ` (configured: ${servers.join(', ')})` : ''}. Check the name with \`mcp-reconciler tools\`.`;
    }
    const reason = this.unavailableReason(server);
    if (reason) {
      // For a failure the cause is the most useful part of the answer.
      const cause = reason === 'failed' || reason === 'needs_auth' ? this.lastErrorOf(server) : undefined;
      return `Tool ${toolName} is unavailable: MCP server "${server}" ${describeReason(reason)}${cause ? ` (last error: ${cause})` : ''}. To fix: ${fixFor(reason, server)}.`;
    }
    const ref = this.serverActors()[server];
    const state = ref ? stateNameOf(ref.getSnapshot()) : undefined;
    if (state === 'dormant' && registered) {
      return `Tool ${toolName} is available: MCP server "${server}" is dormant (not running, tools from its listing cache); the first call starts it.`;
    }
    if (state === 'connecting') {
      return registered
        ? `Tool ${toolName} is available from the listing cache: MCP server "${server}" is still connecting, and a call waits for it.`
        : `Tool ${toolName} is not available yet: MCP server "${server}" is still connecting.`;
    }
    if (registered) return `Tool ${toolName} is available (server "${server}" is connected).`;
    const skipped = this.registry.skippedOf(server).find((s) => toolName.endsWith(`__${s.rawName}`));
    if (skipped) return `Tool ${toolName} of MCP server "${server}" is not registered: ${skipped.reason}.`;
    const err = this.lastErrors.get(server);
    return `MCP server "${server}" is connected but does not provide ${toolName}${err ? ` (${err})` : ''}. Its tools: ${this.registry.toolsOf(server).map((t) => t.name).join(', ') || 'none'}.`;
  }

  /** Every registered tool, across servers. */
  tools(): RegisteredTool[] {
    return this.registry.tools();
  }

  /** Every registered prompt, across servers. */
  prompts(): RegisteredPrompt[] {
    return this.registry.prompts();
  }

  /** The effective config: desired map and gating verdicts, as last reconciled. */
  config(): { desired: DesiredMap; gating: ComputedGating | undefined; sources: ConfigSource[]; root: string } {
    return { desired: this.desired, gating: this.computed, sources: this.sources, root: this.root };
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
    if (!tool) {
      throw new McpReconcilerError(ErrorCode.UnknownTool, this.toolUnavailableMessage(name), {
        hint: 'list the registered tools with `mcp-reconciler tools`',
        details: { tool: name },
      });
    }
    const ref = this.serverActors()[tool.server];
    const state = ref ? stateNameOf(ref.getSnapshot()) : 'removed';
    if (ref && (state === 'dormant' || state === 'connecting')) return this.callWhenConnected(name, tool, ref, args, opts);
    const rec = this.connections.get(tool.server);
    if (state !== 'connected' || !rec) {
      const reconnecting = state === 'reconnecting' || state === 'connecting' || state === 'fingerprint_changed';
      throw new McpReconcilerError(
        ErrorCode.ToolUnavailable,
        reconnecting
          ? `Tool ${name} is temporarily unavailable: MCP server "${tool.server}" is reconnecting. Try again in a moment.`
          : this.toolUnavailableMessage(name),
        { details: { tool: name, server: tool.server, state, reconnecting } },
      );
    }
    // Counted by the machine so an idle timeout never stops a server mid-call.
    ref!.send({ type: 'CALL_STARTED' });
    try {
      return await this.sendCall(name, tool, rec, args, opts);
    } finally {
      this.callEnded(ref!);
    }
  }

  private async sendCall(
    name: string,
    tool: RegisteredTool,
    rec: ConnectionRecord,
    args: Record<string, unknown>,
    opts: CallToolOptions,
  ): Promise<CallToolResult> {
    let result: CallToolResult;
    try {
      result = await rec.conn.callTool(tool.rawName, args, opts);
    } catch (err) {
      throw this.lostDuringCall(name, tool.server, rec, err) ?? err;
    }
    return enforceOutputContract(tool, result);
  }

  private callEnded(ref: AnyActorRef): void {
    if (ref.getSnapshot().status === 'active') ref.send({ type: 'CALL_ENDED' });
  }

  /**
   * A call to a cached tool of a `dormant` or `connecting` server: wake it
   * (CALL_STARTED), wait for `connected`, then send the call to the tool as
   * the live listing has it. The wait ends early, with `tool_unavailable`,
   * when the server lands anywhere else (a failed attempt goes to
   * `reconnecting`: the call does not ride the backoff), when the live
   * listing no longer has the tool, or at the deadline.
   */
  private async callWhenConnected(
    name: string,
    cachedTool: RegisteredTool,
    ref: AnyActorRef,
    args: Record<string, unknown>,
    opts: CallToolOptions,
  ): Promise<CallToolResult> {
    const server = cachedTool.server;
    const t0 = Date.now();
    const entry = (ref.getSnapshot().context as { entry: DesiredServer }).entry;
    // Without a call timeout, the connect timeout (plus a moment, so the machine's own failure wins the race).
    const waitMs = opts.timeoutMs ?? (entry.config.timeout ?? this.options.connectTimeoutMs ?? 30_000) + 1_000;
    ref.send({ type: 'CALL_STARTED' });
    try {
      const rec = await this.awaitConnected(name, server, ref, waitMs, opts.signal);
      const tool = this.registry.getTool(name);
      if (!tool || tool.server !== server) {
        throw new McpReconcilerError(ErrorCode.UnknownTool, `Tool ${name} is no longer provided: MCP server "${server}" connected and its live tool list does not have it (the cached list was stale). ${this.toolUnavailableMessage(name)}`, {
          details: { tool: name, server, stale: true },
        });
      }
      const left = opts.timeoutMs === undefined ? {} : { timeoutMs: Math.max(1, opts.timeoutMs - (Date.now() - t0)) };
      return await this.sendCall(name, tool, rec, args, { ...opts, ...left });
    } finally {
      this.callEnded(ref);
    }
  }

  /** Resolve with the connection once `server` is connected; reject with `tool_unavailable` if it goes elsewhere or `waitMs` passes. */
  private awaitConnected(toolName: string, server: string, ref: AnyActorRef, waitMs: number, signal?: AbortSignal): Promise<ConnectionRecord> {
    return new Promise<ConnectionRecord>((resolve, reject) => {
      let settled = false;
      let sub: { unsubscribe(): void } | undefined;
      const finish = (fn: () => void): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        sub?.unsubscribe();
        signal?.removeEventListener('abort', onAbort);
        fn();
      };
      const unavailable = (why: string, state: ServerStateName): McpReconcilerError => {
        const reason = this.unavailableReason(server);
        const cause = this.lastErrorOf(server);
        return new McpReconcilerError(
          ErrorCode.ToolUnavailable,
          `Tool ${toolName} is unavailable: MCP server "${server}" ${why}${cause ? ` (last error: ${cause})` : ''}.` +
            (reason ? ` To fix: ${fixFor(reason, server)}.` : ' Try again in a moment.'),
          { details: { tool: toolName, server, state, reason, reconnecting: state === 'reconnecting' || state === 'connecting' } },
        );
      };
      const check = (): void => {
        const snap = ref.getSnapshot();
        const state: ServerStateName = snap.status === 'active' ? stateNameOf(snap) : 'removed';
        const rec = this.connections.get(server);
        if (state === 'connected' && rec) return finish(() => resolve(rec));
        if (state === 'connecting' || state === 'dormant') return;
        const reason = this.unavailableReason(server);
        finish(() => reject(unavailable(reason ? describeReason(reason) : `is ${state}`, state)));
      };
      const onAbort = (): void => finish(() => reject(signal!.reason));
      const timer = setTimeout(() => finish(() => reject(unavailable(`did not connect within ${waitMs} ms (it is still connecting)`, 'connecting'))), waitMs);
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      sub = ref.subscribe({ next: check, error: check, complete: check });
      check();
    });
  }

  /**
   * Get a registered prompt (`mcp__<server>__<prompt>`) from its server, for
   * hosts and the gateway that pass prompts on. Fails with `unknown_tool` /
   * `tool_unavailable` like {@link callTool}.
   */
  async getPrompt(name: string, args: Record<string, string> = {}, opts: CallToolOptions = {}): Promise<GetPromptResult> {
    this.assertLive();
    const prompt = this.registry.getPrompt(name);
    const rec = prompt ? this.connections.get(prompt.server) : undefined;
    const ref = prompt ? this.serverActors()[prompt.server] : undefined;
    if (!prompt || !rec || !ref || stateNameOf(ref.getSnapshot()) !== 'connected') {
      const server = prompt?.server ?? this.serverOfTool(name);
      const reason = server ? this.unavailableReason(server) : undefined;
      throw new McpReconcilerError(
        prompt ? ErrorCode.ToolUnavailable : ErrorCode.UnknownTool,
        server && reason
          ? `Prompt ${name} is unavailable: MCP server "${server}" ${describeReason(reason)}. To fix: ${fixFor(reason, server)}.`
          : prompt
            ? `Prompt ${name} is temporarily unavailable: MCP server "${prompt.server}" is reconnecting. Try again in a moment.`
            : `Prompt ${name} is not provided by any connected MCP server.`,
        { details: { prompt: name, ...(server ? { server } : {}) } },
      );
    }
    return rec.conn.client.getPrompt({ name: prompt.rawName, arguments: args }, { signal: opts.signal, timeout: opts.timeoutMs });
  }

  /**
   * A call that failed because its connection went away (crash, lost session,
   * removal) as a `tool_unavailable` error saying so — the SDK's own error is a
   * bare "Connection closed". `undefined` when the connection is still current,
   * so the caller's own timeouts and aborts pass through unchanged.
   */
  private lostDuringCall(toolName: string, server: string, rec: ConnectionRecord, err: unknown): McpReconcilerError | undefined {
    if (!rec.lost && this.connections.get(server) === rec) return undefined;
    const ref = this.serverActors()[server];
    const state = ref ? stateNameOf(ref.getSnapshot()) : 'removed';
    const reconnecting = state === 'reconnecting' || state === 'connecting' || state === 'fingerprint_changed' || state === 'connected';
    const what = `Tool ${toolName} did not complete: MCP server "${server}" lost its connection (${rec.lost?.error ?? 'connection closed'})`;
    return new McpReconcilerError(
      ErrorCode.ToolUnavailable,
      reconnecting ? `${what} and is reconnecting. Try again in a moment.` : `${what}. ${this.toolUnavailableMessage(toolName)}`,
      { details: { tool: toolName, server, state, reconnecting, lost: true }, cause: err },
    );
  }

  // ── user decisions and runtime edits ───────────────────────────────────

  private entryOrThrow(server: string, desired: DesiredMap = this.desired): DesiredServer {
    const entry = Object.hasOwn(desired, server) ? desired[server] : undefined;
    if (!entry) {
      const known = Object.keys(desired);
      throw new McpReconcilerError(ErrorCode.UnknownServer, `no MCP server named "${server}" is configured`, {
        hint: known.length ? `configured servers: ${known.join(', ')}` : 'no servers are configured; check `mcp-reconciler config`',
        details: { server },
      });
    }
    return entry;
  }

  /**
   * Approve a gated server for its current config hash. `persist: false`
   * approves for this controller's life only.
   */
  async approve(server: string, { persist = true }: { persist?: boolean } = {}): Promise<void> {
    this.assertLive();
    const entry = await this.decisionEntry(server);
    if (!isGated(entry)) {
      throw new McpReconcilerError(ErrorCode.Usage, `"${server}" comes from the ${entry.scope} scope and needs no approval`, {
        hint: 'only servers from project and workspace files are gated',
      });
    }
    const decision: ApprovalDecision = { hash: entry.hash, decision: 'approved' };
    if (persist) {
      await this.store.set(this.root, server, { ...decision, at: new Date().toISOString() });
      delete this.sessionDecisions[server];
    } else {
      this.sessionDecisions[server] = decision;
    }
    if (this.started) await this.coalescer.request();
  }

  /**
   * The entry a decision is about. Before `start()` the config is read for it,
   * but nothing is started: a decision never spawns anything by itself, and
   * the controller applies it when the host starts it.
   */
  private async decisionEntry(server: string): Promise<DesiredServer> {
    if (this.started) return this.entryOrThrow(server);
    this.root = await canonicalRoot(this.root).catch(() => this.root);
    const { desired } = await this.readConfig();
    return this.entryOrThrow(server, desired);
  }

  /** Reject a gated server for its current config hash (persisted); it stays disconnected. */
  async reject(server: string): Promise<void> {
    this.assertLive();
    const entry = await this.decisionEntry(server);
    if (!isGated(entry)) {
      throw new McpReconcilerError(ErrorCode.Usage, `"${server}" comes from the ${entry.scope} scope and cannot be rejected`, {
        hint: 'exclude it with `mcp.excluded` in your settings instead',
      });
    }
    delete this.sessionDecisions[server];
    await this.store.set(this.root, server, { hash: entry.hash, decision: 'rejected', at: new Date().toISOString() });
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
    await this.oauth.authorize(server, entry, options);
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
    return this.oauth.logout(entry);
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
    await Promise.allSettled([...this.connections.values()].map((rec) => rec.conn.client.sendRootsListChanged()));
  }

  /** Elicitation, sampling and roots as declared to every server. */
  private clientFeatures(): ClientFeatures {
    return {
      ...(this.options.onElicitation ? { onElicitation: this.options.onElicitation } : {}),
      ...(this.options.onSampling ? { onSampling: this.options.onSampling } : {}),
      ...(this.options.roots === false ? {} : { roots: () => this.roots ?? workspaceRoots(this.root) }),
    };
  }

  /** New tokens for `name`: a server waiting in needs_auth connects with them. */
  private tokensArrived(name: string): void {
    if (this.disposing) return;
    this.authFresh.add(name);
    if (this.started && this.actor.getSnapshot().status === 'active') this.actor.send({ type: 'AUTHENTICATED', name });
  }

  /** After the token file changed: servers in needs_auth whose URL now has tokens try again. */
  private async pickUpStoredTokens(): Promise<void> {
    for (const [name, ref] of Object.entries(this.serverActors())) {
      if (stateNameOf(ref.getSnapshot()) !== 'needs_auth') continue;
      const entry = this.desired[name];
      if (entry && (await this.oauth.hasTokens(entry).catch(() => false))) this.tokensArrived(name);
    }
  }

  /** Reconnect a server now with a fresh retry budget (from `failed`, `needs_auth` or while reconnecting). */
  async reconnect(server: string): Promise<void> {
    this.assertLive();
    this.entryOrThrow(server);
    this.actor.send({ type: 'RECONNECT', name: server });
  }

  /**
   * Add or replace a server in the `runtime` scope (or `sdk` when `type: 'sdk'`).
   * The config is validated with the same schema as config files; an invalid
   * one throws `config_invalid` naming the field at once, and nothing changes.
   */
  async addRuntimeServer(name: string, config: ServerConfig): Promise<void> {
    this.assertLive();
    if (typeof name !== 'string' || name.trim() === '') {
      throw new McpReconcilerError(ErrorCode.ConfigInvalid, 'addRuntimeServer needs a non-empty server name', {
        hint: 'pass the name the tools should be registered under, e.g. addRuntimeServer("files", { command: "…" })',
      });
    }
    const isSdk = config !== null && typeof config === 'object' && (config.type === 'sdk' || config.instance !== undefined);
    const valid = parseServerConfig(name, isSdk ? { ...config, type: 'sdk' } : config, { allowSdk: isSdk });
    if (isSdk) this.sdkServers[name] = { ...valid, type: 'sdk', instance: config.instance };
    else this.runtimeServers[name] = valid;
    if (this.started) await this.coalescer.request();
  }

  /** Remove a server added with {@link addRuntimeServer}. */
  async removeRuntimeServer(name: string): Promise<void> {
    this.assertLive();
    delete this.runtimeServers[name];
    delete this.sdkServers[name];
    if (this.started) await this.coalescer.request();
  }

  /** Subscribe to an event (SPEC §9); returns the unsubscribe function. Listeners that throw are isolated. */
  on<K extends keyof McpControllerEvents>(event: K, listener: (payload: McpControllerEvents[K]) => void): () => void {
    return this.emitter.on(event, listener);
  }

  /** How many reconciles sent something to the machines (for tests and benchmarks). */
  get reconciles(): number {
    return this.reconcileCount;
  }

  /** PIDs of every live stdio child (for tests and leak checks). */
  pids(): number[] {
    return this.tracker.pids();
  }
}

/** The error a rejected listing ends its generation with: permanent, so the server rests in `failed`. */
function rejectedListing(name: string, cause: McpReconcilerError): McpReconcilerError {
  return new McpReconcilerError(ErrorCode.ToolConflict, `tool_conflict: the tool listing of "${name}" was rejected: ${cause.message}`, {
    hint: cause.hint ?? 'rename or filter the conflicting tools (excludeTools), then edit the config or reconnect the server',
    details: { server: name, ...cause.details },
    cause,
    permanent: true,
  });
}

/** `live.reconnecting.waiting` for `{ live: { reconnecting: 'waiting' } }`. */
function statePath(value: StateValue): string {
  if (typeof value === 'string') return value;
  const [key, inner] = Object.entries(value)[0] ?? ['', ''];
  return inner === undefined || inner === '' ? key : `${key}.${statePath(inner as StateValue)}`;
}

function filterOf(entry: DesiredServer): { includeTools?: string[]; excludeTools?: string[] } {
  const out: { includeTools?: string[]; excludeTools?: string[] } = {};
  if (entry.config.includeTools) out.includeTools = entry.config.includeTools;
  if (entry.config.excludeTools) out.excludeTools = entry.config.excludeTools;
  return out;
}

/** Create a controller for one workspace (SPEC §10). Call `start()` next. */
export function createMcpController(options: McpControllerOptions): McpController {
  if (!options || typeof options.cwd !== 'string' || options.cwd === '') {
    throw new McpReconcilerError(ErrorCode.Usage, 'createMcpController needs a `cwd` (the workspace root)');
  }
  return new McpController(options);
}
