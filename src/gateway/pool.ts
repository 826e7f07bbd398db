/**
 * The gateway's shared server pool: one controller (so one process or
 * connection per managed server, whatever the number of client sessions),
 * the sessions attached to it with their scopes, and the fan-out of registry
 * changes to the sessions whose scope they touch.
 *
 * Admission stays the controller's alone: approvals and gating are applied
 * before any server starts, for every session alike; a session's scope only
 * narrows what it sees.
 */
import { randomUUID } from 'node:crypto';
import { ErrorCode as McpErrorCode, McpError, type CreateMessageRequest, type CreateMessageResult, type RequestId } from '@modelcontextprotocol/sdk/types.js';
import type { McpController } from '../controller.js';
import type { ElicitationAnswer, ElicitationRequest } from '../connection/client-capabilities.js';
import type { RegisteredPrompt } from '../registry/registry.js';
import { describeError } from '../errors.js';
import { inScope, type SessionScope } from './scope.js';

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
}

/** One client session attached to the pool. */
export interface PoolSession {
  readonly id: string;
  readonly scope: SessionScope;
  /** `stdio` or `http`, for status and logs. */
  readonly transport: string;
  /** Detach from the pool; idempotent. */
  release(): void;
}

/** Options of {@link GatewayPool}. */
export interface GatewayPoolOptions {
  /** Where problems of the pool itself are reported (default: nowhere). */
  onError?: (message: string) => void;
}

interface SessionEntry {
  session: PoolSession;
  listener: SessionListener;
}

/**
 * Sessions sharing one {@link McpController}. Create it with the controller
 * (started or not) and call {@link start} once the listeners are bound (so
 * a port that cannot be bound starts no server); session requests call it
 * too, so a pool nobody started starts with its first request.
 */
export class GatewayPool {
  private starting: Promise<void> | undefined;
  private readonly sessions = new Map<string, SessionEntry>();
  private readonly unsubscribe: Array<() => void> = [];
  private promptKeys = new Map<string, string>();
  /** Calls in flight, oldest first: who to ask when a server elicits or samples during a call. */
  private readonly calls: Array<{ sessionId: string; server: string; requestId: RequestId }> = [];
  private closed = false;

  constructor(
    readonly controller: McpController,
    private readonly options: GatewayPoolOptions = {},
  ) {
    this.unsubscribe.push(
      controller.on('tools-changed', (e) => this.fanOut(e.server, 'tools')),
      // Prompts have no event of their own: every registry change also ends in a
      // client-update, and comparing the prompt listing per server finds theirs.
      controller.on('client-update', () => this.checkPrompts()),
    );
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
  attach(scope: SessionScope, transport: string, listener: SessionListener): PoolSession {
    const id = randomUUID();
    const session: PoolSession = {
      id,
      scope,
      transport,
      release: () => {
        this.sessions.delete(id);
      },
    };
    if (!this.closed) this.sessions.set(id, { session, listener });
    return session;
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
    return this.forward(server, options, (l, o) => l.elicit?.(request, o)) ?? Promise.resolve({ action: 'decline' });
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
   * server whatever these counts are.
   */
  usage(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const row of this.controller.status()) {
      if (row.state === 'removed') continue;
      out[row.name] = [...this.sessions.values()].filter((e) => inScope(e.session.scope, row.name)).length;
    }
    return out;
  }

  /** Stop fanning out and detach every session; the controller is the owner's to dispose. */
  close(): void {
    this.closed = true;
    for (const off of this.unsubscribe.splice(0)) off();
    this.sessions.clear();
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

  private checkPrompts(): void {
    const byServer = new Map<string, RegisteredPrompt[]>();
    for (const p of this.controller.prompts()) {
      const list = byServer.get(p.server) ?? [];
      list.push(p);
      byServer.set(p.server, list);
    }
    const next = new Map<string, string>();
    for (const [server, prompts] of byServer) {
      next.set(server, JSON.stringify(prompts.map((p) => [p.name, p.description, p.arguments])));
    }
    const changed = new Set<string>();
    for (const [server, key] of next) if (this.promptKeys.get(server) !== key) changed.add(server);
    for (const server of this.promptKeys.keys()) if (!next.has(server)) changed.add(server);
    this.promptKeys = next;
    for (const server of changed) this.fanOut(server, 'prompts');
  }
}
