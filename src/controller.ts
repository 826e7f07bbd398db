import { availableParallelism, homedir } from 'node:os';
import path from 'node:path';
import deepEqual from 'fast-deep-equal';
import { createActor, fromCallback, fromPromise, type Actor, type AnyActorRef, type InspectionEvent, type StateValue } from 'xstate';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { reconcilerMachine } from '../machines/reconciler.machine.js';
import { serverMachine } from '../machines/server.machine.js';
import { publicStatusOf, reasonOf, SERVER_STATE_NAMES, stateNameOf } from '../machines/reason.js';
import { isGated } from '../machines/admission.js';
import type { ApprovalDecision, DesiredMap, DesiredServer, ServerConfig } from '../machines/types.js';
import { assemble } from './config/assemble.js';
import { loadSource, type LoadedSource } from './config/load.js';
import { resolvePreset, type Preset } from './config/presets.js';
import type { ConfigIssue, ConfigSource } from './config/sources.js';
import { computeGating, type ComputedGating } from './gating/compute.js';
import { canonicalRoot, defaultApprovalsPath, FileApprovalStore, type ApprovalRecord, type ApprovalStore } from './approvals/store.js';
import { promptableServers } from './approvals/promptable.js';
import { openConnection, type ConnectionEvent, type LiveConnection } from './connection/connect.js';
import { ProcessTracker } from './connection/processes.js';
import { ToolRegistry, type RegisteredPrompt, type RegisteredTool } from './registry/registry.js';
import { enforceOutputContract } from './registry/output-contract.js';
import { sanitiseNamePart } from './registry/naming.js';
import { watchConfigFiles, type ConfigWatcher } from './watch/config-watcher.js';
import { ReloadCoalescer } from './watch/coalescer.js';
import { ErrorCode, McpReconcilerError, describeError } from './errors.js';
import { SafeEmitter } from './controller/emitter.js';
import { Semaphore } from './controller/semaphore.js';
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
  lost?: { error: string; sessionLost: boolean };
  /** The session actor's channel back into the machine, while `connected`. */
  notify?: (lost: { error: string; sessionLost: boolean }) => void;
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
  private reconcileCount = 0;

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
    // The registry may change another server's tools too (a pending listing that fits
    // once a name frees up), so tools-changed comes from the registry, not from our calls.
    this.registry.onChange((change) => {
      if (change.added.length > 0 || change.removed.length > 0) {
        this.emitter.emit('tools-changed', { server: change.server, added: [...change.added], removed: [...change.removed] });
      }
      this.emitClientUpdate();
    });

    const server = serverMachine.provide({
      actors: {
        connect: fromPromise<{ generation: number }, { name: string; entry: DesiredServer; generation: number }>(
          ({ input, signal }) => this.connectGeneration(input.name, input.entry, input.generation, signal),
        ),
        session: fromCallback<{ type: 'CONNECTION_LOST'; generation: number; error?: string; sessionLost?: boolean }, { name: string; generation: number }>(
          ({ input, sendBack }) => this.watchSession(input.name, input.generation, sendBack),
        ),
      },
      actions: {
        dropTools: (_args: unknown, params: { name: string }) => this.dropTools(params.name),
        disconnect: (_args: unknown, params: { name: string }) => void this.closeConnection(params.name),
        applyFilter: (_args: unknown, params: { name: string; entry: DesiredServer }) => this.applyFilter(params.name, params.entry),
      },
    });
    this.actor = createActor(reconcilerMachine.provide({ actors: { server } }), {
      input: { desired: {}, gating: { excluded: [], trusted: true, approvals: {} }, backoff: options.backoff },
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
    this.actor.start();
    // Watch before the first read: a save landing between that read and the watches
    // being in place would otherwise go unnoticed until the next save.
    if (this.options.watch !== false) {
      // The approvals file is watched too, so `mcp-reconciler approve` run in another
      // terminal takes effect in a running host. Our own writes cause one re-read
      // that finds nothing new to send.
      const storePath = this.store.path;
      this.watcher = watchConfigFiles({
        files: [...this.sources.map((s) => s.path), ...(storePath ? [storePath] : [])],
        debounceMs: this.options.debounceMs ?? 300,
        onChange: () => {
          this.coalescer.request().catch((err) => this.logger.error(`reload failed: ${describeError(err)}`));
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
    await Promise.allSettled([...this.connections.values()].map((r) => r.conn.close()));
    this.connections.clear();
    await this.tracker.killAll();
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
        list.unshift({ scope: 'user', path: path.resolve(this.root, o.userConfigPath), root: this.root });
      }
    }
    for (const file of o.cliConfigFiles ?? []) list.push({ scope: 'cli', path: path.resolve(this.root, file), root: this.root });
    return list.map((s) => ({ ...s, path: path.resolve(this.root, s.path) }));
  }

  private async readConfig(): Promise<{ desired: DesiredMap; settings: { allowed?: string[]; excluded?: string[] }; issues: ConfigIssue[] }> {
    const loaded = await Promise.all(this.sources.map((s) => loadSource(s, this.env)));
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
    return { desired: assembled.desired, settings: assembled.settings, issues: assembled.issues };
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
    const { desired, settings, issues } = await this.readConfig();
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
        Object.entries(desired).map(([n, d]) => [n, { scope: d.scope, source: d.source, hash: d.hash, fingerprint: d.fingerprint }]),
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

  // ── injected actors and actions ────────────────────────────────────────

  private async connectGeneration(name: string, entry: DesiredServer, generation: number, signal: AbortSignal): Promise<{ generation: number }> {
    const token = Symbol(`${name}#${generation}`);
    const conn = await this.semaphore.run(
      () =>
        openConnection(entry, {
          generation,
          signal,
          tracker: this.tracker,
          ...(this.options.envPolicy ? { envPolicy: this.options.envPolicy } : {}),
          parentEnv: this.env,
          cwd: this.root,
          timeoutMs: this.options.connectTimeoutMs ?? 30_000,
          clientInfo: { name: 'mcp-reconciler', version: '0.1.0' },
          onEvent: (e) => this.onConnectionEvent(name, token, e),
        }),
      signal,
    );
    if (signal.aborted || this.disposing) {
      await conn.close();
      throw new McpReconcilerError(ErrorCode.ConnectFailed, `connect of "${name}" was cancelled`);
    }
    const previous = this.connections.get(name);
    this.connections.set(name, { conn, generation, token });
    if (previous && previous.conn !== conn) void previous.conn.close().catch(() => undefined);
    this.commitListing(name, generation, conn, entry);
    return { generation };
  }

  private commitListing(name: string, generation: number, conn: LiveConnection, entry: DesiredServer): void {
    const result = this.registry.commit(name, generation, { tools: conn.tools, prompts: conn.prompts }, filterOf(entry));
    if (result.ok) this.lastErrors.delete(name);
    else {
      this.lastErrors.set(name, result.error.message);
      this.logger.warn(result.error.message);
      this.emitClientUpdate();
    }
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
      if (!result.ok) this.lastErrors.set(name, result.error.message);
    } else {
      const prompts = await rec.conn.listPrompts();
      if (this.connections.get(name) !== rec) return;
      const result = this.registry.commitPrompts(name, rec.generation, prompts);
      if (!result.ok) this.lastErrors.set(name, result.error.message);
      this.emitClientUpdate();
    }
  }

  private watchSession(
    name: string,
    generation: number,
    sendBack: (e: { type: 'CONNECTION_LOST'; generation: number; error?: string; sessionLost?: boolean }) => void,
  ): () => void {
    const rec = this.connections.get(name);
    if (!rec || rec.generation !== generation) {
      sendBack({ type: 'CONNECTION_LOST', generation, error: 'connection vanished before it was watched' });
      return () => {};
    }
    rec.notify = (lost) => {
      this.lastErrors.set(name, lost.error);
      sendBack({ type: 'CONNECTION_LOST', generation, error: lost.error, sessionLost: lost.sessionLost });
    };
    if (rec.lost) rec.notify(rec.lost);
    return () => {
      rec.notify = undefined;
      // Leaving `connected` for any reason ends this generation's connection.
      if (this.connections.get(name) === rec) this.connections.delete(name);
      void rec.conn.close().catch(() => undefined);
    };
  }

  private async closeConnection(name: string): Promise<void> {
    const rec = this.connections.get(name);
    if (!rec) return;
    this.connections.delete(name);
    await rec.conn.close().catch(() => undefined);
  }

  private dropTools(name: string): void {
    this.registry.drop(name);
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
    if (ctx.lastError && state !== 'connected') this.lastErrors.set(name, ctx.lastError);
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
    const settled = (): boolean =>
      Object.values(this.serverActors()).every((ref) => SETTLED.has(stateNameOf(ref.getSnapshot())));
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
        lastError: this.registry.conflictOf(name)?.message ?? this.lastErrors.get(name) ?? ctx.lastError,
        generation: ctx.generation,
        attempt: ctx.attempt,
        pid: this.connections.get(name)?.conn.pid,
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
        lastError: undefined,
        generation: 0,
        attempt: 0,
        pid: undefined,
      });
    }
    return rows.sort((a, b) => a.name.localeCompare(b.name));
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
    if (reason) return `Tool ${toolName} is unavailable: MCP server "${server}" ${describeReason(reason)}. To fix: ${fixFor(reason, server)}.`;
    const ref = this.serverActors()[server];
    const state = ref ? stateNameOf(ref.getSnapshot()) : undefined;
    if (state === 'connecting') return `Tool ${toolName} is not available yet: MCP server "${server}" is still connecting.`;
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
   * Call a registered tool. Fails with `tool_unavailable` while its server is
   * not connected (reconnecting, failed, …); results of tools with an
   * `outputSchema` are checked (SPEC §6).
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
    let result: CallToolResult;
    try {
      result = await rec.conn.callTool(tool.rawName, args, opts);
    } catch (err) {
      throw this.lostDuringCall(name, tool.server, rec, err) ?? err;
    }
    return enforceOutputContract(tool, result);
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

  private entryOrThrow(server: string): DesiredServer {
    const entry = this.desired[server];
    if (!entry) {
      const known = Object.keys(this.desired);
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
    if (!this.started) await this.start();
    const entry = this.entryOrThrow(server);
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
    await this.coalescer.request();
  }

  /** Reject a gated server for its current config hash (persisted); it stays disconnected. */
  async reject(server: string): Promise<void> {
    this.assertLive();
    if (!this.started) await this.start();
    const entry = this.entryOrThrow(server);
    if (!isGated(entry)) {
      throw new McpReconcilerError(ErrorCode.Usage, `"${server}" comes from the ${entry.scope} scope and cannot be rejected`, {
        hint: 'exclude it with `mcp.excluded` in your settings instead',
      });
    }
    delete this.sessionDecisions[server];
    await this.store.set(this.root, server, { hash: entry.hash, decision: 'rejected', at: new Date().toISOString() });
    await this.coalescer.request();
  }

  /** Reconnect a server now with a fresh retry budget (from `failed`, `needs_auth` or while reconnecting). */
  async reconnect(server: string): Promise<void> {
    this.assertLive();
    this.entryOrThrow(server);
    this.actor.send({ type: 'RECONNECT', name: server });
  }

  /** Add or replace a server in the `runtime` scope (or `sdk` when `type: 'sdk'`). */
  async addRuntimeServer(name: string, config: ServerConfig): Promise<void> {
    this.assertLive();
    if (config.type === 'sdk' || config.instance !== undefined) this.sdkServers[name] = { ...config, type: 'sdk' };
    else this.runtimeServers[name] = config;
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
