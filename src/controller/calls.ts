import type { AnyActorRef } from 'xstate';
import type { CallToolResult, GetPromptResult, ReadResourceResult } from '@modelcontextprotocol/sdk/types.js';
import { isInTransit, stateNameOf } from '../../machines/reason.js';
import type { DesiredServer } from '../../machines/types.js';
import type { ResourceUpdateListener } from '../connection/subscriptions.js';
import { ErrorCode, McpReconcilerError } from '../errors.js';
import { enforceOutputContract } from '../registry/output-contract.js';
import type { RegisteredTool } from '../registry/registry.js';
import { templateMatches, type RegisteredResource, type RegisteredResourceTemplate, type ServerView } from '../registry/resources.js';
import type { ConnectionRecord, Connections } from './connections.js';
import type { Workspace } from './workspace.js';
import { describeReason, fixFor } from './messages.js';
import type { StatusView } from './status.js';
import type { CallToolOptions, ResourceOptions, ServerStateName } from './types.js';

/**
 * How long a connected server still counts a call after its last call
 * ended. A call that starts meanwhile takes the ended one's place, so a run
 * of calls tells the server's machine CALL_STARTED once and CALL_ENDED once
 * instead of moving it `idle` ⇄ `busy` at every call (two machine steps, the
 * largest part of a call's cost in the host); the idle timer (SPEC §12)
 * starts this much later.
 */
export const CALL_LINGER_MS = 500;

/** A server's deferred CALL_ENDED (see {@link CALL_LINGER_MS}). */
interface Linger {
  timer: NodeJS.Timeout;
  /** The connection generation the ended call ran on. */
  generation: number;
  /** The CALL_ENDED is still owed (a call that started since took it over when false). */
  armed: boolean;
}

function generationOf(ref: AnyActorRef): number {
  return (ref.getSnapshot().context as { generation: number }).generation;
}

/** What a request is about, for its errors: `Tool mcp__a__b`, `Resource file:///x`. */
interface Subject {
  label: string;
  details: Record<string, unknown>;
  /** The whole sentence for a server that cannot take it now (reason and fix). */
  unavailable(): string;
}

/** The servers a lookup may use; `undefined` for all. */
function viewOf(servers: Iterable<string> | undefined): ServerView {
  if (servers === undefined) return undefined;
  const set = new Set(servers);
  return (server) => set.has(server);
}

/** Whether a listing (a server's cached one, say) has `uri`, as a resource or through a template. */
function lists(listing: { resources?: { uri: string }[]; resourceTemplates?: { uriTemplate: string }[] }, uri: string): boolean {
  if (listing.resources?.some((r) => r.uri === uri)) return true;
  return (listing.resourceTemplates ?? []).some((t) => templateMatches(t.uriTemplate, uri));
}

/**
 * Tool calls, prompt gets and resource reads (SPEC §6, SPEC §13): sent to
 * the server's current connection, or, for a `dormant` or `connecting`
 * server serving cached entries, after waiting for it to connect. Each is
 * counted by the server's machine (`CALL_STARTED` / `CALL_ENDED`; a run of
 * calls on a connected server once, see {@link CALL_LINGER_MS}) so an idle
 * timeout never stops a server mid-call; one cut off by a lost connection
 * fails with `tool_unavailable` saying so. Resource subscriptions are kept by
 * `Connections.subscriptions`, which keeps a subscribed server running.
 */
export class Calls {
  private readonly lingering = new Map<AnyActorRef, Linger>();

  constructor(
    private readonly ws: Workspace,
    private readonly connections: Connections,
    private readonly view: StatusView,
    /** The controller's connect timeout, for a call that waits for a connection and sets no timeout of its own. */
    private readonly connectTimeoutMs: number,
  ) {}

  /** `McpController.callTool`, once the controller is known to be live. */
  async callTool(name: string, args: Record<string, unknown> = {}, opts: CallToolOptions = {}): Promise<CallToolResult> {
    const cached = this.ws.registry.getTool(name);
    if (!cached) {
      throw new McpReconcilerError(ErrorCode.UnknownTool, this.view.toolUnavailableMessage(name), {
        hint: 'list the registered tools with `mcp-reconciler tools`',
        details: { tool: name },
      });
    }
    const server = cached.server;
    const subject: Subject = { label: `Tool ${name}`, details: { tool: name }, unavailable: () => this.view.toolUnavailableMessage(name) };
    return this.useServer(subject, server, opts, async (rec, timeLeft) => {
      // After a wait the live listing counts, not the cached one it was found in.
      const tool = this.ws.registry.getTool(name);
      if (!tool || tool.server !== server) {
        throw new McpReconcilerError(ErrorCode.UnknownTool, `Tool ${name} is no longer provided: MCP server "${server}" connected and its live tool list does not have it (the cached list was stale). ${this.view.toolUnavailableMessage(name)}`, {
          details: { tool: name, server, stale: true },
        });
      }
      return this.sendCall(tool, rec, args, { ...opts, ...(timeLeft === undefined ? {} : { timeoutMs: timeLeft }) });
    });
  }

  private async sendCall(tool: RegisteredTool, rec: ConnectionRecord, args: Record<string, unknown>, opts: CallToolOptions): Promise<CallToolResult> {
    return enforceOutputContract(tool, await rec.conn.callTool(tool.rawName, args, opts));
  }

  /** `McpController.getPrompt`, once the controller is known to be live. */
  async getPrompt(name: string, args: Record<string, string> = {}, opts: CallToolOptions = {}): Promise<GetPromptResult> {
    const cached = this.ws.registry.getPrompt(name);
    if (!cached) {
      const server = this.view.serverOfTool(name);
      const reason = server ? this.view.unavailableReason(server) : undefined;
      throw new McpReconcilerError(
        ErrorCode.UnknownTool,
        server && reason ? this.unavailableMessage(`Prompt ${name}`, server) : `Prompt ${name} is not provided by any connected MCP server.`,
        { details: { prompt: name, ...(server ? { server } : {}) } },
      );
    }
    const server = cached.server;
    const subject: Subject = { label: `Prompt ${name}`, details: { prompt: name }, unavailable: () => this.unavailableMessage(`Prompt ${name}`, server) };
    return this.useServer(subject, server, opts, (rec, timeout) => {
      const prompt = this.ws.registry.getPrompt(name);
      if (!prompt || prompt.server !== server) {
        throw new McpReconcilerError(ErrorCode.UnknownTool, `Prompt ${name} is no longer provided: MCP server "${server}" connected and its live prompt list does not have it (the cached list was stale).`, {
          details: { prompt: name, server, stale: true },
        });
      }
      return rec.conn.client.getPrompt({ name: prompt.rawName, arguments: args }, { signal: opts.signal, timeout });
    });
  }

  /** `McpController.resources`: one entry per URI, its owner's among `servers`. */
  resources(servers?: Iterable<string>): RegisteredResource[] {
    return this.ws.registry.resources.resources(viewOf(servers));
  }

  /** `McpController.resourceTemplates`. */
  resourceTemplates(servers?: Iterable<string>): RegisteredResourceTemplate[] {
    return this.ws.registry.resources.resourceTemplates(viewOf(servers));
  }

  /** `McpController.resourceOwner`. */
  ownerOfResource(uri: string, servers?: Iterable<string>): string | undefined {
    return this.ws.registry.resources.ownerOf(uri, viewOf(servers))?.server;
  }

  /** `McpController.readResource`, once the controller is known to be live. */
  async readResource(uri: string, opts: ResourceOptions = {}): Promise<ReadResourceResult> {
    const server = this.resourceOwner(uri, opts.servers);
    return this.useServer(this.resourceSubject(uri, server), server, opts, (rec, timeoutMs) => rec.conn.readResource(uri, { signal: opts.signal, timeoutMs }));
  }

  /** `McpController.subscribeResource`, once the controller is known to be live. */
  async subscribeResource(uri: string, onUpdated: ResourceUpdateListener, opts: ResourceOptions = {}): Promise<() => Promise<void>> {
    const server = this.resourceOwner(uri, opts.servers);
    return this.useServer(this.resourceSubject(uri, server), server, opts, (rec, timeoutMs) => {
      if (!rec.conn.canSubscribe) {
        throw new McpReconcilerError(ErrorCode.ToolUnavailable, `Resource ${uri} cannot be subscribed to: MCP server "${server}" does not offer subscriptions (its resources capability has no "subscribe").`, {
          hint: 'read the resource again when you need it, or watch for resources-changed',
          details: { resource: uri, server, subscribe: false },
        });
      }
      return this.connections.subscriptions.add(server, uri, onUpdated, rec.conn, { signal: opts.signal, timeoutMs });
    });
  }

  private resourceSubject(uri: string, server: string): Subject {
    return { label: `Resource ${uri}`, details: { resource: uri }, unavailable: () => this.unavailableMessage(`Resource ${uri}`, server) };
  }

  /**
   * The server that answers for `uri` among `servers` (see ResourceRegistry).
   * When none lists it, the error says which servers in view are
   * unavailable and why: one whose cached listing has the URI (a pending
   * approval, say) is named as its server, with the fix.
   */
  private resourceOwner(uri: string, servers: Iterable<string> | undefined): string {
    const view = viewOf(servers);
    const owner = this.ws.registry.resources.ownerOf(uri, view);
    if (owner) return owner.server;
    const down = [...this.ws.servers().keys()]
      .filter((s) => (!view || view(s)) && this.view.unavailableReason(s) !== undefined)
      .sort();
    const known = down.find((s) => {
      const listing = this.connections.cachedListingOf(s);
      return listing !== undefined && lists(listing, uri);
    });
    if (known) {
      throw new McpReconcilerError(ErrorCode.ToolUnavailable, this.unavailableMessage(`Resource ${uri}`, known), {
        details: { resource: uri, server: known, reason: this.view.unavailableReason(known) },
      });
    }
    const why = down.map((s) => {
      const reason = this.view.unavailableReason(s)!;
      const detail = this.view.detailOf(s);
      return `"${s}" ${describeReason(reason, detail)} (to fix: ${fixFor(reason, s, undefined, detail)})`;
    });
    throw new McpReconcilerError(
      ErrorCode.UnknownTool,
      `Resource ${uri} is not provided by any available MCP server.` + (why.length > 0 ? ` Servers that are not available and may provide it: ${why.join('; ')}.` : ' List the resources with resources().'),
      { details: { resource: uri, unavailable: down } },
    );
  }

  /** `label` cannot go to `server` now: the reason and the fix, or "try again" while it is on its way. */
  private unavailableMessage(label: string, server: string): string {
    const reason = this.view.unavailableReason(server);
    if (!reason) return `${label} is temporarily unavailable: MCP server "${server}" is ${this.view.stateOf(server)}. Try again in a moment.`;
    // For a failure the cause is the most useful part of the answer.
    const cause = reason === 'failed' || reason === 'needs_auth' || reason === 'config_invalid' ? this.view.lastErrorOf(server) : undefined;
    const detail = this.view.detailOf(server);
    return `${label} is unavailable: MCP server "${server}" ${describeReason(reason, detail)}${cause ? ` (last error: ${cause})` : ''}. To fix: ${fixFor(reason, server, undefined, detail)}.`;
  }

  /**
   * Run `use` on `server`'s connection, counted as a call. A `dormant` or
   * `connecting` server is woken and waited for (see {@link whenConnected});
   * a connected one is used at once; any other state fails with
   * `tool_unavailable`. A connection lost under `use` becomes
   * `tool_unavailable` saying so.
   */
  private async useServer<T>(subject: Subject, server: string, opts: { signal?: AbortSignal; timeoutMs?: number }, use: (rec: ConnectionRecord, timeLeft: number | undefined) => Promise<T>): Promise<T> {
    const ref = this.ws.server(server);
    const state = ref ? stateNameOf(ref.getSnapshot()) : 'removed';
    if (ref && (state === 'dormant' || state === 'connecting')) return this.whenConnected(subject, server, ref, opts, use);
    const rec = this.connections.get(server);
    if (state !== 'connected' || !rec || !ref) {
      const reconnecting = isInTransit(state);
      throw new McpReconcilerError(
        ErrorCode.ToolUnavailable,
        reconnecting ? `${subject.label} is temporarily unavailable: MCP server "${server}" is reconnecting. Try again in a moment.` : subject.unavailable(),
        { details: { ...subject.details, server, state, reconnecting } },
      );
    }
    this.connectedCallStarted(ref);
    try {
      return await this.guardLoss(subject, server, rec, () => use(rec, opts.timeoutMs));
    } finally {
      this.connectedCallEnded(ref);
    }
  }

  private callEnded(ref: AnyActorRef): void {
    if (ref.getSnapshot().status === 'active') ref.send({ type: 'CALL_ENDED' });
  }

  /** A call on a connected server starts: it takes over a lingering ended call's count, else the machine counts it. */
  private connectedCallStarted(ref: AnyActorRef): void {
    const linger = this.lingering.get(ref);
    if (linger?.armed) {
      linger.armed = false;
      // Same generation: no admission (which zeroes the count) and no reconnect came between, so the count still holds it.
      if (linger.generation === generationOf(ref)) return;
      this.callEnded(ref);
    }
    ref.send({ type: 'CALL_STARTED' });
  }

  /** A call on a connected server ended: its CALL_ENDED waits {@link CALL_LINGER_MS}, one per server at a time. */
  private connectedCallEnded(ref: AnyActorRef): void {
    if (ref.getSnapshot().status !== 'active') return;
    const linger = this.lingering.get(ref);
    if (linger?.armed) return this.callEnded(ref);
    if (linger) {
      linger.armed = true;
      linger.generation = generationOf(ref);
      linger.timer.refresh();
      return;
    }
    const next: Linger = {
      timer: setTimeout(() => {
        this.lingering.delete(ref);
        if (next.armed) this.callEnded(ref);
      }, CALL_LINGER_MS),
      generation: generationOf(ref),
      armed: true,
    };
    // A host that exits does not wait for it; a stopped actor is not told (see callEnded).
    next.timer.unref();
    this.lingering.set(ref, next);
  }

  /**
   * Wake `server` (CALL_STARTED, counted until `use` settles), wait for it to
   * be connected, then run `use` with its connection and what is left of the
   * caller's timeout. Without a timeout the wait is bounded by the connect
   * timeout plus a moment, so the machine's own failure wins the race. The
   * wait ends early, with `tool_unavailable`, when the server lands anywhere
   * else (a failed attempt goes to `reconnecting`: the call does not ride
   * the backoff).
   */
  private async whenConnected<T>(
    subject: Subject,
    server: string,
    ref: AnyActorRef,
    opts: { signal?: AbortSignal; timeoutMs?: number },
    use: (rec: ConnectionRecord, timeLeft: number | undefined) => Promise<T>,
  ): Promise<T> {
    const t0 = Date.now();
    const entry = (ref.getSnapshot().context as { entry: DesiredServer }).entry;
    const waitMs = opts.timeoutMs ?? (entry.config.timeout ?? this.connectTimeoutMs) + 1_000;
    ref.send({ type: 'CALL_STARTED' });
    try {
      const rec = await this.awaitConnected(subject, server, ref, waitMs, opts.signal);
      const timeLeft = opts.timeoutMs === undefined ? undefined : Math.max(1, opts.timeoutMs - (Date.now() - t0));
      return await this.guardLoss(subject, server, rec, () => use(rec, timeLeft));
    } finally {
      this.callEnded(ref);
    }
  }

  /** Resolve with the connection once `server` is connected; reject with `tool_unavailable` if it goes elsewhere or `waitMs` passes. */
  private awaitConnected(subject: Subject, server: string, ref: AnyActorRef, waitMs: number, signal?: AbortSignal): Promise<ConnectionRecord> {
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
        const reason = this.view.unavailableReason(server);
        const cause = this.view.lastErrorOf(server);
        return new McpReconcilerError(
          ErrorCode.ToolUnavailable,
          `${subject.label} is unavailable: MCP server "${server}" ${why}${cause ? ` (last error: ${cause})` : ''}.` +
            (reason ? ` To fix: ${fixFor(reason, server, undefined, this.view.detailOf(server))}.` : ' Try again in a moment.'),
          { details: { ...subject.details, server, state, reason, reconnecting: isInTransit(state) } },
        );
      };
      const check = (): void => {
        const snap = ref.getSnapshot();
        const state: ServerStateName = snap.status === 'active' ? stateNameOf(snap) : 'removed';
        const rec = this.connections.get(server);
        if (state === 'connected' && rec) return finish(() => resolve(rec));
        if (state === 'connecting' || state === 'dormant') return;
        const reason = this.view.unavailableReason(server);
        finish(() => reject(unavailable(reason ? describeReason(reason, this.view.detailOf(server)) : `is ${state}`, state)));
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
   * Run `send`; a failure because its connection went away (crash, lost
   * session, removal) becomes a `tool_unavailable` error saying so — the
   * SDK's own error is a bare "Connection closed". Failures while the
   * connection is still current (the caller's timeouts and aborts, the
   * server's own errors) pass through unchanged.
   */
  private async guardLoss<T>(subject: Subject, server: string, rec: ConnectionRecord, send: () => Promise<T>): Promise<T> {
    try {
      return await send();
    } catch (err) {
      if (!rec.lost && this.connections.get(server) === rec) throw err;
      const ref = this.ws.server(server);
      const state = ref ? stateNameOf(ref.getSnapshot()) : 'removed';
      const reconnecting = isInTransit(state) || state === 'connected';
      const what = `${subject.label} did not complete: MCP server "${server}" lost its connection (${rec.lost?.error ?? 'connection closed'})`;
      throw new McpReconcilerError(
        ErrorCode.ToolUnavailable,
        reconnecting ? `${what} and is reconnecting. Try again in a moment.` : `${what}. ${subject.unavailable()}`,
        { details: { ...subject.details, server, state, reconnecting, lost: true }, cause: err },
      );
    }
  }
}
