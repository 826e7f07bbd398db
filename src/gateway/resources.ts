/**
 * Resources through the gateway (SPEC §13): `resources/list`,
 * `resources/templates/list`, `resources/read`, `resources/subscribe` and
 * `resources/unsubscribe` of one session, scoped like its tools, with
 * `notifications/resources/list_changed` when a server in scope changes its
 * resources and `notifications/resources/updated` for what the session
 * subscribed to.
 *
 * URIs pass through unchanged (see src/registry/resources.ts): a URI the
 * client got from `resources/list`, or from a tool's `resource_link`, reads
 * from the server that listed it. Within a session, a URI two servers in its
 * scope list is read from the first of them in code-point order.
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  ErrorCode as McpErrorCode,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
  type ReadResourceResult,
  type Resource,
  type ResourceTemplate,
} from '@modelcontextprotocol/sdk/types.js';
import { ErrorCode, McpReconcilerError } from '../errors.js';
import type { GatewayPool } from './pool.js';
import { inScope, type SessionScope } from './scope.js';

/** JSON-RPC error of a resource no server in the session's scope has (MCP's "Resource not found"). */
const RESOURCE_NOT_FOUND = -32002;

/** Options of {@link serveResources}. */
export interface SessionResourcesOptions {
  /** The pool session the requests belong to (`pool.ready` waits for its servers). */
  sessionId: string;
  scope: SessionScope;
  /** Limit of one forwarded read or subscribe, the wait for a dormant server included. */
  timeoutMs: number;
}

/** A session's resource handlers; `close()` ends its subscriptions. */
export interface SessionResources {
  /** Unsubscribe everything the session subscribed to (without waiting for the servers) and stop listening. Idempotent. */
  close(): Promise<void>;
}

/** A registry entry without what only the controller needs (server, generation, cached). */
function asListed<T extends { server: string; generation: number; cached?: true }>(entry: T): Omit<T, 'server' | 'generation' | 'cached'> {
  const { server: _server, generation: _generation, cached: _cached, ...listed } = entry;
  return listed;
}

/** The controller's error as the JSON-RPC error a client gets (its message is the reason and the fix). */
function asMcpError(err: unknown): unknown {
  if (!(err instanceof McpReconcilerError)) return err;
  return new McpError(err.code === ErrorCode.UnknownTool ? RESOURCE_NOT_FOUND : McpErrorCode.InvalidParams, err.message, { ...err.details });
}

/**
 * Serve resources on `server` (one session) from `pool`'s controller:
 * declares the `resources` capability with `subscribe` and `listChanged`
 * and installs the handlers. Call before the server connects.
 */
export function serveResources(server: Server, pool: GatewayPool, options: SessionResourcesOptions): SessionResources {
  const { controller } = pool;
  const { scope, sessionId, timeoutMs } = options;
  const servers = scope === undefined ? undefined : [...scope];
  server.registerCapabilities({ resources: { subscribe: true, listChanged: true } });

  /** The session's subscriptions by URI: their unsubscribe, or the subscribe still in flight. */
  const subscriptions = new Map<string, Promise<() => Promise<void>>>();
  let closed = false;

  const unsubscribe = async (uri: string): Promise<void> => {
    const subscribing = subscriptions.get(uri);
    subscriptions.delete(uri);
    const off = await subscribing?.catch(() => undefined);
    await off?.();
  };

  server.setRequestHandler(ListResourcesRequestSchema, async () => {
    await pool.ready(sessionId);
    return { resources: controller.resources(servers).map((r) => asListed(r) as Resource) };
  });

  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => {
    await pool.ready(sessionId);
    return { resourceTemplates: controller.resourceTemplates(servers).map((t) => asListed(t) as ResourceTemplate) };
  });

  server.setRequestHandler(ReadResourceRequestSchema, async (request, extra): Promise<ReadResourceResult> => {
    await pool.ready(sessionId);
    try {
      return await controller.readResource(request.params.uri, { servers, signal: extra.signal, timeoutMs });
    } catch (err) {
      throw asMcpError(err);
    }
  });

  server.setRequestHandler(SubscribeRequestSchema, async (request, extra) => {
    await pool.ready(sessionId);
    const uri = request.params.uri;
    if (closed || subscriptions.has(uri)) return {};
    const subscribing = controller.subscribeResource(
      uri,
      // The client hears the URI the server named (the subscribed one or one below it).
      (update) => void server.sendResourceUpdated({ uri: update.uri }).catch(() => undefined),
      { servers, signal: extra.signal, timeoutMs },
    );
    subscriptions.set(uri, subscribing);
    try {
      await subscribing;
    } catch (err) {
      subscriptions.delete(uri);
      throw asMcpError(err);
    }
    return {};
  });

  server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
    await unsubscribe(request.params.uri);
    return {};
  });

  // Coalesced per tick, like the tool and prompt list changes: one reconcile can change several servers.
  let flushing: NodeJS.Immediate | undefined;
  const offChanged = controller.on('resources-changed', (change) => {
    if (!inScope(scope, change.server)) return;
    flushing ??= setImmediate(() => {
      flushing = undefined;
      // Before `initialize` the client has nothing to refresh.
      if (server.getClientVersion() !== undefined) void server.sendResourceListChanged().catch(() => undefined);
    });
  });

  let closing: Promise<void> | undefined;
  return {
    close: () => {
      closing ??= (async () => {
        closed = true;
        offChanged();
        if (flushing) clearImmediate(flushing);
        // Not awaited: an unsubscribe a hung server never answers must not hold up the session's close.
        for (const uri of [...subscriptions.keys()]) void unsubscribe(uri).catch(() => undefined);
      })();
      return closing;
    },
  };
}
