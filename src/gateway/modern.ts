/**
 * The gateway on the 2026-07-28 revision (SPEC §15): stateless requests,
 * each carrying its protocol version and client capabilities in `_meta`,
 * `server/discover` instead of `initialize`, list changes delivered on
 * `subscriptions/listen` streams, and no server-to-client requests (a
 * managed server's elicitation or sampling, and a tool approval, reach the
 * client as input-required results: src/gateway/input-rounds.ts). SDK v2
 * (`@modelcontextprotocol/server`) serves the wire; the answers are the
 * session core's (src/gateway/session-core.ts), the same as on the 2025 lane.
 *
 * A *lane* is what stands in for a session here: one per scope, attached to
 * the pool while requests or listen streams of that scope keep coming (so
 * its servers are held, and released after the idle timeout like a 2025
 * session's), with the `tools/list` additions of `search_tools` shared by
 * every client of that scope.
 */
import { Server as ServerV2, createMcpHandler, SUPPORTED_PROTOCOL_VERSIONS, type McpHttpHandler } from '@modelcontextprotocol/server';
import type { ForwardOptions, GatewayPool } from './pool.js';
import { inScope, type SessionScope } from './scope.js';
import { createSessionCore, DEFAULT_CALL_TIMEOUT_MS, FORWARDED_BY_HEADER, GATEWAY_INFO, gatewayInstructions, type SessionCore } from './session-core.js';
import { InputRounds } from './input-rounds.js';
import { ListenedResources } from './listened-resources.js';
import { ListChanges, listChangeListener } from './list-changes.js';
import { DIRECT_CALL_REVISION, DirectCalls } from './modern-calls.js';

/** What a lane tells its clients when the registry changes in its scope. */
export interface ModernNotifier {
  toolsChanged(): void;
  promptsChanged(): void;
  resourcesChanged(): void;
  /** `notifications/resources/updated` for `uri`, to the listen streams that named it. */
  resourceUpdated(uri: string): void;
}

/**
 * A v2 server instance answering from `core`: built per HTTP request (the
 * SDK's stateless model) or once per stdio connection. Cheap: handlers only.
 */
export function createModernServer(pool: GatewayPool, lane: Pick<ModernLane, 'core' | 'rounds'>, supportedProtocolVersions?: string[]): ServerV2 {
  const { core, rounds } = lane;
  const server = new ServerV2(GATEWAY_INFO, {
    ...(supportedProtocolVersions ? { supportedProtocolVersions } : {}),
    // `subscribe`: the listen router honours a stream's `resourceSubscriptions` only when it is declared.
    capabilities: { tools: { listChanged: true }, prompts: { listChanged: true }, resources: { listChanged: true, subscribe: true } },
    instructions: gatewayInstructions(pool),
  });
  // The two SDK majors declare the same wire shapes as separate types.
  const asV2 = <T>(p: Promise<unknown>): Promise<T> => p as Promise<T>;
  server.setRequestHandler('tools/list', () => asV2(core.listTools()));
  server.setRequestHandler('prompts/list', () => asV2(core.listPrompts()));
  server.setRequestHandler('resources/list', () => asV2(core.listResources()));
  server.setRequestHandler('resources/templates/list', () => asV2(core.listResourceTemplates()));
  // Who sent a request, passed on when another replica answers it (a cluster singleton: docs/cluster.md).
  const caller = (ctx: { mcpReq: { signal: AbortSignal }; http?: { req?: { headers: Headers } } }) => {
    const authorization = ctx.http?.req?.headers.get('authorization') ?? undefined;
    const forwardedBy = ctx.http?.req?.headers.get(FORWARDED_BY_HEADER) ?? undefined;
    return { signal: ctx.mcpReq.signal, ...(authorization ? { authorization } : {}), ...(forwardedBy ? { forwardedBy } : {}) };
  };
  // Like a call, a read or a prompt spans rounds while its managed server asks the client.
  server.setRequestHandler('resources/read', (request, ctx) => rounds.roundOf('resources/read', request.params, ctx, (c) => asV2(core.readResource(request.params, { ...caller(ctx), ...c }))));
  server.setRequestHandler('prompts/get', (request, ctx) => rounds.roundOf('prompts/get', request.params, ctx, (c) => asV2(core.getPrompt(request.params, { ...caller(ctx), ...c }))));
  // A call spans rounds while the managed server (or a tool approval) asks the client: see input-rounds.ts.
  server.setRequestHandler('tools/call', (request, ctx) => {
    // Passed on when another replica answers the call (a cluster singleton: docs/cluster.md).
    const authorization = ctx.http?.req?.headers.get('authorization') ?? undefined;
    const forwardedBy = ctx.http?.req?.headers.get(FORWARDED_BY_HEADER) ?? undefined;
    return rounds.round(request.params, ctx, (callCtx, flowId) =>
      asV2(
        core.callTool(request.params, {
          ...callCtx,
          ...(authorization ? { authorization } : {}),
          ...(forwardedBy ? { forwardedBy } : {}),
          ...(rounds.canAsk(flowId) ? { approve: (question) => rounds.elicit(flowId, question) ?? Promise.resolve({ action: 'cancel' as const }) } : {}),
        }),
      ),
    );
  });
  return server;
}

/** Options of {@link createModernLane}. */
export interface ModernLaneOptions {
  scope: SessionScope;
  /** `http` or `stdio`, for status and logs. */
  transport: string;
  callTimeoutMs?: number;
  /** Makes each input-required round's `requestState` (default a random UUID). */
  requestStateGenerator?: () => string;
  /** Where list changes go: the HTTP handler's listen bus, or the stdio connection's instance. */
  notifier: () => ModernNotifier | undefined;
  /** Problems worth a log line (a resource subscription a managed server refused). */
  onError?: (message: string) => void;
  /** The principal whose lane it is, when its scope names per-principal servers (docs/cluster-principals.md). */
  principal?: string;
}

/** A scope's place in the pool on the 2026-07-28 lane. */
export interface ModernLane {
  readonly core: SessionCore;
  /** The calls waiting for their client's answers (input-required rounds). */
  readonly rounds: InputRounds;
  /** The resource subscriptions the lane's listen streams hold (see {@link listenedResources}). */
  readonly resources: ListenedResources;
  /** Leave the pool and stop notifying. Idempotent. */
  close(): void;
}

/**
 * Attach a lane for `scope` to `pool`: its core, with the registry's list
 * changes (coalesced per tick, like the 2025 lane's) sent to `notifier()`.
 */
export function createModernLane(pool: GatewayPool, options: ModernLaneOptions): ModernLane {
  const changes = new ListChanges<'tools' | 'prompts' | 'resources'>((changed) => {
    const notify = options.notifier();
    if (!notify) return;
    if (changed.has('tools')) notify.toolsChanged();
    if (changed.has('prompts')) notify.promptsChanged();
    if (changed.has('resources')) notify.resourcesChanged();
  });
  const rounds = new InputRounds(options.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS, options.requestStateGenerator);
  // The 2026-07-28 revision has no server-to-client requests: a managed server's question during a
  // call goes back to that call's client as an input-required result (the pool names the call).
  const flowOf = (o: ForwardOptions): string | undefined => (typeof o.relatedRequestId === 'string' ? o.relatedRequestId : undefined);
  // The lane's own options (scope, transport, call timeout) are the core's.
  const core = createSessionCore(pool, {
    ...options,
    listener: {
      ...listChangeListener(changes),
      elicit: (request, o) => {
        const flow = flowOf(o);
        return flow === undefined ? undefined : rounds.elicit(flow, request, o.signal);
      },
      sample: (request, o) => {
        const flow = flowOf(o);
        return flow === undefined ? undefined : rounds.sample(flow, request, o.signal);
      },
    },
  });
  const resources = new ListenedResources(pool.controller, {
    scope: options.scope,
    timeoutMs: core.callTimeoutMs,
    ready: () => pool.ready(core.session.id),
    updated: (uri) => options.notifier()?.resourceUpdated(uri),
    ...(options.onError ? { onError: options.onError } : {}),
  });
  const offResources = pool.controller.on('resources-changed', (change) => {
    if (inScope(options.scope, change.server)) changes.mark('resources');
  });
  let closed = false;
  return {
    core,
    rounds,
    resources,
    close: () => {
      if (closed) return;
      closed = true;
      rounds.close();
      resources.close();
      offResources();
      changes.close();
      core.session.release();
    },
  };
}

/** A lane served over HTTP: the SDK's stateless handler (`legacy: 'reject'`, the 2025 lane is the gateway's own). */
export interface ModernHttpLane extends ModernLane {
  readonly handler: McpHttpHandler;
  /** The direct path for `tools/call` (src/gateway/modern-calls.ts): one server instance, the same handlers; made on first use. */
  calls(): DirectCalls;
}

/** {@link createModernLane} behind an SDK v2 HTTP handler whose listen bus hears the lane's list changes. */
export function createModernHttpLane(pool: GatewayPool, options: Omit<ModernLaneOptions, 'notifier' | 'transport'> & { onerror?: (err: Error) => void }): ModernHttpLane {
  let handler: McpHttpHandler | undefined;
  const { onerror, ...laneOptions } = options;
  const lane = createModernLane(pool, { ...laneOptions, transport: 'http', notifier: () => handler?.notify });
  handler = createMcpHandler(() => createModernServer(pool, lane), {
    legacy: 'reject',
    ...(onerror ? { onerror } : {}),
  });
  const h = handler;
  let calls: DirectCalls | undefined;
  let closed = false;
  return {
    core: lane.core,
    rounds: lane.rounds,
    resources: lane.resources,
    handler: h,
    // Listing the revision lets the transport bind the instance to it on connect (the SDK's handler binds each of its own).
    calls: () => (calls ??= new DirectCalls(createModernServer(pool, lane, [...SUPPORTED_PROTOCOL_VERSIONS, DIRECT_CALL_REVISION]))),
    close: () => {
      if (closed) return;
      closed = true;
      lane.close();
      void h.close().catch(() => undefined);
      void calls?.close().catch(() => undefined);
    },
  };
}
