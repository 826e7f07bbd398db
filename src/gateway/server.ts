/**
 * One gateway session as an MCP server: the SDK's low-level `Server`, whose
 * list handlers read the controller's live registry on every request (so a
 * list always reflects the latest reconcile) filtered by the session's scope.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListToolsRequestSchema,
  ErrorCode as McpErrorCode,
  McpError,
  type CallToolResult,
  type CreateMessageResult,
  type GetPromptResult,
  type Prompt,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { describeError, ErrorCode, McpReconcilerError } from '../errors.js';
import type { GatewayPool, PoolSession } from './pool.js';
import { inScope, type SessionScope } from './scope.js';
import { outsideScope, unservedName } from './refusals.js';
import { serveResources } from './resources.js';
import { SessionExposure } from './exposure.js';

/** The gateway's name and version in `initialize`. */
export const GATEWAY_INFO = Object.freeze({ name: 'mcp-reconciler', version: '0.1.0' });

/** Options of {@link createSessionServer}. */
export interface SessionServerOptions {
  /** Servers this session may see and call; `undefined` for every server. */
  scope?: SessionScope;
  /** `stdio` or `http`, for status and logs. */
  transport: string;
  /** Limit of one forwarded call (restarted by each progress notification). Default 600 000. */
  callTimeoutMs?: number;
}

/** A session's server and its place in the pool. */
export interface GatewaySession {
  readonly server: Server;
  readonly session: PoolSession;
  /** Close the MCP server (and with it its transport) and leave the pool. Idempotent. */
  close(): Promise<void>;
}

const DEFAULT_CALL_TIMEOUT_MS = 600_000;

function errorResult(text: string): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}

/**
 * Errors that are the tool's or the server's state, not the protocol's: the
 * model gets them as a tool result it can read (SPEC §7's reason text).
 */
const TOOL_ERROR_CODES = new Set<string>([ErrorCode.ToolUnavailable, ErrorCode.UnknownTool, ErrorCode.Timeout, ErrorCode.OutputContract]);

/**
 * Build the MCP server of one client session and attach it to `pool`.
 * Connect it to a transport next (`server.connect(transport)`).
 */
export function createSessionServer(pool: GatewayPool, options: SessionServerOptions): GatewaySession {
  const { controller } = pool;
  const scope = options.scope;
  const callTimeoutMs = options.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
  const server = new Server(GATEWAY_INFO, {
    capabilities: { tools: { listChanged: true }, prompts: { listChanged: true } },
    instructions:
      `Tools of the MCP servers managed by mcp-reconciler, named ${pool.names.pattern}. The list follows the workspace config live; ` +
      'a tool whose server is unavailable answers with the reason and the fix.',
  });

  // Coalesced per tick: one reconcile can change several servers at once.
  let initialized = false;
  const dirty = { tools: false, prompts: false };
  let flushing: NodeJS.Immediate | undefined;
  const flush = (): void => {
    flushing = undefined;
    if (!initialized) return;
    const sends: Promise<void>[] = [];
    if (dirty.tools) sends.push(server.sendToolListChanged());
    if (dirty.prompts) sends.push(server.sendPromptListChanged());
    dirty.tools = dirty.prompts = false;
    // A client that went away mid-send is the transport's business, not an error here.
    for (const p of sends) p.catch(() => undefined);
  };
  const mark = (what: 'tools' | 'prompts'): void => {
    dirty[what] = true;
    flushing ??= setImmediate(flush);
  };
  server.oninitialized = () => {
    initialized = true;
  };

  const session = pool.attach(scope, options.transport, {
    toolsChanged: () => mark('tools'),
    promptsChanged: () => mark('prompts'),
    elicit: (request, opts) => {
      const caps = server.getClientCapabilities()?.elicitation;
      if (!caps) return undefined;
      return server.elicitInput(request, opts).then((r) => ({ action: r.action, ...(r.content ? { content: r.content as Record<string, unknown> } : {}) }));
    },
    sample: (request, opts) => (server.getClientCapabilities()?.sampling ? (server.createMessage(request, opts) as Promise<CreateMessageResult>) : undefined),
  });

  const resources = serveResources(server, pool, { sessionId: session.id, scope, timeoutMs: callTimeoutMs });
  const { names } = pool;
  // `serve --tools search|auto`: what the list shows, and the search pair.
  const exposure = new SessionExposure(controller, names, scope, () => mark('tools'));
  server.setRequestHandler(ListToolsRequestSchema, async () => {
    await pool.ready(session.id);
    const exposed = exposure.list(names.tools().filter(({ entry }) => inScope(scope, entry.server)));
    const tools: Tool[] = exposed.tools
      .map(({ name, entry: t }) => ({
        name,
        ...(t.title !== undefined ? { title: t.title } : {}),
        ...(t.description !== undefined ? { description: t.description } : {}),
        inputSchema: t.inputSchema,
        ...(t.outputSchema !== undefined ? { outputSchema: t.outputSchema } : {}),
        ...(t.annotations !== undefined ? { annotations: t.annotations } : {}),
      }));
    return { tools: [...tools, ...exposed.own] };
  });

  server.setRequestHandler(ListPromptsRequestSchema, async () => {
    await pool.ready(session.id);
    const prompts: Prompt[] = names
      .prompts()
      .filter(({ entry }) => inScope(scope, entry.server))
      .map(({ name, entry: p }) => ({
        name,
        ...(p.description !== undefined ? { description: p.description } : {}),
        ...(p.arguments !== undefined ? { arguments: p.arguments } : {}),
      }));
    return { prompts };
  });

  // Each handler resolves the name through the naming table to one registered entry, checks
  // the scope on that entry's server (the one that answers), and hands the controller that
  // entry's registry name in the same tick, so no registry change can come between.
  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    await pool.ready(session.id);
    const routed = await exposure.route(request.params.name, request.params.arguments);
    if (routed && 'result' in routed) return routed.result;
    const name = routed ? routed.name : request.params.name;
    const args = routed ? routed.arguments : request.params.arguments;
    const resolved = names.resolve('tool', name);
    if (resolved.kind !== 'entry') return errorResult(unservedName(controller, names, scope, 'Tool', name, resolved));
    const { server: owner, name: registryName } = resolved.entry;
    if (!inScope(scope, owner)) return errorResult(outsideScope('Tool', name, owner, scope));
    const progressToken = request.params._meta?.progressToken;
    const endCall = pool.trackCall(session.id, owner, extra.requestId);
    try {
      return await controller.callTool(registryName, args ?? {}, {
        signal: extra.signal,
        timeoutMs: callTimeoutMs,
        ...(progressToken !== undefined
          ? {
              onprogress: (p) => {
                extra
                  .sendNotification({ method: 'notifications/progress', params: { progressToken, ...p } })
                  .catch(() => undefined);
              },
            }
          : {}),
      });
    } catch (err) {
      if (err instanceof McpReconcilerError && TOOL_ERROR_CODES.has(err.code)) return errorResult(names.rename(err.message, registryName, name));
      if (err instanceof McpError && err.code === McpErrorCode.RequestTimeout) {
        return errorResult(`Tool ${name} did not answer within ${callTimeoutMs} ms without progress; the gateway cancelled the call. Start the gateway with a larger --call-timeout MS if the tool needs longer.`);
      }
      // The managed server's own protocol errors (invalid params, …) reach the client as they were sent.
      if (err instanceof McpError) throw err;
      return errorResult(`Tool ${name} failed: ${describeError(err)}`);
    } finally {
      endCall();
    }
  });

  server.setRequestHandler(GetPromptRequestSchema, async (request, extra): Promise<GetPromptResult> => {
    await pool.ready(session.id);
    const name = request.params.name;
    // prompts/get has no error result: the reason text travels as the JSON-RPC error message.
    const resolved = names.resolve('prompt', name);
    if (resolved.kind !== 'entry') throw new McpError(McpErrorCode.InvalidParams, unservedName(controller, names, scope, 'Prompt', name, resolved));
    const { server: owner, name: registryName } = resolved.entry;
    if (!inScope(scope, owner)) throw new McpError(McpErrorCode.InvalidParams, outsideScope('Prompt', name, owner, scope));
    try {
      return await controller.getPrompt(registryName, request.params.arguments ?? {}, { signal: extra.signal, timeoutMs: callTimeoutMs });
    } catch (err) {
      if (err instanceof McpReconcilerError) throw new McpError(McpErrorCode.InvalidParams, names.rename(err.message, registryName, name));
      throw err;
    }
  });

  let closing: Promise<void> | undefined;
  return {
    server,
    session,
    close: () => {
      closing ??= (async () => {
        await resources.close();
        session.release();
        if (flushing) clearImmediate(flushing);
        await server.close().catch(() => undefined);
      })();
      return closing;
    },
  };
}
