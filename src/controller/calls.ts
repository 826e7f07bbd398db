import type { AnyActorRef } from 'xstate';
import type { CallToolResult, GetPromptResult } from '@modelcontextprotocol/sdk/types.js';
import { isInTransit, stateNameOf } from '../../machines/reason.js';
import type { DesiredServer } from '../../machines/types.js';
import { ErrorCode, McpReconcilerError } from '../errors.js';
import { enforceOutputContract } from '../registry/output-contract.js';
import type { RegisteredTool, ToolRegistry } from '../registry/registry.js';
import type { ConnectionRecord, Connections } from './connections.js';
import { describeReason, fixFor } from './messages.js';
import type { StatusView } from './status.js';
import type { CallToolOptions, ServerStateName } from './types.js';

/** What tool calls need from the controller. */
export interface CallsDeps {
  registry: ToolRegistry;
  connections: Connections;
  view: StatusView;
  /** The controller's connect timeout, for a call that waits for a connection and sets no timeout of its own. */
  connectTimeoutMs: number;
}

/**
 * Tool calls and prompt gets (SPEC §6): sent to the server's current
 * connection, or, for a `dormant` or `connecting` server serving cached
 * tools, after waiting for it to connect. Each call is counted by the
 * server's machine (`CALL_STARTED` / `CALL_ENDED`) so an idle timeout never
 * stops a server mid-call; a call cut off by a lost connection fails with
 * `tool_unavailable` saying so.
 */
export class Calls {
  constructor(private readonly deps: CallsDeps) {}

  /** `McpController.callTool`, once the controller is known to be live. */
  async callTool(name: string, args: Record<string, unknown> = {}, opts: CallToolOptions = {}): Promise<CallToolResult> {
    const tool = this.deps.registry.getTool(name);
    if (!tool) {
      throw new McpReconcilerError(ErrorCode.UnknownTool, this.deps.view.toolUnavailableMessage(name), {
        hint: 'list the registered tools with `mcp-reconciler tools`',
        details: { tool: name },
      });
    }
    const ref = this.deps.view.serverActors()[tool.server];
    const state = ref ? stateNameOf(ref.getSnapshot()) : 'removed';
    if (ref && (state === 'dormant' || state === 'connecting')) return this.callWhenConnected(name, tool, ref, args, opts);
    const rec = this.deps.connections.get(tool.server);
    if (state !== 'connected' || !rec) {
      const reconnecting = isInTransit(state);
      throw new McpReconcilerError(
        ErrorCode.ToolUnavailable,
        reconnecting
          ? `Tool ${name} is temporarily unavailable: MCP server "${tool.server}" is reconnecting. Try again in a moment.`
          : this.deps.view.toolUnavailableMessage(name),
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
    return this.whenConnected(name, server, ref, opts, (rec, timeLeft) => {
      const tool = this.deps.registry.getTool(name);
      if (!tool || tool.server !== server) {
        throw new McpReconcilerError(ErrorCode.UnknownTool, `Tool ${name} is no longer provided: MCP server "${server}" connected and its live tool list does not have it (the cached list was stale). ${this.deps.view.toolUnavailableMessage(name)}`, {
          details: { tool: name, server, stale: true },
        });
      }
      return this.sendCall(name, tool, rec, args, { ...opts, ...(timeLeft === undefined ? {} : { timeoutMs: timeLeft }) });
    });
  }

  /**
   * Wake `server` (CALL_STARTED, counted until `use` settles), wait for it to
   * be connected, then run `use` with its connection and what is left of the
   * caller's timeout. Without a timeout the wait is bounded by the connect
   * timeout plus a moment, so the machine's own failure wins the race.
   */
  private async whenConnected<T>(
    name: string,
    server: string,
    ref: AnyActorRef,
    opts: CallToolOptions,
    use: (rec: ConnectionRecord, timeLeft: number | undefined) => Promise<T>,
  ): Promise<T> {
    const t0 = Date.now();
    const entry = (ref.getSnapshot().context as { entry: DesiredServer }).entry;
    const waitMs = opts.timeoutMs ?? (entry.config.timeout ?? this.deps.connectTimeoutMs) + 1_000;
    ref.send({ type: 'CALL_STARTED' });
    try {
      const rec = await this.awaitConnected(name, server, ref, waitMs, opts.signal);
      return await use(rec, opts.timeoutMs === undefined ? undefined : Math.max(1, opts.timeoutMs - (Date.now() - t0)));
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
        const reason = this.deps.view.unavailableReason(server);
        const cause = this.deps.view.lastErrorOf(server);
        return new McpReconcilerError(
          ErrorCode.ToolUnavailable,
          `Tool ${toolName} is unavailable: MCP server "${server}" ${why}${cause ? ` (last error: ${cause})` : ''}.` +
            (reason ? ` To fix: ${fixFor(reason, server)}.` : ' Try again in a moment.'),
          { details: { tool: toolName, server, state, reason, reconnecting: isInTransit(state) } },
        );
      };
      const check = (): void => {
        const snap = ref.getSnapshot();
        const state: ServerStateName = snap.status === 'active' ? stateNameOf(snap) : 'removed';
        const rec = this.deps.connections.get(server);
        if (state === 'connected' && rec) return finish(() => resolve(rec));
        if (state === 'connecting' || state === 'dormant') return;
        const reason = this.deps.view.unavailableReason(server);
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

  /** `McpController.getPrompt`, once the controller is known to be live. */
  async getPrompt(name: string, args: Record<string, string> = {}, opts: CallToolOptions = {}): Promise<GetPromptResult> {
    const prompt = this.deps.registry.getPrompt(name);
    const ref = prompt ? this.deps.view.serverActors()[prompt.server] : undefined;
    const state = ref ? stateNameOf(ref.getSnapshot()) : undefined;
    // A cached prompt of a dormant (or still connecting) server wakes it, like a tool call.
    if (prompt && ref && (state === 'dormant' || state === 'connecting')) return this.promptWhenConnected(name, prompt.server, ref, args, opts);
    const rec = prompt ? this.deps.connections.get(prompt.server) : undefined;
    if (!prompt || !rec || !ref || state !== 'connected') {
      const server = prompt?.server ?? this.deps.view.serverOfTool(name);
      const reason = server ? this.deps.view.unavailableReason(server) : undefined;
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

  private async promptWhenConnected(
    name: string,
    server: string,
    ref: AnyActorRef,
    args: Record<string, string>,
    opts: CallToolOptions,
  ): Promise<GetPromptResult> {
    return this.whenConnected(name, server, ref, opts, (rec, timeout) => {
      const prompt = this.deps.registry.getPrompt(name);
      if (!prompt || prompt.server !== server) {
        throw new McpReconcilerError(ErrorCode.UnknownTool, `Prompt ${name} is no longer provided: MCP server "${server}" connected and its live prompt list does not have it (the cached list was stale).`, {
          details: { prompt: name, server, stale: true },
        });
      }
      return rec.conn.client.getPrompt({ name: prompt.rawName, arguments: args }, { signal: opts.signal, timeout });
    });
  }

  /**
   * A call that failed because its connection went away (crash, lost session,
   * removal) as a `tool_unavailable` error saying so — the SDK's own error is a
   * bare "Connection closed". `undefined` when the connection is still current,
   * so the caller's own timeouts and aborts pass through unchanged.
   */
  private lostDuringCall(toolName: string, server: string, rec: ConnectionRecord, err: unknown): McpReconcilerError | undefined {
    if (!rec.lost && this.deps.connections.get(server) === rec) return undefined;
    const ref = this.deps.view.serverActors()[server];
    const state = ref ? stateNameOf(ref.getSnapshot()) : 'removed';
    const reconnecting = isInTransit(state) || state === 'connected';
    const what = `Tool ${toolName} did not complete: MCP server "${server}" lost its connection (${rec.lost?.error ?? 'connection closed'})`;
    return new McpReconcilerError(
      ErrorCode.ToolUnavailable,
      reconnecting ? `${what} and is reconnecting. Try again in a moment.` : `${what}. ${this.deps.view.toolUnavailableMessage(toolName)}`,
      { details: { tool: toolName, server, state, reconnecting, lost: true }, cause: err },
    );
  }
}
