import { fromCallback, fromPromise } from 'xstate';
import {
  serverMachine,
  type ConnectInput,
  type ConnectionLostEvent,
  type ConnectOutput,
  type ErrorReportedEvent,
  type SessionInput,
  type SubscriptionsEvent,
} from '../../machines/server.machine.js';
import type { DesiredServer, LogLevel } from '../../machines/types.js';
import type { CachedListing, ProtocolVerdict } from '../cache/listing-cache.js';
import type { ServerLogWriter } from './server-logs.js';
import { openConnection, type ConnectionEvent, type ConnectOptions, type LiveConnection } from '../connection/connect.js';
import { ownBusyTicks, processTreeCpuTicks, treeRunnable } from '../connection/process-groups.js';
import { ResourceSubscriptions } from '../connection/subscriptions.js';
import { ErrorCode, McpReconcilerError, describeError } from '../errors.js';
import { transportOf } from '../config/identity.js';
import { holdWhileStarting } from './semaphore.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { getOwn } from '../util/own.js';
import type { AuthHooks } from './auth.js';
import type { Workspace } from './workspace.js';
import { EraMemory } from './era-memory.js';

/** How a connection ended; `permanent` when the generation was closed because its listing was rejected. */
export interface Lost {
  error: string;
  sessionLost: boolean;
  permanent?: boolean;
}

/** A connect attempt that left the connect queue: its server's start bound and readiness count from `at`. */
export interface StartedConnect {
  generation: number;
  /** `performance.now()` when it left the queue (at once for transports the queue does not bound). */
  at: number;
}

/** One server's live connection, as the `connect` actor left it. */
export interface ConnectionRecord {
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
  /** Tells the machine how many resources of the server are subscribed (a subscribed server is never idle-stopped), while `connected`. */
  syncSubscriptions?: (count: number) => void;
  /** The log level this connection was last asked for (`logLevel`, `setLogLevel`). */
  logLevel?: LogLevel;
}

/** The connect settings of a controller: its options with their defaults applied. */
export interface ConnectSettings {
  envPolicy: ConnectOptions['envPolicy'] | undefined;
  connectTimeoutMs: number;
  /** The start bound of a server whose config sets no `startTimeoutMs`. */
  startTimeoutMs: number;
  /** The protocol revision for entries that pin none. */
  protocol: ConnectOptions['protocol'];
  /** The tools to register of a server's listing (definition drift may hold some back); identity when absent. */
  reviewTools?(name: string, entry: DesiredServer, tools: Tool[]): Tool[];
  /** The log level to ask `name` for (`logging/setLevel`); none asked when absent. */
  logLevel?(name: string, entry: DesiredServer): LogLevel | undefined;
}

/**
 * The server machine's I/O (SPEC §5): the injected `connect` and `session`
 * actors and the `dropTools` / `disconnect` / `applyFilter` /
 * `restoreCached` actions, over the connections they open. Errors it sees
 * reach the machine: failures as the events that move it, the rest reported
 * (`ERROR_REPORTED`), so a server's last error lives only in its context.
 */
export class Connections {
  private readonly live = new Map<string, ConnectionRecord>();
  /** Connections being closed; `closeAll()` waits for every one. */
  private readonly closing = new Set<Promise<unknown>>();
  /** Resource conflicts already logged, so a reconnect does not repeat them. */
  private readonly reportedConflicts = new Set<string>();
  /** The host's resource subscriptions, sent again to every new connection of their server. */
  readonly subscriptions: ResourceSubscriptions;
  /** Each server's latest connect that left the queue. */
  private readonly started = new Map<string, StartedConnect>();
  /** When each server's first connect left the queue. */
  private readonly firstStarted = new Map<string, number>();
  private readonly startListeners = new Set<() => void>();
  /** The turn the connects begun in this one wait for before they spawn anything (see `laterTurn`). */
  private spawnTurn: Promise<void> | undefined;
  /** The programs found to speak only 2025 revisions: an edit of their config opens without a probe. */
  private readonly eras = new EraMemory();

  constructor(
    private readonly ws: Workspace,
    private readonly auth: AuthHooks,
    private readonly settings: ConnectSettings,
  ) {
    this.subscriptions = new ResourceSubscriptions({
      connectionOf: (server) => {
        const rec = this.live.get(server);
        return rec && !rec.lost ? rec.conn : undefined;
      },
      onCount: (server, count) => this.live.get(server)?.syncSubscriptions?.(count),
      onError: (message) => ws.logger.warn(message),
      onListenerError: (err) => ws.logger.warn(`a resource subscriber threw: ${describeError(err)}`),
    });
    // A server that lost entries to another's shared prefix ends its generation.
    ws.registry.onChange((change) => {
      if (change.removed.length > 0 || change.prompts.removed.length > 0) this.endIfConflicted(change.server);
    });
  }

  /** {@link serverMachine} with this object's actors and actions provided. */
  provideMachine() {
    return serverMachine.provide({
      actors: {
        connect: fromPromise<ConnectOutput, ConnectInput>(({ input, signal }) => this.connect(input.name, input.entry, input.generation, signal)),
        session: fromCallback<ConnectionLostEvent, SessionInput>(({ input, sendBack }) => this.watchSession(input, sendBack)),
      },
      actions: {
        dropTools: (_args: unknown, params: { name: string }) => this.ws.registry.drop(params.name),
        disconnect: (_args: unknown, params: { name: string }) => this.close(params.name),
        applyFilter: (_args: unknown, params: { name: string; entry: DesiredServer }) => this.applyFilter(params.name, params.entry),
        restoreCached: (_args: unknown, params: { name: string; entry: DesiredServer; generation: number }) =>
          this.restoreCached(params.name, params.entry, params.generation),
      },
    });
  }

  /** The reconciler's actions: a cached listing registered before its server's actor exists. */
  reconcilerActions() {
    return {
      restoreCached: (_args: unknown, params: { name: string; entry: DesiredServer }) => {
        // Whatever goes wrong here must not take the reconciler down: the child's own try
        // on entry to `live` meets it again, where a throw ends only that child.
        try {
          this.restoreCached(params.name, params.entry, 0, false);
        } catch {
          /* left to the child */
        }
      },
    };
  }

  /** The current connection of `name`, if it has one. */
  get(name: string): ConnectionRecord | undefined {
    return this.live.get(name);
  }

  /** `name`'s latest connect attempt that left the connect queue, if any. */
  startedConnect(name: string): StartedConnect | undefined {
    return this.started.get(name);
  }

  /** When `name`'s first connect attempt left the connect queue (`performance.now()`), if one did. */
  firstStartedAt(name: string): number | undefined {
    return this.firstStarted.get(name);
  }

  /** Call `listener` whenever a connect attempt leaves the queue; returns the unsubscribe function. */
  onConnectStarted(listener: () => void): () => void {
    this.startListeners.add(listener);
    return () => this.startListeners.delete(listener);
  }

  /** Every current connection. */
  all(): ConnectionRecord[] {
    return [...this.live.values()];
  }

  /** The cached listing of `name`'s desired entry, if any: what the server would serve (for explaining an unavailable one). */
  cachedListingOf(name: string): CachedListing | undefined {
    const entry = getOwn(this.ws.desired, name);
    return entry ? this.ws.cache?.get(entry.fingerprint) : undefined;
  }

  /** Close every connection and resolve once every close, started here or earlier, is over (HTTP session DELETE included). */
  async closeAll(): Promise<void> {
    for (const rec of this.live.values()) this.trackClose(rec.conn.close());
    this.live.clear();
    await Promise.allSettled([...this.closing]);
  }

  /**
   * A server whose entries the registry took out because another server won
   * their shared prefix (names that sanitise alike) must not keep serving
   * calls: its generation ends like any rejected listing. Deferred, as it is
   * called from inside a registry commit. Without a live connection to end
   * (dormant, still connecting, reconnecting) the conflict is reported.
   */
  endIfConflicted(server: string): void {
    const conflict = this.ws.registry.conflictOf(server);
    if (!conflict) return;
    const rec = this.live.get(server);
    if (!rec || rec.lost) return this.report(server, { type: 'ERROR_REPORTED', error: conflict.message });
    queueMicrotask(() => {
      if (this.live.get(server) === rec && !rec.lost) this.rejectGeneration(server, rec, conflict);
    });
  }

  private async connect(name: string, entry: DesiredServer, generation: number, signal: AbortSignal): Promise<ConnectOutput> {
    const { ws, settings } = this;
    const token = Symbol(`${name}#${generation}`);
    // Queued until marked below (a re-added server's generations start at 1 again).
    this.started.delete(name);
    this.auth.connectStarted(name);
    const stdio = transportOf(entry.config) === 'stdio';
    // Each spawn blocks the main thread until exec (~10 ms, more on a busy machine): the
    // whole admission pass (every cached listing registered) and the host's own turn
    // come first.
    if (stdio) await this.laterTurn();
    // The limiter bounds concurrent CPU-heavy process starts only (docs/performance.md, "The connect
    // limit on a loaded machine"): the slot goes back once the server answered its first request
    // (the probe or `initialize`) or sits idle (not waiting for a CPU), so hung handshakes cannot
    // starve the queue. Remote and in-process connects start no process here.
    const hold = stdio
      ? holdWhileStarting(await ws.semaphore.acquire(signal), { cpuTicks: processTreeCpuTicks, ownBusyTicks, startCpuTicks: mainThreadTreeCpuTicks, runnable: treeRunnable })
      : undefined;
    // Time spent queued is not the server's: its start bound and readiness count from here.
    this.markStarted(name, generation);
    // The era is learnt as soon as the server answers (a 2025-era one at its refusal of the probe),
    // before the slot goes back: the servers of the same program the limiter admits next open
    // without a probe (docs/protocol.md, "The era cache").
    const choice = entry.config.protocol ?? settings.protocol ?? 'auto';
    const learnt = (verdict: ProtocolVerdict | undefined): void => {
      if (verdict) this.eras.remember(entry, choice, verdict);
      hold?.initialized();
    };
    const startPhase = { ...(hold ? { spawned: hold.spawned } : {}), answered: learnt, initialized: learnt };
    const logLevel = this.settings.logLevel?.(name, entry);
    let conn: LiveConnection;
    try {
      conn = await openConnection(entry, {
        generation,
        signal,
        tracker: ws.tracker,
        ...(settings.envPolicy ? { envPolicy: settings.envPolicy } : {}),
        parentEnv: ws.env,
        cwd: ws.root,
        timeoutMs: settings.connectTimeoutMs,
        ...(settings.protocol ? { protocol: settings.protocol } : {}),
        // The era the last connection of this config (or, for a 2025-era one, of this program) found: no probe (docs/protocol.md).
        ...((p) => (p ? { prior: p } : {}))(ws.cache?.get(entry.fingerprint)?.protocol ?? this.eras.get(entry)),
        // Slow starts are the machine's `connecting.slow`, not a failure, up to the start bound.
        backgroundStart: true,
        startTimeoutMs: entry.config.startTimeoutMs ?? settings.startTimeoutMs,
        clientInfo: { name: 'mcp-reconciler', version: '0.1.0' },
        onEvent: (e) => this.onConnectionEvent(name, token, e),
        startPhase,
        clientFeatures: ws.clientFeatures(),
        ...((wrap) => (wrap ? { wrapFetch: wrap } : {}))(this.auth.fetchFor(name, entry)),
        ...((log) => (log ? { onStderr: (chunk: Buffer) => log.stderr(name, chunk), onLogMessage: (m: Parameters<ServerLogWriter['message']>[1]) => log.message(name, m) } : {}))(ws.serverLog),
        ...(logLevel !== undefined ? { logLevel } : {}),
      });
    } finally {
      hold?.release();
    }
    if (signal.aborted || ws.disposing) {
      await conn.close();
      throw new McpReconcilerError(ErrorCode.ConnectFailed, `connect of "${name}" was cancelled`);
    }
    // Whole generation or nothing: a listing the registry rejects closes this
    // generation, and the server goes to `failed` (its old tools leave with `live`).
    const result = ws.registry.commit(name, generation, this.reviewed(name, entry, listingOf(conn)), filterOf(entry));
    if (!result.ok) {
      this.trackClose(conn.close());
      ws.logger.warn(result.error.message);
      throw rejectedListing(name, result.error);
    }
    this.warnInvalidTools(name);
    this.warnResourceConflicts(name);
    if (conn.logLevelError) {
      ws.logger.warn(`MCP server "${name}": ${conn.logLevelError}`);
      ws.serverLog?.supervisor(name, conn.logLevelError, 'warning');
    }
    if (conn.resourceError) {
      // Its tools are fine: the server connects without resources, and says why.
      ws.logger.warn(`MCP server "${name}": ${conn.resourceError}; its resources are not registered`);
      this.report(name, { type: 'ERROR_REPORTED', error: conn.resourceError, generation });
    }
    ws.cache?.store(entry.fingerprint, name, listingOf(conn));
    const previous = this.live.get(name);
    this.live.set(name, { conn, generation, token, fingerprint: entry.fingerprint, ...(logLevel !== undefined ? { logLevel } : {}) });
    if (previous && previous.conn !== conn) this.trackClose(previous.conn.close());
    // Subscriptions outlive connections: this one gets them all (failures are logged, not fatal).
    void this.subscriptions.resubscribe(name, conn);
    return { generation };
  }

  /** Log each tool of the server's registered listing that was left out for an invalid definition. */
  private warnInvalidTools(name: string): void {
    for (const t of this.ws.registry.skippedOf(name)) {
      if (t.invalid) this.ws.logger.warn(`MCP server "${name}": tool "${t.rawName}" is not registered: ${t.reason}`);
    }
  }

  /**
   * A promise that resolves on a later turn of the event loop (a timer, so the
   * host's immediates and pending I/O of this turn run before it), shared by
   * every connect that began in this turn.
   */
  private laterTurn(): Promise<void> {
    this.spawnTurn ??= new Promise<void>((resolve) =>
      setTimeout(() => {
        this.spawnTurn = undefined;
        resolve();
      }, 0),
    );
    return this.spawnTurn;
  }

  private markStarted(name: string, generation: number): void {
    const at = performance.now();
    this.started.set(name, { generation, at });
    if (!this.firstStarted.has(name)) this.firstStarted.set(name, at);
    for (const listener of this.startListeners) listener();
  }

  /** Log each new resource URI this server shares with another (the owner rule decides; nothing is rejected). */
  private warnResourceConflicts(name: string): void {
    for (const c of this.ws.registry.resources.conflictsOf(name)) {
      const key = JSON.stringify([c.uri, c.servers]);
      if (this.reportedConflicts.has(key)) continue;
      this.reportedConflicts.add(key);
      const shadowed = c.servers.filter((s) => s !== c.owner).map((s) => `"${s}"`).join(', ');
      this.ws.logger.warn(
        `resource conflict: MCP servers ${c.servers.map((s) => `"${s}"`).join(', ')} all list ${c.uri}; reads go to "${c.owner}" (first in code-point order) and the copy of ${shadowed} is shadowed. Rename or remove one of the resources, or scope sessions to one server, if that is not what you want.`,
      );
    }
  }

  /** Remember a closing connection so that `closeAll()` can wait for it (HTTP session DELETE included). */
  private trackClose(closing: Promise<void>): void {
    const p = closing.catch(() => undefined);
    this.closing.add(p);
    void p.finally(() => this.closing.delete(p));
  }

  private onConnectionEvent(name: string, token: symbol, e: ConnectionEvent): void {
    const rec = this.live.get(name);
    if (e.type === 'lost') {
      const lost = { error: e.error, sessionLost: e.sessionLost };
      if (rec && rec.token === token) {
        rec.lost = lost;
        rec.notify?.(lost);
      }
      return;
    }
    if (!rec || rec.token !== token) return; // a late event from an old generation
    if (e.type === 'resource_updated') return this.subscriptions.updated(name, e.uri);
    void this.relist(name, rec, e.type).catch((err) => {
      this.report(name, { type: 'ERROR_REPORTED', error: `re-list after ${e.type} failed: ${describeError(err)}`, generation: rec.generation });
    });
  }

  private async relist(name: string, rec: ConnectionRecord, what: 'tools_changed' | 'prompts_changed' | 'resources_changed'): Promise<void> {
    const { registry } = this.ws;
    const entry = getOwn(this.ws.desired, name);
    if (!entry) return;
    const store = (): void => {
      if (rec.fingerprint) this.ws.cache?.store(rec.fingerprint, name, listingOf(rec.conn));
    };
    if (what === 'tools_changed') {
      await rec.conn.listTools();
      if (this.live.get(name) !== rec) return;
      // Both from the connection's latest listing, so they always belong together.
      const result = registry.commitTools(name, rec.generation, this.reviewed(name, entry, { tools: rec.conn.tools }).tools, filterOf(entry), rec.conn.invalidTools);
      if (!result.ok) this.rejectGeneration(name, rec, result.error);
      else {
        this.warnInvalidTools(name);
        store();
      }
    } else if (what === 'prompts_changed') {
      const prompts = await rec.conn.listPrompts();
      if (this.live.get(name) !== rec) return;
      const result = registry.commitPrompts(name, rec.generation, prompts);
      // A change of the prompts reaches client-update listeners through the registry's change event.
      if (!result.ok) this.rejectGeneration(name, rec, result.error);
      else store();
    } else {
      const listing = await rec.conn.listResources();
      if (this.live.get(name) !== rec) return;
      // Resources never reject a generation: a shared URI has an owner, see ResourceRegistry.
      registry.resources.commit(name, rec.generation, listing);
      this.warnResourceConflicts(name);
      store();
    }
  }

  /**
   * A re-listing the registry rejected ends the generation: calls must not go
   * on to a server whose tools no longer match what is registered. The
   * machine takes it to `failed` (permanent), which drops the tools.
   */
  private rejectGeneration(name: string, rec: ConnectionRecord, error: McpReconcilerError): void {
    const lost = { error: rejectedListing(name, error).message, sessionLost: false, permanent: true };
    this.ws.logger.warn(lost.error);
    rec.lost = lost;
    rec.notify?.(lost);
  }

  private watchSession({ name, generation, subscriptions }: SessionInput, sendBack: (e: ConnectionLostEvent | SubscriptionsEvent) => void): () => void {
    const rec = this.live.get(name);
    if (!rec || rec.generation !== generation) {
      sendBack({ type: 'CONNECTION_LOST', generation, error: 'connection vanished before it was watched' });
      return () => {};
    }
    rec.notify = (lost) => {
      sendBack({ type: 'CONNECTION_LOST', generation, error: lost.error, sessionLost: lost.sessionLost, ...(lost.permanent ? { permanent: true } : {}) });
    };
    if (rec.lost) rec.notify(rec.lost);
    // The machine's count may be stale (subscriptions changed while it was not connected): set it on every connection.
    rec.syncSubscriptions = (count) => sendBack({ type: 'SUBSCRIPTIONS', count });
    // An event only when it differs: at a start of N servers that is N machine steps saved (docs/start-allocation.md).
    const count = this.subscriptions.countOf(name);
    if (count !== subscriptions) rec.syncSubscriptions(count);
    return () => {
      rec.notify = undefined;
      rec.syncSubscriptions = undefined;
      // Leaving `connected` for any reason ends this generation's connection.
      if (this.live.get(name) === rec) this.live.delete(name);
      this.trackClose(rec.conn.close());
    };
  }

  private close(name: string): void {
    const rec = this.live.get(name);
    if (!rec) return;
    this.live.delete(name);
    this.trackClose(rec.conn.close());
  }

  /** `listing` with its tools as the definition review lets them register. */
  private reviewed<L extends { tools: Tool[] }>(name: string, entry: DesiredServer, listing: L): L {
    const review = this.settings.reviewTools;
    return review ? { ...listing, tools: review(name, entry, listing.tools) } : listing;
  }

  /** Register a live server's current tools again, through the review (after its new definitions were accepted). */
  recommitTools(name: string): void {
    const rec = this.live.get(name);
    const entry = getOwn(this.ws.desired, name);
    if (!rec || !entry) return;
    const result = this.ws.registry.commitTools(name, rec.generation, this.reviewed(name, entry, { tools: rec.conn.tools }).tools, filterOf(entry), rec.conn.invalidTools);
    if (!result.ok) this.rejectGeneration(name, rec, result.error);
  }

  /**
   * Register the cached listing of `entry`'s fingerprint, marked `cached`, on
   * entry into the admitted states (the machine gates this like a connect).
   * Nothing when none is cached or the server already has entries.
   */
  private restoreCached(name: string, entry: DesiredServer, generation: number, report = true): void {
    const { registry } = this.ws;
    const listing = this.ws.cache?.get(entry.fingerprint);
    if (!listing || registry.toolsOf(name).length > 0 || registry.promptsOf(name).length > 0 || registry.resources.resourcesOf(name).length > 0) return;
    const result = registry.commit(name, generation, this.reviewed(name, entry, listing), filterOf(entry), { cached: true });
    // A clash is reported like any listing's, by the actor's own try (an early try before the
    // actor exists stays quiet); the live listing gets its own try.
    if (!result.ok && report) {
      this.ws.logger.debug(`cached listing of "${name}" not registered: ${result.error.message}`);
      this.report(name, { type: 'ERROR_REPORTED', error: result.error.message });
    }
  }

  /** Tell `name`'s actor about an error that moves it nowhere; its context keeps the last error. */
  private report(name: string, event: ErrorReportedEvent): void {
    this.ws.server(name)?.send(event);
  }

  private applyFilter(name: string, entry: DesiredServer): void {
    const { error } = this.ws.registry.setFilter(name, filterOf(entry));
    if (error) this.report(name, { type: 'ERROR_REPORTED', error: error.message });
    // A `logLevel` edit needs no reconnect: the live connection is asked again.
    const level = this.settings.logLevel?.(name, entry);
    if (level !== undefined && this.live.get(name)?.logLevel !== level) void this.setLogLevel(name, level).catch(() => {});
  }

  /**
   * Ask `name`'s live connection for log messages at `level` and above;
   * `false` when it has none or its server does not declare `logging`. A
   * refusal is written to the server's log and thrown.
   */
  async setLogLevel(name: string, level: LogLevel): Promise<boolean> {
    const rec = this.live.get(name);
    if (!rec || rec.lost) return false;
    rec.logLevel = level;
    try {
      return await rec.conn.setLogLevel(level);
    } catch (err) {
      const message = `logging/setLevel "${level}" was refused: ${describeError(err)}`;
      this.ws.serverLog?.supervisor(name, message, 'warning');
      throw new McpReconcilerError(ErrorCode.ConnectFailed, `MCP server "${name}": ${message}`, { hint: 'the server keeps its own log level; its other messages still reach its log' });
    }
  }
}

/** A start's cost as the adaptive connect bound sees it: the tree through main-thread forks (~12 ms of host CPU less at N=50 than reading every thread's children). */
function mainThreadTreeCpuTicks(pid: number): number | undefined {
  return processTreeCpuTicks(pid, 'main');
}

/** Everything a connection listed, as the registry and the cache take it. */
function listingOf(conn: LiveConnection): CachedListing {
  return {
    tools: conn.tools,
    prompts: conn.prompts,
    resources: conn.resources,
    resourceTemplates: conn.resourceTemplates,
    ...(conn.invalidTools.length > 0 ? { invalidTools: conn.invalidTools } : {}),
    protocol: conn.protocol,
  };
}

/** The error a rejected listing ends its generation with: permanent, so the server rests in `failed`. */
function rejectedListing(name: string, cause: McpReconcilerError): McpReconcilerError {
  return new McpReconcilerError(
    ErrorCode.ToolConflict,
    `tool_conflict: the tool listing of "${name}" was rejected: ${cause.message} Its connection is closed and none of its tools or prompts stay registered; it stays failed until its config changes or it is reconnected.`,
    {
      hint: cause.hint ?? 'rename or filter the conflicting tools (excludeTools), then edit the config or reconnect the server',
      details: { server: name, ...cause.details },
      cause,
      permanent: true,
    },
  );
}

function filterOf(entry: DesiredServer): { includeTools?: string[]; excludeTools?: string[] } {
  const out: { includeTools?: string[]; excludeTools?: string[] } = {};
  if (entry.config.includeTools) out.includeTools = entry.config.includeTools;
  if (entry.config.excludeTools) out.excludeTools = entry.config.excludeTools;
  return out;
}
