import { fromCallback, fromPromise } from 'xstate';
import {
  serverMachine,
  type ConnectInput,
  type ConnectionLostEvent,
  type ConnectOutput,
  type SessionInput,
} from '../../machines/server.machine.js';
import type { DesiredMap, DesiredServer } from '../../machines/types.js';
import type { ListingCache } from '../cache/listing-cache.js';
import type { ClientFeatures } from '../connection/client-capabilities.js';
import { openConnection, type ConnectionEvent, type ConnectOptions, type LiveConnection } from '../connection/connect.js';
import { processTreeCpuTicks, type ProcessTracker } from '../connection/processes.js';
import { ErrorCode, McpReconcilerError, describeError } from '../errors.js';
import { transportOf } from '../gating/fingerprint.js';
import type { ToolRegistry } from '../registry/registry.js';
import { holdWhileStarting, type Semaphore } from './semaphore.js';
import type { Logger, ServerStateName } from './types.js';

/** How a connection ended; `permanent` when the generation was closed because its listing was rejected. */
export interface Lost {
  error: string;
  sessionLost: boolean;
  permanent?: boolean;
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
}

/** What the machine I/O needs from the controller that owns it; getters for what changes over its life. */
export interface ConnectionsDeps {
  registry: ToolRegistry;
  tracker: ProcessTracker;
  /** Bounds concurrent process starts (issue 10). */
  semaphore: Semaphore;
  logger: Logger;
  env: NodeJS.ProcessEnv;
  envPolicy: ConnectOptions['envPolicy'] | undefined;
  connectTimeoutMs: number;
  /** The workspace root, canonical once started. */
  root(): string;
  /** The desired map as last reconciled. */
  desired(): DesiredMap;
  /** The listing cache, once started. */
  cache(): ListingCache | undefined;
  /** The controller is being disposed: a connect that lands now is closed. */
  disposing(): boolean;
  /** Elicitation, sampling and roots as declared to every server. */
  clientFeatures(): ClientFeatures;
  /** OAuth's fetch wrapper for a remote server, if it needs one. */
  fetchFor(name: string, entry: DesiredServer): ConnectOptions['wrapFetch'] | undefined;
  /** A connect attempt of `name` begins. */
  connectStarted(name: string): void;
  /** A server's prompts were re-listed. */
  promptsChanged(): void;
}

/**
 * The server machine's I/O (SPEC §5): the injected `connect` and `session`
 * actors and the `dropTools` / `disconnect` / `applyFilter` /
 * `restoreCached` actions, over the connections they open. It also keeps the
 * errors the controller knows beyond the machine's own (`lastError`).
 */
export class Connections {
  private readonly live = new Map<string, ConnectionRecord>();
  /** Connections being closed; `closeAll()` waits for every one. */
  private readonly closing = new Set<Promise<unknown>>();
  /** Errors the machine does not see (a re-list that failed, a filter the registry refused, a lost connection's cause). */
  private readonly errors = new Map<string, string>();

  constructor(private readonly deps: ConnectionsDeps) {}

  /** {@link serverMachine} with this object's actors and actions provided. */
  provideMachine() {
    return serverMachine.provide({
      actors: {
        connect: fromPromise<ConnectOutput, ConnectInput>(({ input, signal }) => this.connect(input.name, input.entry, input.generation, signal)),
        session: fromCallback<ConnectionLostEvent, SessionInput>(({ input, sendBack }) => this.watchSession(input.name, input.generation, sendBack)),
      },
      actions: {
        dropTools: (_args: unknown, params: { name: string }) => this.deps.registry.drop(params.name),
        disconnect: (_args: unknown, params: { name: string }) => this.close(params.name),
        applyFilter: (_args: unknown, params: { name: string; entry: DesiredServer }) => this.applyFilter(params.name, params.entry),
        restoreCached: (_args: unknown, params: { name: string; entry: DesiredServer; generation: number }) =>
          this.restoreCached(params.name, params.entry, params.generation),
      },
    });
  }

  /** The current connection of `name`, if it has one. */
  get(name: string): ConnectionRecord | undefined {
    return this.live.get(name);
  }

  /** Every current connection. */
  all(): ConnectionRecord[] {
    return [...this.live.values()];
  }

  /** The error the controller last saw for `name` beyond its machine's. */
  errorOf(name: string): string | undefined {
    return this.errors.get(name);
  }

  /** A server actor moved to `state`: keep its machine's error, or forget all when it was removed. */
  noteState(name: string, state: ServerStateName, machineError: string | undefined): void {
    // A removed server's errors die with it: a later server of the same name starts clean.
    if (state === 'removed') this.errors.delete(name);
    else if (machineError && state !== 'connected') this.errors.set(name, machineError);
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
   * called from inside a registry commit.
   */
  endIfConflicted(server: string): void {
    const conflict = this.deps.registry.conflictOf(server);
    const rec = conflict ? this.live.get(server) : undefined;
    if (!conflict || !rec || rec.lost) return;
    queueMicrotask(() => {
      if (this.live.get(server) === rec && !rec.lost) this.rejectGeneration(server, rec, conflict);
    });
  }

  private async connect(name: string, entry: DesiredServer, generation: number, signal: AbortSignal): Promise<ConnectOutput> {
    const { deps } = this;
    const token = Symbol(`${name}#${generation}`);
    deps.connectStarted(name);
    // The limiter bounds concurrent CPU-heavy process starts only (issue 10): the slot
    // goes back once the server answered `initialize` or sits idle, so hung handshakes
    // cannot starve the queue. Remote and in-process connects start no process here.
    const hold =
      transportOf(entry.config) === 'stdio'
        ? holdWhileStarting(await deps.semaphore.acquire(signal), { cpuTicks: processTreeCpuTicks })
        : undefined;
    let conn: LiveConnection;
    try {
      conn = await openConnection(entry, {
        generation,
        signal,
        tracker: deps.tracker,
        ...(deps.envPolicy ? { envPolicy: deps.envPolicy } : {}),
        parentEnv: deps.env,
        cwd: deps.root(),
        timeoutMs: deps.connectTimeoutMs,
        // Slow starts are the machine's `connecting.slow`, not a failure (issue 13).
        backgroundStart: true,
        clientInfo: { name: 'mcp-reconciler', version: '0.1.0' },
        onEvent: (e) => this.onConnectionEvent(name, token, e),
        ...(hold ? { startPhase: hold } : {}),
        clientFeatures: deps.clientFeatures(),
        ...((wrap) => (wrap ? { wrapFetch: wrap } : {}))(deps.fetchFor(name, entry)),
      });
    } finally {
      hold?.release();
    }
    if (signal.aborted || deps.disposing()) {
      await conn.close();
      throw new McpReconcilerError(ErrorCode.ConnectFailed, `connect of "${name}" was cancelled`);
    }
    // Whole generation or nothing: a listing the registry rejects closes this
    // generation, and the server goes to `failed` (its old tools leave with `live`).
    const result = deps.registry.commit(name, generation, { tools: conn.tools, prompts: conn.prompts }, filterOf(entry));
    if (!result.ok) {
      this.trackClose(conn.close());
      deps.logger.warn(result.error.message);
      throw rejectedListing(name, result.error);
    }
    this.errors.delete(name);
    deps.cache()?.store(entry.fingerprint, name, { tools: conn.tools, prompts: conn.prompts });
    const previous = this.live.get(name);
    this.live.set(name, { conn, generation, token, fingerprint: entry.fingerprint });
    if (previous && previous.conn !== conn) this.trackClose(previous.conn.close());
    return { generation };
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
    void this.relist(name, rec, e.type).catch((err) => {
      this.errors.set(name, `re-list after ${e.type} failed: ${describeError(err)}`);
    });
  }

  private async relist(name: string, rec: ConnectionRecord, what: 'tools_changed' | 'prompts_changed'): Promise<void> {
    const { registry } = this.deps;
    const entry = this.deps.desired()[name];
    if (!entry) return;
    if (what === 'tools_changed') {
      const tools = await rec.conn.listTools();
      if (this.live.get(name) !== rec) return;
      const result = registry.commitTools(name, rec.generation, tools, filterOf(entry));
      if (!result.ok) this.rejectGeneration(name, rec, result.error);
      else if (rec.fingerprint) this.deps.cache()?.store(rec.fingerprint, name, { tools, prompts: rec.conn.prompts });
    } else {
      const prompts = await rec.conn.listPrompts();
      if (this.live.get(name) !== rec) return;
      const result = registry.commitPrompts(name, rec.generation, prompts);
      if (!result.ok) this.rejectGeneration(name, rec, result.error);
      else if (rec.fingerprint) this.deps.cache()?.store(rec.fingerprint, name, { tools: rec.conn.tools, prompts });
      this.deps.promptsChanged();
    }
  }

  /**
   * A re-listing the registry rejected ends the generation: calls must not go
   * on to a server whose tools no longer match what is registered. The
   * machine takes it to `failed` (permanent), which drops the tools.
   */
  private rejectGeneration(name: string, rec: ConnectionRecord, error: McpReconcilerError): void {
    const lost = { error: rejectedListing(name, error).message, sessionLost: false, permanent: true };
    this.deps.logger.warn(lost.error);
    rec.lost = lost;
    rec.notify?.(lost);
  }

  private watchSession(name: string, generation: number, sendBack: (e: ConnectionLostEvent) => void): () => void {
    const rec = this.live.get(name);
    if (!rec || rec.generation !== generation) {
      sendBack({ type: 'CONNECTION_LOST', generation, error: 'connection vanished before it was watched' });
      return () => {};
    }
    rec.notify = (lost) => {
      this.errors.set(name, lost.error);
      sendBack({ type: 'CONNECTION_LOST', generation, error: lost.error, sessionLost: lost.sessionLost, ...(lost.permanent ? { permanent: true } : {}) });
    };
    if (rec.lost) rec.notify(rec.lost);
    return () => {
      rec.notify = undefined;
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

  /**
   * Register the cached listing of `entry`'s fingerprint, marked `cached`, on
   * entry into the admitted states (the machine gates this like a connect).
   * Nothing when none is cached or the server already has entries.
   */
  private restoreCached(name: string, entry: DesiredServer, generation: number): void {
    const { registry } = this.deps;
    const listing = this.deps.cache()?.get(entry.fingerprint);
    if (!listing || registry.toolsOf(name).length > 0 || registry.promptsOf(name).length > 0) return;
    const result = registry.commit(name, generation, listing, filterOf(entry), { cached: true });
    // A clash is reported like any listing's; the live listing gets its own try.
    if (!result.ok) this.deps.logger.debug(`cached listing of "${name}" not registered: ${result.error.message}`);
  }

  private applyFilter(name: string, entry: DesiredServer): void {
    const { error } = this.deps.registry.setFilter(name, filterOf(entry));
    if (error) this.errors.set(name, error.message);
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

function filterOf(entry: DesiredServer): { includeTools?: string[]; excludeTools?: string[] } {
  const out: { includeTools?: string[]; excludeTools?: string[] } = {};
  if (entry.config.includeTools) out.includeTools = entry.config.includeTools;
  if (entry.config.excludeTools) out.excludeTools = entry.config.excludeTools;
  return out;
}
