/**
 * One gateway session on the 2025 lane (`initialize`, sessions, SDK v1's
 * low-level `Server`): the session's answers (src/gateway/session-core.ts)
 * bound to the SDK's request handlers, list changes as notifications, and a
 * managed server's elicitation or sampling forwarded to this client as a
 * server-to-client request.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { Protocol, type RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  CallToolRequestSchema,
  GetPromptRequestSchema,
  type CallToolRequest,
  type CallToolResult,
  type ServerNotification,
  type ServerRequest,
  ListPromptsRequestSchema,
  ListToolsRequestSchema,
  type CreateMessageResult,
} from '@modelcontextprotocol/sdk/types.js';
import type { GatewayPool, PoolSession } from './pool.js';
import type { SessionScope } from './scope.js';
import { serveResources } from './resources.js';
import { createSessionCore, GATEWAY_INFO, gatewayInstructions, requestContext } from './session-core.js';
import { canElicit } from './tool-approval.js';
import { ListChanges, listChangeListener } from './list-changes.js';

export { GATEWAY_INFO };

type ToolCallHandler = (request: CallToolRequest, extra: RequestHandlerExtra<ServerRequest, ServerNotification>) => Promise<CallToolResult>;

/** Options of {@link createSessionServer}. */
export interface SessionServerOptions {
  /** Servers this session may see and call; `undefined` for every server. */
  scope?: SessionScope;
  /** `stdio` or `http`, for status and logs. */
  transport: string;
  /** Limit of one forwarded call (restarted by each progress notification). Default 600 000. */
  callTimeoutMs?: number;
  /** Who opened the session, on a gateway that authenticates principals (docs/cluster-principals.md). */
  principal?: string;
}

/** A session's server and its place in the pool. */
export interface GatewaySession {
  readonly server: Server;
  readonly session: PoolSession;
  /** Close the MCP server (and with it its transport) and leave the pool. Idempotent. */
  close(): Promise<void>;
}

/**
 * Build the MCP server of one client session and attach it to `pool`.
 * Connect it to a transport next (`server.connect(transport)`).
 */
export function createSessionServer(pool: GatewayPool, options: SessionServerOptions): GatewaySession {
  const server = new Server(GATEWAY_INFO, {
    capabilities: { tools: { listChanged: true }, prompts: { listChanged: true } },
    instructions: gatewayInstructions(pool),
  });

  let initialized = false;
  const changes = new ListChanges<'tools' | 'prompts'>((changed) => {
    if (!initialized) return;
    const sends: Promise<void>[] = [];
    if (changed.has('tools')) sends.push(server.sendToolListChanged());
    if (changed.has('prompts')) sends.push(server.sendPromptListChanged());
    // A client that went away mid-send is the transport's business, not an error here.
    for (const p of sends) p.catch(() => undefined);
  });
  server.oninitialized = () => {
    initialized = true;
  };

  // The lane's own options (scope, transport, call timeout) are the core's.
  const core = createSessionCore(pool, {
    ...options,
    scope: options.scope,
    listener: {
      ...listChangeListener(changes),
      elicit: (request, opts) => {
        const caps = server.getClientCapabilities()?.elicitation;
        // A URL elicitation (a sign-in: docs/cluster-principals.md) goes to a client that declared URL mode.
        if (!caps || (request.mode === 'url' && !caps.url)) return undefined;
        return server.elicitInput(request, opts).then((r) => ({ action: r.action, ...(r.content ? { content: r.content as Record<string, unknown> } : {}) }));
      },
      sample: (request, opts) => (server.getClientCapabilities()?.sampling ? (server.createMessage(request, opts) as Promise<CreateMessageResult>) : undefined),
      elicitationComplete: (elicitationId, opts) =>
        void server.notification({ method: 'notifications/elicitation/complete', params: { elicitationId } }, opts.relatedRequestId !== undefined ? opts : undefined).catch(() => undefined),
    },
  });
  const { session } = core;

  const resources = serveResources(server, pool, core);
  server.setRequestHandler(ListToolsRequestSchema, () => core.listTools());
  server.setRequestHandler(ListPromptsRequestSchema, () => core.listPrompts());
  // SDK v1's `Server` wraps a tools/call handler to parse the request its `Protocol` has just parsed and to
  // validate the result: that result was validated where it came in (the connection's client, the output
  // contract, SPEC §6) or is the gateway's own, so the handler is registered on the `Protocol` (one parse).
  const setProtocolHandler = Protocol.prototype.setRequestHandler as (this: Server, schema: typeof CallToolRequestSchema, handler: ToolCallHandler) => void;
  setProtocolHandler.call(server, CallToolRequestSchema, (request, extra) => {
    const progressToken = request.params._meta?.progressToken;
    return core.callTool(request.params, {
      ...requestContext(extra),
      requestId: extra.requestId,
      ...(canElicit(server.getClientCapabilities(), 'form')
        ? {
            approve: (question) =>
              server
                .elicitInput(question, { signal: extra.signal, relatedRequestId: extra.requestId })
                .then((r) => ({ action: r.action, ...(r.content ? { content: r.content as Record<string, unknown> } : {}) })),
          }
        : {}),
      ...(progressToken !== undefined
        ? {
            progress: (p) => {
              extra.sendNotification({ method: 'notifications/progress', params: { progressToken, ...p } }).catch(() => undefined);
            },
          }
        : {}),
    });
  });
  server.setRequestHandler(GetPromptRequestSchema, (request, extra) => core.getPrompt(request.params, requestContext(extra)));

  let closing: Promise<void> | undefined;
  return {
    server,
    session,
    close: () => {
      closing ??= (async () => {
        await resources.close();
        session.release();
        changes.close();
        await server.close().catch(() => undefined);
      })();
      return closing;
    },
  };
}
