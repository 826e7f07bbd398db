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
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import type { GatewayPool } from './pool.js';
import { inScope } from './scope.js';
import { asResourceError, requestContext, type SessionCore } from './session-core.js';

/** A session's resource handlers; `close()` ends its subscriptions. */
export interface SessionResources {
  /** Unsubscribe everything the session subscribed to (without waiting for the servers) and stop listening. Idempotent. */
  close(): Promise<void>;
}

/**
 * Serve resources on `server` (one session) from `pool`'s controller:
 * declares the `resources` capability with `subscribe` and `listChanged`
 * and installs the handlers. Call before the server connects.
 */
export function serveResources(server: Server, pool: GatewayPool, core: SessionCore): SessionResources {
  const { controller } = pool;
  const { scope } = core;
  const sessionId = core.session.id;
  const timeoutMs = core.callTimeoutMs;
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

  server.setRequestHandler(ListResourcesRequestSchema, () => core.listResources());
  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => core.listResourceTemplates());
  server.setRequestHandler(ReadResourceRequestSchema, (request, extra) => core.readResource(request.params, requestContext(extra)));

  server.setRequestHandler(SubscribeRequestSchema, async (request, extra) => {
    await pool.ready(sessionId);
    const uri = request.params.uri;
    if (closed || subscriptions.has(uri)) return {};
    // The client hears the URI the server named (the subscribed one or one below it).
    const updated = (named: string): void => void server.sendResourceUpdated({ uri: named }).catch(() => undefined);
    // A resource of a server that runs on another replica (a cluster singleton): subscribed there (docs/cluster-gaps.md).
    const owner = pool.placement?.subscribe ? controller.resourceOwner(uri, servers) : undefined;
    const elsewhere =
      owner !== undefined && !pool.placement!.local(owner)
        ? pool.placement!.subscribe!(owner, { uri, updated, timeoutMs, ...requestContext(extra) })
        : undefined;
    const subscribing = (elsewhere ?? Promise.resolve(undefined)).then(
      (off) => off ?? controller.subscribeResource(uri, (update) => updated(update.uri), { servers, signal: extra.signal, timeoutMs }),
    );
    subscriptions.set(uri, subscribing);
    try {
      await subscribing;
    } catch (err) {
      subscriptions.delete(uri);
      throw asResourceError(err);
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
