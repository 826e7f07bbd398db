/**
 * What one gateway session answers, whatever the protocol revision it is
 * served on: its place in the pool (scope, holds, readiness), its tool
 * exposure, and the answers to `tools/list`, `tools/call`, `prompts/list`,
 * `prompts/get` and the resource reads. The 2025 lane (src/gateway/server.ts,
 * SDK v1, sessions) and the 2026-07-28 lane (src/gateway/modern.ts, SDK v2,
 * stateless) both bind these same functions to their SDK's server, so the
 * two revisions cannot drift apart (SPEC §15).
 */
import { isRequestTimeout, isServerError } from '../connection/errors.js';
import {
  ErrorCode as McpErrorCode,
  McpError,
  type CallToolResult,
  type GetPromptResult,
  type Prompt,
  type ReadResourceResult,
  type Resource,
  type ResourceTemplate,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { describeError, ErrorCode, McpReconcilerError } from '../errors.js';
import type { GatewayPool, PoolSession, SessionListener } from './pool.js';
import { inScope, type SessionScope } from './scope.js';
import { outsideScope, unservedName } from './refusals.js';
import { SessionExposure } from './exposure.js';
import type { ElicitationAnswer, ElicitationRequest } from '../connection/client-capabilities.js';
import { approvalAnswer, approvalElicitation } from './tool-approval.js';

/** The gateway's name and version in `initialize` and `server/discover`. */
export const GATEWAY_INFO = Object.freeze({ name: 'mcp-reconciler', version: '0.1.0' });

/** The gateway's `instructions`, naming its tools' pattern. */
export function gatewayInstructions(pool: GatewayPool): string {
  return (
    `Tools of the MCP servers managed by mcp-reconciler, named ${pool.names.pattern}. The list follows the workspace config live; ` +
    'a tool whose server is unavailable answers with the reason and the fix.'
  );
}

/** The header of a request one replica of a clustered gateway forwards to another: the forwarder's id (docs/cluster.md). */
export const FORWARDED_BY_HEADER = 'x-mcp-reconciler-forwarded-by';

/** The limit of one forwarded call when none is given (restarted by each progress notification). */
export const DEFAULT_CALL_TIMEOUT_MS = 600_000;

/** JSON-RPC error of a resource no server in the session's scope has (MCP's "Resource not found"). */
export const RESOURCE_NOT_FOUND = -32002;

/** Options of {@link createSessionCore}. */
export interface SessionCoreOptions {
  scope: SessionScope;
  /** `stdio`, `http` or `http-stateless`, for status and logs. */
  transport: string;
  callTimeoutMs?: number;
  /** Told about registry changes in the scope, and asked to forward elicitation/sampling (2025 lane only). */
  listener: SessionListener;
  /**
   * The principal that opened the session (a clustered gateway): its
   * per-principal servers are served by that principal's own controller
   * (docs/cluster-principals.md).
   */
  principal?: string;
}

/** How a request reaches the core: its abort signal, and who sent it (for another replica that answers it). */
export interface RequestContext {
  signal: AbortSignal;
  /**
   * With it, a `prompts/get` or `resources/read` is tracked like a call, so a
   * question its server asks meanwhile goes to this client (on the 2025
   * lane, on this request's stream).
   */
  requestId?: string | number;
  /** The HTTP request's `Authorization` header, passed on when the request is answered by another replica. */
  authorization?: string;
  /** The forwarding replica, when another replica forwarded this request (docs/cluster.md). */
  forwardedBy?: string;
}

/**
 * The {@link RequestContext} of a request on the 2025 lane (SDK v1's
 * handler `extra`): its signal, and the headers another replica needs.
 */
export function requestContext(extra: { signal: AbortSignal; requestId?: string | number; requestInfo?: { headers?: Record<string, string | string[] | undefined> } }): RequestContext {
  const headers = extra.requestInfo?.headers ?? {};
  const header = (key: string): string | undefined => {
    const v = headers[key];
    return typeof v === 'string' ? v : undefined;
  };
  const authorization = header('authorization');
  const forwardedBy = header(FORWARDED_BY_HEADER);
  return { signal: extra.signal, ...(extra.requestId !== undefined ? { requestId: extra.requestId } : {}), ...(authorization ? { authorization } : {}), ...(forwardedBy ? { forwardedBy } : {}) };
}

/** How a `tools/call` reaches the core: its abort signal, its id, and where progress goes. */
export interface CallContext extends RequestContext {
  requestId: string | number;
  /** Set when the client asked for progress (`_meta.progressToken`). */
  progress?: (p: { progress: number; total?: number; message?: string }) => void;
  /**
   * Asks this call's client about a tool `permissions.ask` holds
   * (docs/manage.md); set only when the client can be asked (it declared
   * form elicitation). Without it such a call is refused with `tool_denied`.
   */
  approve?: (request: ElicitationRequest) => Promise<ElicitationAnswer>;
}

/** One session's answers; bind them to an SDK server. */
export interface SessionCore {
  readonly session: PoolSession;
  readonly scope: SessionScope;
  readonly callTimeoutMs: number;
  listTools(): Promise<{ tools: Tool[] }>;
  callTool(params: { name: string; arguments?: Record<string, unknown> }, ctx: CallContext): Promise<CallToolResult>;
  listPrompts(): Promise<{ prompts: Prompt[] }>;
  getPrompt(params: { name: string; arguments?: Record<string, string> }, ctx: RequestContext): Promise<GetPromptResult>;
  listResources(): Promise<{ resources: Resource[] }>;
  listResourceTemplates(): Promise<{ resourceTemplates: ResourceTemplate[] }>;
  readResource(params: { uri: string }, ctx: RequestContext): Promise<ReadResourceResult>;
}

function errorResult(text: string): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}

/**
 * Errors that are the tool's or the server's state, not the protocol's: the
 * model gets them as a tool result it can read (SPEC §7's reason text).
 */
const TOOL_ERROR_CODES = new Set<string>([ErrorCode.ToolUnavailable, ErrorCode.UnknownTool, ErrorCode.Timeout, ErrorCode.OutputContract]);

/** A registry entry without what only the controller needs (server, generation, cached). */
function asListed<T extends { server: string; generation: number; cached?: true }>(entry: T): Omit<T, 'server' | 'generation' | 'cached'> {
  const { server: _server, generation: _generation, cached: _cached, ...listed } = entry;
  return listed;
}

/** The controller's error as the JSON-RPC error a client gets (its message is the reason and the fix). */
export function asResourceError(err: unknown): unknown {
  if (!(err instanceof McpReconcilerError)) return err;
  return new McpError(err.code === ErrorCode.UnknownTool ? RESOURCE_NOT_FOUND : McpErrorCode.InvalidParams, err.message, { ...err.details });
}

/** Attach a session to `pool` and build its answers. */
export function createSessionCore(pool: GatewayPool, options: SessionCoreOptions): SessionCore {
  const { controller, names } = pool;
  const { scope } = options;
  const callTimeoutMs = options.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
  /** What a request answered by another replica carries along: its signal, limit and caller. */
  const placed = (ctx: RequestContext) => ({
    signal: ctx.signal,
    timeoutMs: callTimeoutMs,
    ...(ctx.authorization ? { authorization: ctx.authorization } : {}),
    ...(ctx.forwardedBy ? { forwardedBy: ctx.forwardedBy } : {}),
  });
  const session = pool.attach(scope, options.transport, options.listener, options.principal);
  const servers = scope === undefined ? undefined : [...scope];
  // `serve --tools search|auto`: what the list shows, and the search pair.
  const exposure = new SessionExposure(controller, names, scope, () => options.listener.toolsChanged());
  // The principal's own servers (docs/cluster-principals.md): another pool, with the same names and exposure rules.
  const exposures = new WeakMap<GatewayPool, SessionExposure>();
  const own = (): { pool: GatewayPool; session: PoolSession; exposure: SessionExposure } | undefined => {
    const p = pool.principalOf(session.id);
    if (!p) return undefined;
    let e = exposures.get(p.pool);
    if (!e) exposures.set(p.pool, (e = new SessionExposure(p.pool.controller, p.pool.names, scope, () => options.listener.toolsChanged())));
    return { ...p, exposure: e };
  };
  /**
   * Where a gateway name of `kind` is served: the pool's controller, or the
   * principal's one when only that one knows it (or its server).
   */
  const targetOf = <K extends 'tool' | 'prompt'>(kind: K, name: string) => {
    const resolved = kind === 'tool' ? names.resolve('tool', name) : names.resolve('prompt', name);
    const main = { pool, controller, names, sessionId: session.id, resolved };
    if (resolved.kind === 'entry') return main;
    const p = own();
    if (!p) return main;
    const theirs = kind === 'tool' ? p.pool.names.resolve('tool', name) : p.pool.names.resolve('prompt', name);
    if (theirs.kind === 'entry' || theirs.server !== undefined) return { pool: p.pool, controller: p.pool.controller, names: p.pool.names, sessionId: p.session.id, resolved: theirs };
    return main;
  };

  return {
    session,
    scope,
    callTimeoutMs,
    async listTools() {
      await pool.ready(session.id);
      const exposed = exposure.list(names.tools().filter(({ entry }) => inScope(scope, entry.server)));
      const p = own();
      if (p) {
        const theirs = p.exposure.list(p.pool.names.tools().filter(({ entry }) => inScope(scope, entry.server)));
        exposed.tools.push(...theirs.tools);
        for (const t of theirs.own) if (!exposed.own.some((o) => o.name === t.name)) exposed.own.push(t);
      }
      const tools: Tool[] = exposed.tools.map(({ name, entry: t }) => ({
        name,
        ...(t.title !== undefined ? { title: t.title } : {}),
        ...(t.description !== undefined ? { description: t.description } : {}),
        inputSchema: t.inputSchema,
        ...(t.outputSchema !== undefined ? { outputSchema: t.outputSchema } : {}),
        ...(t.annotations !== undefined ? { annotations: t.annotations } : {}),
      }));
      return { tools: [...tools, ...exposed.own] };
    },

    async listPrompts() {
      await pool.ready(session.id);
      const prompts: Prompt[] = [...names.prompts(), ...(own()?.pool.names.prompts() ?? [])]
        .filter(({ entry }) => inScope(scope, entry.server))
        .map(({ name, entry: p }) => ({
          name,
          ...(p.description !== undefined ? { description: p.description } : {}),
          ...(p.arguments !== undefined ? { arguments: p.arguments } : {}),
        }));
      return { prompts };
    },

    // Each call resolves the name through the naming table to one registered entry, checks
    // the scope on that entry's server (the one that answers), and hands the controller that
    // entry's registry name in the same tick, so no registry change can come between.
    async callTool(params, ctx) {
      await pool.ready(session.id);
      // `search_tools` ranks the principal's own tools with the pool's; whichever source offers the pair answers.
      const p = own();
      const routed = (await exposure.route(params.name, params.arguments, p ? [p.exposure] : [])) ?? (await p?.exposure.route(params.name, params.arguments, [exposure]));
      if (routed && 'result' in routed) return routed.result;
      const name = routed ? routed.name : params.name;
      const args = routed ? routed.arguments : params.arguments;
      // The principal's own servers are called through its controller, never through another principal's.
      const { pool: target, controller, names, sessionId, resolved } = targetOf('tool', name);
      if (resolved.kind !== 'entry') return errorResult(unservedName(controller, names, scope, 'Tool', name, resolved));
      const { server: owner, name: registryName } = resolved.entry;
      if (!inScope(scope, owner)) return errorResult(outsideScope('Tool', name, owner, scope));
      const endCall = target.trackCall(sessionId, owner, ctx.requestId);
      const ask = (request: Parameters<typeof approvalElicitation>[1]): Promise<ElicitationAnswer> => ctx.approve!(approvalElicitation(name, request));
      try {
        // A server that runs on another replica (a cluster singleton): that replica answers.
        const placement = target.placement;
        if (placement && !placement.local(owner)) {
          const remote = await placement.call(owner, {
            name,
            ...(args ? { arguments: args } : {}),
            signal: ctx.signal,
            timeoutMs: callTimeoutMs,
            ...(ctx.progress ? { progress: ctx.progress } : {}),
            ...(ctx.authorization ? { authorization: ctx.authorization } : {}),
            ...(ctx.forwardedBy ? { forwardedBy: ctx.forwardedBy } : {}),
          });
          if (remote) return remote;
        }
        return await controller.callTool(registryName, args ?? {}, {
          signal: ctx.signal,
          timeoutMs: callTimeoutMs,
          ...(ctx.progress ? { onprogress: ctx.progress } : {}),
          ...(ctx.approve ? { onToolApproval: async (request) => approvalAnswer(await ask(request)) } : {}),
        });
      } catch (err) {
        if (err instanceof McpReconcilerError && TOOL_ERROR_CODES.has(err.code)) return errorResult(names.rename(err.message, registryName, name));
        if (err instanceof McpReconcilerError && err.code === ErrorCode.ToolDenied) {
          return errorResult(`${ErrorCode.ToolDenied}: ${names.rename(err.message, registryName, name)}${err.hint ? `; ${err.hint}` : ''}`);
        }
        if (isRequestTimeout(err)) {
          return errorResult(`Tool ${name} did not answer within ${callTimeoutMs} ms without progress; the gateway cancelled the call. Start the gateway with a larger --call-timeout MS if the tool needs longer.`);
        }
        // The managed server's own protocol errors (invalid params, …) reach the client as they were sent
        // (SDK v2's ProtocolError from the connection layer; both lanes' servers send its code, message and data).
        if (err instanceof McpError || isServerError(err)) throw err;
        return errorResult(`Tool ${name} failed: ${describeError(err)}`);
      } finally {
        endCall();
      }
    },

    async getPrompt(params, ctx) {
      await pool.ready(session.id);
      const name = params.name;
      // prompts/get has no error result: the reason text travels as the JSON-RPC error message.
      const { pool: target, controller, names, sessionId, resolved } = targetOf('prompt', name);
      if (resolved.kind !== 'entry') throw new McpError(McpErrorCode.InvalidParams, unservedName(controller, names, scope, 'Prompt', name, resolved));
      const { server: owner, name: registryName } = resolved.entry;
      if (!inScope(scope, owner)) throw new McpError(McpErrorCode.InvalidParams, outsideScope('Prompt', name, owner, scope));
      // A server that runs on another replica (a cluster singleton): that replica answers.
      if (target.placement && !target.placement.local(owner)) {
        const remote = await target.placement.getPrompt(owner, { name, ...(params.arguments ? { arguments: params.arguments } : {}), ...placed(ctx) });
        if (remote) return remote;
      }
      const endCall = ctx.requestId !== undefined ? target.trackCall(sessionId, owner, ctx.requestId) : undefined;
      try {
        return await controller.getPrompt(registryName, params.arguments ?? {}, { signal: ctx.signal, timeoutMs: callTimeoutMs });
      } catch (err) {
        if (err instanceof McpReconcilerError) throw new McpError(McpErrorCode.InvalidParams, names.rename(err.message, registryName, name));
        throw err;
      } finally {
        endCall?.();
      }
    },

    async listResources() {
      await pool.ready(session.id);
      const theirs = own()?.pool.controller.resources(servers) ?? [];
      return { resources: [...controller.resources(servers), ...theirs].map((r) => asListed(r) as Resource) };
    },

    async listResourceTemplates() {
      await pool.ready(session.id);
      const theirs = own()?.pool.controller.resourceTemplates(servers) ?? [];
      return { resourceTemplates: [...controller.resourceTemplates(servers), ...theirs].map((t) => asListed(t) as ResourceTemplate) };
    },

    async readResource(params, ctx) {
      await pool.ready(session.id);
      // A resource only the principal's own servers have is read through the principal's controller.
      const p = own();
      const theirs = p && controller.resourceOwner(params.uri, servers) === undefined && p.pool.controller.resourceOwner(params.uri, servers) !== undefined;
      const target = theirs ? p.pool : pool;
      const sessionId = theirs ? p.session.id : session.id;
      const reader = target.controller;
      // Its server: the read is tracked like a call (a question it asks reaches this client), or answered by another replica.
      const owner = ctx.requestId !== undefined || target.placement ? reader.resourceOwner(params.uri, servers) : undefined;
      const endCall = owner !== undefined && ctx.requestId !== undefined ? target.trackCall(sessionId, owner, ctx.requestId) : undefined;
      try {
        // A resource of a server that runs on another replica (a cluster singleton): that replica answers.
        if (owner !== undefined && target.placement && !target.placement.local(owner)) {
          const remote = await target.placement.readResource(owner, { uri: params.uri, ...placed(ctx) });
          if (remote) return remote;
        }
        return await reader.readResource(params.uri, { servers, signal: ctx.signal, timeoutMs: callTimeoutMs });
      } catch (err) {
        throw asResourceError(err);
      } finally {
        endCall?.();
      }
    },
  };
}
