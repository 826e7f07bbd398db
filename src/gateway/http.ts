/**
 * The gateway over streamable HTTP on 127.0.0.1, one endpoint for both
 * protocol eras (SPEC §15): 2025 clients open sessions (`initialize`,
 * `Mcp-Session-Id`), each with its own scope; 2026-07-28 clients send
 * stateless requests (their `_meta` envelope and `MCP-Protocol-Version`
 * header name the revision), served by one lane per scope
 * (src/gateway/modern.ts). All share one pool. Every request needs the
 * access token (`Authorization: Bearer <token>`); Host and Origin must be
 * loopback, so a web page cannot reach it by DNS rebinding.
 */
import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import { isIP, type AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { classifyInboundRequest } from '@modelcontextprotocol/server';
import { toNodeHandler, type NodeMcpRequestHandler } from '@modelcontextprotocol/node';
import { describeError, ErrorCode, McpReconcilerError } from '../errors.js';
import { BoundedEventStore } from './event-store.js';
import type { GatewayPool } from './pool.js';
import { createSessionServer, type GatewaySession } from './server.js';
import { scopeFromRequest, type SessionScope } from './scope.js';
import { createModernHttpLane, type ModernHttpLane } from './modern.js';
import { directCallOf } from './modern-calls.js';
import { listenedResources } from './listened-resources.js';

/** The path the gateway answers on. */
export const MCP_PATH = '/mcp';

/**
 * How long an HTTP session lives with no request and no open stream, when
 * `sessionIdleTimeoutMs` is not given: 30 minutes. A client that left without
 * `DELETE` (crashed, killed, lost its laptop lid) must not keep its servers
 * running, nor its place among the open sessions, for ever.
 */
export const GATEWAY_SESSION_IDLE_TIMEOUT_MS = 1_800_000;

/** Why a session closed: the client's `DELETE` (or the gateway's stop), its idle time, or room for a new one. */
export type SessionCloseReason = 'closed' | 'idle' | 'evicted';

/** An answer of {@link HttpGatewayOptions.extraRoute} (JSON unless its headers say otherwise). */
export interface ExtraRouteAnswer {
  status: number;
  headers?: Record<string, string>;
  body: string;
}

/** Options of {@link startHttpGateway}. */
export interface HttpGatewayOptions {
  /** TCP port on 127.0.0.1; 0 (default) picks a free one. */
  port?: number;
  /** The access token; default 32 random bytes (hex). At least 16 characters. */
  token?: string;
  callTimeoutMs?: number;
  /**
   * Most sessions open at once (default 64). An initialize beyond it ends
   * the least recently used idle session (no request or stream open) to make
   * room, and is answered 503 only when every session is in use.
   */
  maxSessions?: number;
  /**
   * End a session after this many ms with no request and no open stream
   * (default {@link GATEWAY_SESSION_IDLE_TIMEOUT_MS}): it leaves the pool, so
   * its servers are released and stop after their own idle timeout, and its
   * id is answered 404 from then on.
   */
  sessionIdleTimeoutMs?: number;
  /** Largest request body in bytes (default 4 MiB). */
  maxBodyBytes?: number;
  /**
   * Keep each session's recent messages so a broken SSE stream can resume
   * with `Last-Event-ID`. Default false: it costs about 1 ms per call (the
   * SDK stores every message and sends a priming event per stream), and
   * loopback streams rarely break.
   */
  resumable?: boolean;
  /**
   * Address to listen on (default `127.0.0.1`). Beyond loopback, Host must be
   * in {@link allowedHosts} and Origin in {@link allowedOrigins}.
   */
  host?: string;
  /** Host header values (`name:port`) accepted besides the loopback ones. */
  allowedHosts?: readonly string[];
  /** Origins (`https://app.example`) accepted besides the loopback ones. */
  allowedOrigins?: readonly string[];
  /**
   * Authenticate a request instead of the shared token (docs/cluster.md:
   * principals as an OAuth 2.1 resource server). Resolves to the principal
   * and the servers it may use (`undefined`: every server; a session's
   * scope is intersected with it), or to the refusal to send.
   */
  authenticate?: (req: IncomingMessage) => Promise<GatewayPrincipal | GatewayRefusal>;
  /** Answer other paths than {@link MCP_PATH} first (RFC 9728 metadata, a cluster's OAuth callback); `undefined` to go on. */
  extraRoute?: (url: URL, req: IncomingMessage) => ExtraRouteAnswer | undefined | Promise<ExtraRouteAnswer | undefined>;
  /** Makes the `Mcp-Session-Id` of each new session (default a random UUID); a cluster's names its replica (docs/cluster-sessions.md). */
  sessionIdGenerator?: () => string;
  /**
   * Answer a request whose `Mcp-Session-Id` this gateway does not hold,
   * after it was authenticated (a cluster forwards it to the replica that
   * owns the session); `notFound` sends the 404 that makes the client
   * initialize again. Default: that 404.
   */
  unknownSession?: (id: string, req: IncomingMessage, res: ServerResponse, notFound: (message: string) => void) => Promise<unknown>;
  /** Makes each `requestState` of the 2026-07-28 lane's input-required rounds (default a random UUID); a cluster's names its replica. */
  requestStateGenerator?: () => string;
  /**
   * Offered each 2026-07-28 request that carries a `requestState`, after it
   * was authenticated (its body already read): a cluster forwards a retry
   * whose round another replica holds to that replica. Resolves `true` when
   * it answered; `false` leaves the request to this gateway.
   */
  foreignRequestState?: (state: string, body: unknown, req: IncomingMessage, res: ServerResponse) => Promise<boolean>;
  /**
   * Serve every 2026-07-28 `tools/call` through the SDK's stateless handler
   * instead of the lane's direct path (src/gateway/modern-calls.ts). For
   * tests that compare the two; the answers are the same.
   */
  sdkCallPath?: boolean;
  /** Told about each session that opens or closes (for the CLI's log). */
  onSession?: (event: { type: 'open' | 'close'; id: string; scope: SessionScope; reason?: SessionCloseReason }) => void;
}

/** The `requestState` a 2026-07-28 retry carries (`params.requestState`), if any. */
function requestStateOf(body: unknown): string | undefined {
  const params = (body as { params?: unknown } | null)?.params;
  const state = params && typeof params === 'object' ? (params as { requestState?: unknown }).requestState : undefined;
  return typeof state === 'string' ? state : undefined;
}

/** Who a request comes from, per {@link HttpGatewayOptions.authenticate}. */
export interface GatewayPrincipal {
  principal: string;
  /** The principal's key for what is its own (its per-principal servers' credentials, docs/cluster-principals.md); default {@link principal}. */
  id?: string;
  /** The servers it may use; `undefined` for every server. */
  servers: SessionScope;
}

/** A request {@link HttpGatewayOptions.authenticate} turned away. */
export interface GatewayRefusal {
  status: number;
  message: string;
  headers?: Record<string, string>;
}

/** The session scope a principal gets: what it asked for, within what it may use. */
export function intersectScope(asked: SessionScope, allowed: SessionScope): SessionScope {
  if (allowed === undefined) return asked;
  if (asked === undefined) return new Set(allowed);
  return new Set([...asked].filter((s) => allowed.has(s)));
}

/** A listening HTTP gateway. */
export interface HttpGateway {
  /** `http://127.0.0.1:<port>/mcp` */
  readonly url: string;
  readonly port: number;
  readonly token: string;
  /** Open sessions by `Mcp-Session-Id`; `idle` when none of its requests or streams is open; `principal` with `authenticate`. */
  sessions(): { id: string; scope: SessionScope; idle: boolean; principal?: string }[];
  /** Close every session and stop listening. Idempotent. */
  close(): Promise<void>;
}

interface HttpSession {
  /** Who opened it (with {@link HttpGatewayOptions.authenticate}): only they may use it. */
  principal?: string;
  gateway: GatewaySession;
  transport: StreamableHTTPServerTransport;
  scope: SessionScope;
  /** Requests and streams of this session still open (an SSE GET stays open while the client listens). */
  open: number;
  /** When a request last started or ended (ms since the epoch): eviction takes the oldest. */
  lastUsed: number;
  /** Ends the session once it has been idle for the session idle timeout; set while `open` is 0. */
  expiry: NodeJS.Timeout | undefined;
}

/** A scope's stateless lane (2026-07-28) and what keeps it alive. */
interface HttpLane {
  id: string;
  lane: ModernHttpLane;
  node: NodeMcpRequestHandler;
  scope: SessionScope;
  /** Requests and listen streams of this lane still open. */
  open: number;
  /** Ends the lane once it has been idle for the session idle timeout; set while `open` is 0. */
  expiry: NodeJS.Timeout | undefined;
}

const MIN_TOKEN_LENGTH = 16;

function headerOf(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return typeof v === 'string' ? v : undefined;
}

/** The key of a scope's lane: its servers in code-point order, `*` for every server. */
function laneKey(scope: SessionScope): string {
  return scope === undefined ? '*' : [...scope].sort().join(',');
}

function jsonRpcError(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: status === 404 ? -32001 : -32000, message }, id: null }));
}

function optional<K extends string>(key: K, value: string | undefined): { [P in K]?: string } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: string };
}

function sameToken(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

function bearerOf(req: IncomingMessage): string | undefined {
  const auth = req.headers.authorization;
  const m = typeof auth === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(auth) : null;
  return m?.[1];
}

function isLoopbackHost(host: string | undefined, port: number): boolean {
  return host === `127.0.0.1:${port}` || host === `localhost:${port}` || host === `[::1]:${port}`;
}

function isLoopbackOrigin(origin: string): boolean {
  try {
    const { hostname } = new URL(origin);
    return hostname === '127.0.0.1' || hostname === 'localhost' || hostname === '[::1]';
  } catch {
    return false;
  }
}

async function readJsonBody(req: IncomingMessage, limit: number): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new McpReconcilerError(ErrorCode.Usage, `request body is larger than ${limit} bytes`);
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new McpReconcilerError(ErrorCode.Usage, 'request body is not valid JSON');
  }
}

/**
 * Listen on 127.0.0.1 and serve `pool` over streamable HTTP. Rejects with a
 * runtime error when the port cannot be bound (in use, not permitted).
 */
export async function startHttpGateway(pool: GatewayPool, options: HttpGatewayOptions = {}): Promise<HttpGateway> {
  const token = options.token ?? randomBytes(32).toString('hex');
  if (token.length < MIN_TOKEN_LENGTH) {
    throw new McpReconcilerError(ErrorCode.Usage, `the gateway access token must have at least ${MIN_TOKEN_LENGTH} characters`, {
      hint: 'leave it unset to get a random one',
    });
  }
  const maxSessions = options.maxSessions ?? 64;
  const maxBodyBytes = options.maxBodyBytes ?? 4 * 1024 * 1024;
  const idleMs = options.sessionIdleTimeoutMs ?? GATEWAY_SESSION_IDLE_TIMEOUT_MS;
  if (!Number.isSafeInteger(idleMs) || idleMs < 1) {
    throw new McpReconcilerError(ErrorCode.Usage, `the session idle timeout must be a whole number of milliseconds of at least 1, not ${idleMs}`, {
      hint: `leave it unset for ${GATEWAY_SESSION_IDLE_TIMEOUT_MS} (30 minutes)`,
    });
  }
  const bindHost = options.host ?? '127.0.0.1';
  const sessions = new Map<string, HttpSession>();
  const lanes = new Map<string, HttpLane>();
  /** Initializes under way: they count against maxSessions before their session exists. */
  let opening = 0;
  let port = 0;
  let stopping = false;

  const closeSession = async (id: string, reason: SessionCloseReason = 'closed'): Promise<void> => {
    const s = sessions.get(id);
    if (!s) return;
    sessions.delete(id);
    clearTimeout(s.expiry);
    options.onSession?.({ type: 'close', id, scope: s.scope, ...(reason !== 'closed' ? { reason } : {}) });
    // Leaving the pool releases the session's servers: their own idle timeout applies from here.
    await s.gateway.close();
  };

  /** Count `res` as open for session `id` until it closes; the idle countdown starts when the last one does. */
  const track = (id: string, s: HttpSession, res: ServerResponse): void => {
    s.open++;
    s.lastUsed = Date.now();
    clearTimeout(s.expiry);
    s.expiry = undefined;
    res.once('close', () => {
      s.open--;
      s.lastUsed = Date.now();
      if (s.open > 0 || sessions.get(id) !== s) return;
      // Unref'd: an idle session must not keep a stopping process alive.
      s.expiry = setTimeout(() => {
        if (s.open === 0 && sessions.get(id) === s) void closeSession(id, 'idle');
      }, idleMs).unref();
    });
  };

  const closeLane = (key: string, reason: SessionCloseReason = 'closed'): void => {
    const l = lanes.get(key);
    if (!l) return;
    lanes.delete(key);
    clearTimeout(l.expiry);
    options.onSession?.({ type: 'close', id: l.id, scope: l.scope, ...(reason !== 'closed' ? { reason } : {}) });
    l.lane.close();
  };

  /**
   * The stateless lane of `scope`, opened on its first request. It stays
   * attached (its servers held) while requests or listen streams come, and
   * leaves the pool after the session idle timeout, like a 2025 session.
   */
  const laneFor = (scope: SessionScope, res: ServerResponse, who?: GatewayPrincipal): HttpLane => {
    // A scope naming per-principal servers gets a lane per principal: their connections are the principal's own (docs/cluster-principals.md).
    const principal = who && pool.perPrincipal(scope) ? (who.id ?? who.principal) : undefined;
    const key = principal === undefined ? laneKey(scope) : `${principal}/${laneKey(scope)}`;
    let l = lanes.get(key);
    if (!l) {
      const lane = createModernHttpLane(pool, {
        scope,
        ...(principal !== undefined ? { principal } : {}),
        ...(options.callTimeoutMs !== undefined ? { callTimeoutMs: options.callTimeoutMs } : {}),
        ...(options.requestStateGenerator ? { requestStateGenerator: options.requestStateGenerator } : {}),
      });
      l = { id: `stateless:${key}`, lane, node: toNodeHandler(lane.handler, { maxRequestBodySize: maxBodyBytes }), scope, open: 0, expiry: undefined };
      lanes.set(key, l);
      options.onSession?.({ type: 'open', id: l.id, scope });
    }
    const entry = l;
    entry.open++;
    clearTimeout(entry.expiry);
    entry.expiry = undefined;
    res.once('close', () => {
      entry.open--;
      if (entry.open > 0 || lanes.get(key) !== entry) return;
      entry.expiry = setTimeout(() => {
        if (entry.open === 0 && lanes.get(key) === entry) closeLane(key, 'idle');
      }, idleMs).unref();
    });
    return entry;
  };

  /** The least recently used session with nothing open, if any. */
  const idlest = (): string | undefined => {
    let found: [string, HttpSession] | undefined;
    for (const entry of sessions) if (entry[1].open === 0 && (!found || entry[1].lastUsed < found[1].lastUsed)) found = entry;
    return found?.[0];
  };

  const openSession = async (req: IncomingMessage, res: ServerResponse, url: URL, body: unknown, who?: GatewayPrincipal): Promise<void> => {
    while (sessions.size + opening >= maxSessions) {
      const evict = idlest();
      if (evict === undefined) {
        jsonRpcError(
          res,
          503,
          `the gateway has ${maxSessions} sessions and every one is in use (a request or stream open); ` +
            'end a session you no longer need (HTTP DELETE with its Mcp-Session-Id), or try again once one of them is idle',
        );
        return;
      }
      await closeSession(evict, 'evicted');
    }
    opening++;
    try {
      await startSession(req, res, url, body, who);
    } finally {
      opening--;
    }
  };

  const startSession = async (req: IncomingMessage, res: ServerResponse, url: URL, body: unknown, who?: GatewayPrincipal): Promise<void> => {
    let scope: SessionScope;
    try {
      scope = scopeFromRequest(url, req.headers);
      if (who) scope = intersectScope(scope, who.servers);
    } catch (err) {
      jsonRpcError(res, 400, `${describeError(err)}${err instanceof McpReconcilerError && err.hint ? ` (${err.hint})` : ''}`);
      return;
    }
    const gateway = createSessionServer(pool, {
      transport: 'http',
      ...(who ? { principal: who.id ?? who.principal } : {}),
      ...(scope !== undefined ? { scope } : {}),
      ...(options.callTimeoutMs !== undefined ? { callTimeoutMs: options.callTimeoutMs } : {}),
    });
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: options.sessionIdGenerator ?? (() => randomUUID()),
      ...(options.resumable ? { eventStore: new BoundedEventStore() } : {}),
      onsessioninitialized: (id) => {
        const s: HttpSession = { ...(who ? { principal: who.principal } : {}), gateway, transport, scope, open: 0, lastUsed: Date.now(), expiry: undefined };
        sessions.set(id, s);
        track(id, s, res);
        options.onSession?.({ type: 'open', id, scope });
      },
      onsessionclosed: (id) => closeSession(id),
    });
    gateway.server.onclose = () => {
      const id = transport.sessionId;
      if (id) void closeSession(id);
    };
    await gateway.server.connect(transport);
    await transport.handleRequest(req, res, body);
    // An initialize that failed (bad protocol version, …) leaves no session behind.
    if (!transport.sessionId || !sessions.has(transport.sessionId)) await gateway.close();
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    // DNS rebinding: a page on another origin may resolve its own name to 127.0.0.1.
    // The bound IP literal itself is no rebinding risk (a rebound name arrives as that name): other replicas forward to it.
    const boundHost = isIP(bindHost) && req.headers.host === `${bindHost.includes(':') ? `[${bindHost}]` : bindHost}:${port}`;
    if (!isLoopbackHost(req.headers.host, port) && !boundHost && !options.allowedHosts?.includes(req.headers.host ?? '')) {
      return jsonRpcError(res, 403, `the gateway answers only requests addressed to 127.0.0.1 or localhost${options.allowedHosts?.length ? ` or ${options.allowedHosts.join(', ')}` : ''}`);
    }
    const origin = req.headers.origin;
    if (typeof origin === 'string' && !isLoopbackOrigin(origin) && !options.allowedOrigins?.includes(origin)) return jsonRpcError(res, 403, `requests from origin ${origin} are not allowed`);
    const url = new URL(req.url ?? '/', `http://${req.headers.host}`);
    const extra = await options.extraRoute?.(url, req);
    if (extra) {
      res.writeHead(extra.status, { 'content-type': 'application/json', ...extra.headers });
      res.end(extra.body);
      return;
    }
    if (url.pathname !== MCP_PATH) return jsonRpcError(res, 404, `not found: the MCP endpoint is ${MCP_PATH}`);
    let who: GatewayPrincipal | undefined;
    if (options.authenticate) {
      const verdict = await options.authenticate(req);
      if (!('principal' in verdict)) return jsonRpcError(res, verdict.status, verdict.message, verdict.headers);
      who = verdict;
    } else if (!bearerOf(req) || !sameToken(bearerOf(req)!, token)) {
      return jsonRpcError(res, 401, 'missing or wrong access token: send "Authorization: Bearer <token>" with the token `mcp-reconciler serve --http` printed', {
        'www-authenticate': 'Bearer realm="mcp-reconciler"',
      });
    }
    if (stopping) return jsonRpcError(res, 503, 'the gateway is shutting down');
    const sessionId = req.headers['mcp-session-id'];
    if (typeof sessionId === 'string') {
      const s = sessions.get(sessionId);
      if (!s) {
        if (options.unknownSession) {
          await options.unknownSession(sessionId, req, res, (message) => jsonRpcError(res, 404, message));
          return;
        }
        return jsonRpcError(res, 404, `Session not found: it was closed, unused for ${idleMs} ms, or the gateway restarted; initialize a new session`);
      }
      // Another principal must not ride on a session id it learnt: to it, the session does not exist.
      if (s.principal !== who?.principal) return jsonRpcError(res, 404, 'Session not found: it belongs to another principal; initialize a session of your own');
      track(sessionId, s, res);
      return s.transport.handleRequest(req, res);
    }
    if (req.method !== 'POST') return jsonRpcError(res, 400, 'no Mcp-Session-Id header: start a session with an initialize request (POST)');
    let body: unknown;
    try {
      body = await readJsonBody(req, maxBodyBytes);
    } catch (err) {
      return jsonRpcError(res, 400, describeError(err));
    }
    if (isInitializeRequest(body)) return openSession(req, res, url, body, who);
    const era = classifyInboundRequest({
      httpMethod: 'POST',
      body,
      ...optional('protocolVersionHeader', headerOf(req, 'mcp-protocol-version')),
      ...optional('mcpMethodHeader', headerOf(req, 'mcp-method')),
      ...optional('mcpNameHeader', headerOf(req, 'mcp-name')),
    });
    if (era.kind === 'legacy') {
      return jsonRpcError(
        res,
        400,
        'no Mcp-Session-Id header: the first request of a session must be initialize (protocol 2025-11-25 and older), ' +
          'or the request must carry the per-request _meta envelope of protocol 2026-07-28',
      );
    }
    // The 2026-07-28 lane; a malformed envelope is the SDK's to answer (with its precise error).
    const state = requestStateOf(body);
    if (state !== undefined && options.foreignRequestState && (await options.foreignRequestState(state, body, req, res))) return;
    let scope: SessionScope;
    try {
      scope = scopeFromRequest(url, req.headers);
      if (who) scope = intersectScope(scope, who.servers);
    } catch (err) {
      return jsonRpcError(res, 400, `${describeError(err)}${err instanceof McpReconcilerError && err.hint ? ` (${err.hint})` : ''}`);
    }
    const lane = laneFor(scope, res, who);
    // A listen stream naming resources holds their subscriptions while it is open.
    const uris = listenedResources(body);
    if (uris.length > 0) res.once('close', lane.lane.resources.watch(uris));
    // A tools/call the SDK would dispatch as it is skips its per-request plumbing (same server handlers, same answers).
    const call = options.sdkCallPath ? undefined : directCallOf(era, req);
    if (call) return lane.lane.calls().serve(call, req, res);
    return lane.node(req, res, body);
  };

  const http: HttpServer = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => jsonRpcError(res, 500, `gateway error: ${describeError(err)}`));
  });
  await new Promise<void>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => {
      const code = err.code;
      reject(
        new McpReconcilerError(
          ErrorCode.ConnectFailed,
          code === 'EADDRINUSE'
            ? `port ${options.port} on ${bindHost} is already in use`
            : `cannot listen on ${bindHost}:${options.port ?? 0}: ${err.message}`,
          { hint: 'pick another port with --port N, or leave --port out to get a free one', cause: err },
        ),
      );
    };
    http.once('error', onError);
    http.listen(options.port ?? 0, bindHost, () => {
      http.off('error', onError);
      resolve();
    });
  });
  port = (http.address() as AddressInfo).port;

  let closing: Promise<void> | undefined;
  return {
    url: `http://${bindHost.includes(':') ? `[${bindHost}]` : bindHost}:${port}${MCP_PATH}`,
    port,
    token,
    sessions: () => [...sessions.entries()].map(([id, s]) => ({ id, scope: s.scope, idle: s.open === 0, ...(s.principal !== undefined ? { principal: s.principal } : {}) })),
    close: () => {
      closing ??= (async () => {
        stopping = true;
        await Promise.allSettled([...sessions.keys()].map((id) => closeSession(id)));
        for (const key of [...lanes.keys()]) closeLane(key);
        // Open SSE streams would keep close() waiting forever.
        http.closeAllConnections();
        await new Promise<void>((resolve) => http.close(() => resolve()));
      })();
      return closing;
    },
  };
}
