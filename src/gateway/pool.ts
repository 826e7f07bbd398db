/**
 * The gateway's shared server pool: one controller (so one process or
 * connection per managed server, whatever the number of client sessions),
 * the sessions attached to it with their scopes, reference counts, the
 * gateway's names, and the fan-out of registry changes to the sessions
 * whose scope they touch.
 *
 * Reference counts: a server is held (`controller.hold`) while at least one
 * session's scope includes it, and released when the last such session
 * leaves; the controller then stops it into `dormant` after its idle
 * timeout, unless a session holds it again first. With a controller created
 * `onDemand` (as `serve` does), a server no session names never starts.
 *
 * Admission stays the controller's alone: approvals and gating are applied
 * before any server starts, for every session alike; holding a server passes
 * no gate, and a session's scope only narrows what it sees.
 */
import { randomUUID } from 'node:crypto';
import {
  ErrorCode as McpErrorCode,
  McpError,
  type CallToolResult,
  type CreateMessageRequest,
  type CreateMessageResult,
  type GetPromptResult,
  type ReadResourceResult,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import type { McpController } from '../controller/controller.js';
import type { ElicitationAnswer, ElicitationRequest } from '../connection/client-capabilities.js';
import type { RegisteredPrompt } from '../registry/registry.js';
import { describeError } from '../errors.js';
import { DEFAULT_SEPARATOR, describeCollision, GatewayNames } from './naming.js';
import { inScope, type SessionScope } from './scope.js';
import { setOwn } from '../util/own.js';

/**
 * How long a server keeps running after the last session using it left,
 * when neither its config (`idleTimeoutMs`) nor `serve --idle-timeout` says:
 * long enough for a client that reconnects (a reloaded editor window) to find
 * it still running.
 */
export const GATEWAY_IDLE_TIMEOUT_MS = 300_000;

/** How long a session's first request waits for the servers its attach started (like `start()`'s default). */
const SESSION_READY_TIMEOUT_MS = 10_000;

/** How a server-to-client request reaches a session: its abort signal and the client call it belongs to. */
export interface ForwardOptions {
  signal: AbortSignal;
  /** The session's `tools/call` that caused it, so HTTP sends it on that call's stream. */
  relatedRequestId?: RequestId;
}

/** What a session is told when the registry changes (only for servers in its scope), and how to ask its client. */
export interface SessionListener {
  toolsChanged(): void;
  promptsChanged(): void;
  /** Ask this session's client (`elicitation/create`); `undefined` when the client did not declare elicitation. */
  elicit?(request: ElicitationRequest, options: ForwardOptions): Promise<ElicitationAnswer> | undefined;
  /** Ask this session's client (`sampling/createMessage`); `undefined` when the client did not declare sampling. */
  sample?(request: CreateMessageRequest['params'], options: ForwardOptions): Promise<CreateMessageResult> | undefined;
  /**
   * Tell this session's client that the URL elicitation `elicitationId` it
   * was asked is complete (`notifications/elicitation/complete`);
   * `relatedRequestId` while the call that asked is still running.
   */
  elicitationComplete?(elicitationId: string, options: { relatedRequestId?: RequestId }): void;
}

/** How many asked URL elicitations the pool remembers for their completion (the oldest is forgotten first). */
const URL_ELICITATIONS_KEPT = 256;

/** One client session attached to the pool. */
export interface PoolSession {
  readonly id: string;
  readonly scope: SessionScope;
  /** `stdio` or `http`, for status and logs. */
  readonly transport: string;
  /** Who opened it, on a gateway that authenticates principals: its per-principal servers are that principal's own. */
  readonly principal?: string;
  /** Detach from the pool; idempotent. */
  release(): void;
}

/** What every request a {@link ServerPlacement} answers elsewhere carries. */
export interface PlacedRequest {
  signal: AbortSignal;
  timeoutMs: number;
  /** The request's `Authorization` header: the caller's identity, passed on as is. */
  authorization?: string;
  /** Set when the request was itself forwarded by another replica (it is never forwarded again). */
  forwardedBy?: string;
}

/** A tool call a {@link ServerPlacement} answers elsewhere: the gateway name, as the client sent it. */
export interface PlacedCall extends PlacedRequest {
  name: string;
  arguments?: Record<string, unknown>;
  progress?: (p: { progress: number; total?: number; message?: string }) => void;
}

/** A `prompts/get` a {@link ServerPlacement} answers elsewhere: the gateway name, as the client sent it. */
export interface PlacedPrompt extends PlacedRequest {
  name: string;
  arguments?: Record<string, string>;
}

/** A `resources/read` a {@link ServerPlacement} answers elsewhere. */
export interface PlacedRead extends PlacedRequest {
  uri: string;
}

/** A `resources/subscribe` a {@link ServerPlacement} holds elsewhere: `updated` hears the URIs of the holder's `notifications/resources/updated`. */
export interface PlacedSubscribe extends PlacedRequest {
  uri: string;
  updated: (uri: string) => void;
}

/**
 * Where servers run when not every server runs in this process (a
 * clustered gateway's singletons, docs/cluster.md): a server that is not
 * `local` is never held here, and its tool calls, prompts and resource
 * reads go to {@link call}, {@link getPrompt} and {@link readResource}.
 * Each answers `undefined` when the server became local meanwhile (answer
 * here).
 */
export interface ServerPlacement {
  /** Whether `server` may run here now. */
  local(server: string): boolean;
  /** Answer a call of a server that is not local elsewhere. */
  call(server: string, call: PlacedCall): Promise<CallToolResult | undefined>;
  /** Get a prompt of a server that is not local elsewhere; rejects with the JSON-RPC error to send. */
  getPrompt(server: string, request: PlacedPrompt): Promise<GetPromptResult | undefined>;
  /** Read a resource of a server that is not local elsewhere; rejects with the JSON-RPC error to send. */
  readResource(server: string, request: PlacedRead): Promise<ReadResourceResult | undefined>;
  /** Subscribe to a resource of a server that is not local elsewhere: the unsubscribe; rejects with the JSON-RPC error to send. */
  subscribe?(server: string, request: PlacedSubscribe): Promise<(() => Promise<void>) | undefined>;
}

/** Options of {@link GatewayPool}. */
export interface GatewayPoolOptions {
  /** Where problems of the pool itself, and name collisions, are reported (default: nowhere). */
  onError?: (message: string) => void;
  /**
   * Between `mcp`, the server and the tool in gateway names: `mcp<sep><server><sep><tool>`.
   * Default `__` (the registry's names, unchanged). 1 to 8 of `A-Za-z0-9_-`,
   * since clients pass tool names to model APIs that accept only those; a
   * usage error otherwise.
   */
  separator?: string;
  /**
   * The gate before the pool holds servers a session newly needs: awaited
   * before the controller is asked to start them (a cluster re-reads its
   * shared approvals there, docs/cluster.md). Default: none, hold at once.
   */
  admit?: (servers: string[]) => Promise<void>;
  /** Where servers run (docs/cluster.md, singletons); default: every server here. */
  placement?: ServerPlacement;
  /** Servers each principal connects to as itself, through a controller of its own (docs/cluster-principals.md). */
  principals?: PrincipalControllers;
}

/**
 * A clustered gateway's per-principal servers (docs/cluster-principals.md):
 * the pool's own controller leaves them out, and each principal that opens a
 * session naming one gets a controller of its own with only them (and its
 * own credentials), created for its first such session and disposed
 * {@link idleTimeoutMs} after its last one left.
 */
export interface PrincipalControllers {
  /** The servers served per principal now (the config may change them; the pool re-checks after each reconcile). */
  servers(): ReadonlySet<string>;
  /** A new, unstarted controller of `principal` with only {@link servers}. */
  create(principal: string): McpController;
  /** How long a principal's controller outlives its last session, in ms. */
  idleTimeoutMs: number;
}

/** A principal's controller on one replica, as `status --cluster` shows it (docs/cluster-principals.md). */
export interface PrincipalStatus {
  /** Its sessions here. */
  sessions: number;
  /** Its servers (the per-principal ones) by name: their state. */
  servers: Record<string, string>;
}

/** One principal's controller, its own pool, and which of the main pool's sessions are attached to it. */
interface PrincipalEntry {
  principal: string;
  pool: GatewayPool;
  /** Main session id → the same session's place in the principal's pool. */
  sessions: Map<string, PoolSession>;
  /** Disposes the entry once it has had no session for the idle timeout. */
  idle: NodeJS.Timeout | undefined;
}

interface SessionEntry {
  session: PoolSession;
  listener: SessionListener;
  /** Settles once the servers this session's attach started are connected (or fail, or time out). */
  ready?: Promise<void>;
}

/**
 * Sessions sharing one {@link McpController}. Create it with the controller
 * (started or not) and call {@link start} once the listeners are bound (so
 * a port that cannot be bound starts no server); session requests call it
 * too, so a pool nobody started starts with its first request.
 */
export class GatewayPool {
  /** The gateway's names of the registry's tools and prompts, both ways. */
  readonly names: GatewayNames;
  private starting: Promise<void> | undefined;
  private readonly sessions = new Map<string, SessionEntry>();
  private readonly unsubscribe: Array<() => void> = [];
  private readonly promptKeys = new Map<string, string>();
  /** Calls in flight, oldest first: who to ask when a server elicits or samples during a call. */
  private readonly calls: Array<{ sessionId: string; server: string; requestId: RequestId }> = [];
  /** URL elicitations forwarded, by server and `elicitationId`: who to tell when the server says it is complete. */
  private readonly urlElicitations = new Map<string, { listener: SessionListener; requestId: RequestId | undefined }>();
  /** Servers the pool holds in the controller: those with at least one session. */
  private readonly held = new Set<string>();
  /** Of {@link held}, those the controller was asked to hold (after the gate, when there is one). */
  private readonly holding = new Set<string>();
  /** Settles once the latest gate passed (or failed) and its holds were made. */
  private admitted: Promise<void> = Promise.resolve();
  private closed = false;
  /** Per-principal controllers by principal ({@link GatewayPoolOptions.principals}). */
  private readonly principalEntries = new Map<string, PrincipalEntry>();
  /** Controllers of principals being disposed: {@link closePrincipals} waits for them. */
  private readonly disposing = new Set<Promise<void>>();

  constructor(
    readonly controller: McpController,
    private readonly options: GatewayPoolOptions = {},
  ) {
    const separator = options.separator ?? DEFAULT_SEPARATOR;
    this.names = new GatewayNames(
      {
        tools: () => controller.tools(),
        prompts: () => controller.prompts(),
        servers: () => controller.status().map((r) => r.name),
        serverOf: (kind, name) => (kind === 'tool' ? controller.serverOfTool(name) : controller.prompts().find((p) => p.name === name)?.server),
      },
      separator,
      (c) => options.onError?.(`warning: ${describeCollision(c, separator)}`),
    );
    this.unsubscribe.push(
      controller.on('tools-changed', (e) => {
        this.names.invalidate();
        this.fanOut(e.server, 'tools');
      }),
      // Prompts have no event of their own: every registry change also ends in a
      // client-update naming its server, and comparing those servers' prompt listings finds theirs.
      controller.on('client-update', (e) => {
        this.names.invalidate();
        this.checkPrompts(e.registryChanged);
      }),
      // A server that appears (config edit) is held at once if a session's scope has it.
      controller.on('server-state', (e) => this.syncHolds([e.name])),
    );
    // A config edit may make a server per-principal: sessions naming it then need their principal's controller.
    if (options.principals) this.unsubscribe.push(controller.on('reconciled', () => this.syncPrincipals()));
  }

  /**
   * Start the controller; resolves once its first reconcile settled (SPEC
   * §3.3), so a first `tools/list` answers with every ready tool. Idempotent;
   * never rejects (a failed start is reported through `onError`).
   */
  start(): Promise<void> {
    this.starting ??= this.controller.start().then(
      () => this.checkPrompts(),
      (err: unknown) => this.options.onError?.(`the controller did not start: ${describeError(err)}`),
    );
    return this.starting;
  }

  /**
   * Attach a session with `scope`; `listener` hears about registry changes of
   * the servers in its scope from now on.
   */
  attach(scope: SessionScope, transport: string, listener: SessionListener, principal?: string): PoolSession {
    const id = randomUUID();
    const session: PoolSession = {
      id,
      scope,
      transport,
      ...(principal !== undefined ? { principal } : {}),
      release: () => {
        if (!this.sessions.delete(id)) return;
        for (const [key, asked] of this.urlElicitations) if (asked.listener === listener) this.urlElicitations.delete(key);
        this.syncHolds(this.namesOf(scope));
        if (principal !== undefined) this.detachPrincipal(principal, id);
      },
    };
    if (this.closed) return session;
    this.sessions.set(id, { session, listener });
    this.syncHolds(this.namesOf(scope));
    if (principal !== undefined) this.attachPrincipal(session, listener);
    return session;
  }

  /**
   * The principal's own pool a session is attached to, with the session's
   * place in it: where its per-principal servers' tools, prompts and calls
   * are. `undefined` when it has none.
   */
  principalOf(sessionId: string): { pool: GatewayPool; session: PoolSession } | undefined {
    const principal = this.sessions.get(sessionId)?.session.principal;
    const entry = principal === undefined ? undefined : this.principalEntries.get(principal);
    const session = entry?.sessions.get(sessionId);
    return entry && session ? { pool: entry.pool, session } : undefined;
  }

  /** `principal`'s own pool, while it has one: its controller's elicitations and sign-ins go to its sessions only. */
  principalPool(principal: string): GatewayPool | undefined {
    return this.principalEntries.get(principal)?.pool;
  }

  /** The controllers of the principals that have one now. */
  principalControllers(): McpController[] {
    return [...this.principalEntries.values()].map((e) => e.pool.controller);
  }

  /** What each principal's controller here has now: its sessions and its servers' states (`status --cluster`). */
  principalStatus(): Record<string, PrincipalStatus> {
    const out: Record<string, PrincipalStatus> = {};
    for (const [principal, e] of this.principalEntries) {
      const servers: Record<string, string> = {};
      for (const row of e.pool.controller.status()) setOwn(servers, row.name, row.state);
      setOwn(out, principal, { sessions: e.sessions.size, servers });
    }
    return out;
  }

  /**
   * `principal`'s controller, started (created when it has none, then
   * disposed after the idle timeout unless a session of it comes): a sign-in
   * of that principal redeemed here needs its config and its credentials.
   */
  async principalController(principal: string): Promise<McpController | undefined> {
    if (this.closed || !this.options.principals) return undefined;
    const entry = this.principalEntry(principal);
    if (entry.sessions.size === 0) this.idleLater(entry);
    await entry.pool.start();
    return entry.pool.controller;
  }

  /** Whether a session of `scope` names a per-principal server (its principal's own controller serves it). */
  perPrincipal(scope: SessionScope): boolean {
    const servers = this.options.principals?.servers();
    if (!servers || servers.size === 0) return false;
    return scope === undefined || [...scope].some((s) => servers.has(s));
  }

  private principalEntry(principal: string): PrincipalEntry {
    let entry = this.principalEntries.get(principal);
    if (!entry) {
      const controller = this.options.principals!.create(principal);
      const pool: GatewayPool = new GatewayPool(controller, {
        ...(this.options.onError ? { onError: this.options.onError } : {}),
        ...(this.options.separator !== undefined ? { separator: this.options.separator } : {}),
        // Decisions stored elsewhere (a cluster's approvals) are re-read before its servers start, as for the main controller.
        ...(this.options.admit ? { admit: () => controller.reload() } : {}),
      });
      entry = { principal, pool, sessions: new Map(), idle: undefined };
      this.principalEntries.set(principal, entry);
    }
    return entry;
  }

  /** Attach `session` to its principal's pool too, when its scope names a per-principal server. */
  private attachPrincipal(session: PoolSession, listener: SessionListener): void {
    const principal = session.principal;
    if (principal === undefined || !this.perPrincipal(session.scope)) return;
    const entry = this.principalEntry(principal);
    if (entry.sessions.has(session.id)) return;
    clearTimeout(entry.idle);
    entry.idle = undefined;
    entry.sessions.set(session.id, entry.pool.attach(session.scope, session.transport, listener));
    void entry.pool.start();
  }

  private detachPrincipal(principal: string, sessionId: string): void {
    const entry = this.principalEntries.get(principal);
    const own = entry?.sessions.get(sessionId);
    if (!entry || !own) return;
    entry.sessions.delete(sessionId);
    own.release();
    if (entry.sessions.size === 0) this.idleLater(entry);
  }

  /** Dispose `entry` once it has had no session for the idle timeout. */
  private idleLater(entry: PrincipalEntry): void {
    clearTimeout(entry.idle);
    // Unref'd: a gateway shutting down disposes it itself.
    entry.idle = setTimeout(() => {
      if (entry.sessions.size === 0 && this.principalEntries.get(entry.principal) === entry) this.disposePrincipal(entry);
    }, this.options.principals!.idleTimeoutMs).unref();
  }

  private disposePrincipal(entry: PrincipalEntry): void {
    this.principalEntries.delete(entry.principal);
    clearTimeout(entry.idle);
    entry.pool.close();
    const done = entry.pool.controller.dispose().catch((err: unknown) => this.options.onError?.(`stopping a principal's controller: ${describeError(err)}`));
    this.disposing.add(done);
    void done.then(() => this.disposing.delete(done));
  }

  /** After a reconcile: attach sessions that now name a per-principal server to their principal's controller. */
  private syncPrincipals(): void {
    if (this.closed) return;
    for (const { session, listener } of [...this.sessions.values()]) if (session.principal !== undefined) this.attachPrincipal(session, listener);
  }

  /** Dispose every principal's controller ({@link close} starts it); resolves once they are stopped. */
  async closePrincipals(): Promise<void> {
    for (const entry of [...this.principalEntries.values()]) this.disposePrincipal(entry);
    await Promise.all([...this.disposing]);
  }

  /**
   * Wait until the servers a session's attach started have connected (or
   * failed, or started slowly), at most 10 s, after the pool started: so a
   * session's first `tools/list` has their tools. Never rejects.
   */
  async ready(sessionId: string): Promise<void> {
    await this.start();
    const entry = this.sessions.get(sessionId);
    if (!entry) return;
    await this.admitted;
    entry.ready ??= this.untilStarted(entry.session.scope);
    await entry.ready;
    const own = this.principalOf(sessionId);
    if (own) await own.pool.ready(own.session.id);
  }

  private untilStarted(scope: SessionScope): Promise<void> {
    // `connecting` is where a hold sends a server; past its start timeout it counts as settled, like for start().
    const starting = (): boolean =>
      this.controller.status().some((r) => r.state === 'connecting' && r.reason !== 'starting_slowly' && inScope(scope, r.name));
    if (!starting()) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        off();
        resolve();
      };
      // Unref'd: a gateway shutting down must not wait for it.
      const timer = setTimeout(done, SESSION_READY_TIMEOUT_MS).unref();
      const off = this.controller.on('server-state', () => {
        if (!starting()) done();
      });
    });
  }

  /** Names a scope covers now: its own, or every server known (an unscoped session's). */
  private namesOf(scope: SessionScope): Iterable<string> {
    return scope ?? [...this.held, ...this.controller.status().map((r) => r.name)];
  }

  /** Hold what some session's scope includes and release the rest, among `names`. */
  private syncHolds(names: Iterable<string>): void {
    if (this.closed) return;
    const toHold: string[] = [];
    for (const name of new Set(names)) {
      const wanted = [...this.sessions.values()].some((e) => inScope(e.session.scope, name));
      if (wanted === this.held.has(name)) continue;
      if (wanted) {
        this.held.add(name);
        toHold.push(name);
      } else {
        this.held.delete(name);
        if (this.holding.delete(name)) this.guard('releasing', name, () => this.controller.release(name));
      }
    }
    if (toHold.length === 0) return;
    const admit = this.options.admit;
    if (!admit) return this.holdNow(toHold);
    const previous = this.admitted;
    this.admitted = admit(toHold)
      .catch((err: unknown) => this.options.onError?.(`the gate before starting ${toHold.join(', ')}: ${describeError(err)}`))
      .then(() => previous)
      .then(() => this.holdNow(toHold));
  }

  /** Where servers run: {@link GatewayPoolOptions.placement}. */
  get placement(): ServerPlacement | undefined {
    return this.options.placement;
  }

  /** Whether a session here needs `server` now. */
  wants(server: string): boolean {
    return this.held.has(server);
  }

  /**
   * The placement of `server` changed: hold it if it may run here now and a
   * session needs it; stop holding it when it may not (the placement has
   * stopped it already).
   */
  placementChanged(server: string): void {
    if (this.closed) return;
    if (this.options.placement?.local(server) === false) {
      this.holding.delete(server);
      return;
    }
    this.holdNow([server]);
  }

  /** Ask the controller to hold those of `names` some session still needs (and that may run here). */
  private holdNow(names: string[]): void {
    for (const name of names) {
      if (this.closed || !this.held.has(name) || this.holding.has(name)) continue;
      if (this.options.placement?.local(name) === false) continue;
      this.holding.add(name);
      this.guard('holding', name, () => this.controller.hold(name));
    }
  }

  private guard(what: string, name: string, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.options.onError?.(`${what} "${name}": ${describeError(err)}`);
    }
  }

  /**
   * Record a session's call to `server` while it runs (returns the end
   * function), so an elicitation or sampling request the server sends
   * meanwhile goes to the client that is waiting for it.
   */
  trackCall(sessionId: string, server: string, requestId: RequestId): () => void {
    const call = { sessionId, server, requestId };
    this.calls.push(call);
    return () => {
      const at = this.calls.indexOf(call);
      if (at >= 0) this.calls.splice(at, 1);
    };
  }

  /**
   * Forward a managed server's `elicitation/create` to a client: the session
   * with the latest call in flight to that server, else the latest session
   * whose scope has it; the first whose client supports elicitation answers.
   * With none, the answer is `decline`.
   */
  elicit(server: string, request: ElicitationRequest, options: { signal: AbortSignal }): Promise<ElicitationAnswer> {
    const id = request.mode === 'url' ? (request as { elicitationId?: unknown }).elicitationId : undefined;
    if (typeof id !== 'string') return this.forward(server, options, (l, o) => l.elicit?.(request, o)) ?? Promise.resolve({ action: 'decline' });
    // A URL elicitation's completion comes later, as a notification: remember who was asked.
    return (
      this.forward(server, options, (l, o) => {
        const answer = l.elicit?.(request, o);
        if (answer) this.rememberUrlElicitation(`${server}\0${id}`, l, o.relatedRequestId);
        return answer;
      }) ?? Promise.resolve({ action: 'decline' })
    );
  }

  private rememberUrlElicitation(key: string, listener: SessionListener, requestId: RequestId | undefined): void {
    this.urlElicitations.delete(key);
    this.urlElicitations.set(key, { listener, requestId });
    if (this.urlElicitations.size > URL_ELICITATIONS_KEPT) this.urlElicitations.delete(this.urlElicitations.keys().next().value!);
  }

  /**
   * `server` says its URL elicitation `elicitationId` is complete: tell the
   * client that was asked, if its session is still here (on the call's
   * stream while the call runs). Once per elicitation.
   */
  elicitationComplete(server: string, elicitationId: string): void {
    const key = `${server}\0${elicitationId}`;
    const asked = this.urlElicitations.get(key);
    if (!asked) return;
    this.urlElicitations.delete(key);
    if (![...this.sessions.values()].some((e) => e.listener === asked.listener)) return;
    const running = asked.requestId !== undefined && this.calls.some((c) => c.server === server && c.requestId === asked.requestId);
    try {
      asked.listener.elicitationComplete?.(elicitationId, running ? { relatedRequestId: asked.requestId } : {});
    } catch (err) {
      this.options.onError?.(`telling a client elicitation ${elicitationId} of "${server}" is complete: ${describeError(err)}`);
    }
  }

  /** Forward `sampling/createMessage` like {@link elicit}; with no client that samples, an MCP error says so. */
  sample(server: string, request: CreateMessageRequest['params'], options: { signal: AbortSignal }): Promise<CreateMessageResult> {
    return (
      this.forward(server, options, (l, o) => l.sample?.(request, o)) ??
      Promise.reject(new McpError(McpErrorCode.InvalidRequest, `no client connected to the mcp-reconciler gateway for "${server}" supports sampling`))
    );
  }

  private forward<T>(server: string, options: { signal: AbortSignal }, ask: (l: SessionListener, o: ForwardOptions) => Promise<T> | undefined): Promise<T> | undefined {
    for (const call of [...this.calls].reverse()) {
      const entry = call.server === server ? this.sessions.get(call.sessionId) : undefined;
      const answer = entry ? ask(entry.listener, { signal: options.signal, relatedRequestId: call.requestId }) : undefined;
      if (answer) return answer;
    }
    for (const entry of [...this.sessions.values()].reverse()) {
      const answer = inScope(entry.session.scope, server) ? ask(entry.listener, { signal: options.signal }) : undefined;
      if (answer) return answer;
    }
    return undefined;
  }

  /** The sessions attached now. */
  list(): PoolSession[] {
    return [...this.sessions.values()].map((e) => e.session);
  }

  /**
   * How many sessions use each live server (reference counts; an unscoped
   * session counts for every server). The processes themselves are one per
   * server whatever these counts are; a server whose count is 0 is stopped
   * after its idle timeout.
   */
  usage(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const row of this.controller.status()) {
      if (row.state === 'removed') continue;
      setOwn(out, row.name, [...this.sessions.values()].filter((e) => inScope(e.session.scope, row.name)).length);
    }
    return out;
  }

  /**
   * Stop fanning out, detach every session and release their servers; the
   * controller is the owner's to dispose.
   */
  close(): void {
    this.closed = true;
    void this.closePrincipals();
    for (const off of this.unsubscribe.splice(0)) off();
    this.sessions.clear();
    this.urlElicitations.clear();
    for (const name of this.holding) this.controller.release(name);
    this.held.clear();
    this.holding.clear();
  }

  private fanOut(server: string, what: 'tools' | 'prompts'): void {
    for (const { session, listener } of [...this.sessions.values()]) {
      if (!inScope(session.scope, server)) continue;
      try {
        if (what === 'tools') listener.toolsChanged();
        else listener.promptsChanged();
      } catch (err) {
        this.options.onError?.(`notifying session ${session.id}: ${describeError(err)}`);
      }
    }
  }

  /**
   * Tell sessions about each server whose prompt listing differs from the
   * last pass: of `servers` only (those whose registry entry changed since
   * the last `client-update`), or of every server.
   */
  private checkPrompts(servers?: readonly string[]): void {
    if (servers?.length === 0) return;
    const only = servers ? new Set(servers) : undefined;
    const byServer = new Map<string, RegisteredPrompt[]>();
    for (const p of this.controller.prompts()) {
      if (only && !only.has(p.server)) continue;
      const list = byServer.get(p.server) ?? [];
      list.push(p);
      byServer.set(p.server, list);
    }
    const changed = new Set<string>();
    const compare = (server: string): void => {
      const prompts = byServer.get(server);
      const key = prompts ? JSON.stringify(prompts.map((p) => [p.name, p.description, p.arguments])) : undefined;
      if (this.promptKeys.get(server) === key) return;
      if (key === undefined) this.promptKeys.delete(server);
      else this.promptKeys.set(server, key);
      changed.add(server);
    };
    if (only) for (const server of only) compare(server);
    else for (const server of new Set([...byServer.keys(), ...this.promptKeys.keys()])) compare(server);
    for (const server of changed) this.fanOut(server, 'prompts');
  }
}
