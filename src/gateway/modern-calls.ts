/**
 * The direct path of the 2026-07-28 HTTP lane for `tools/call` (SPEC §15,
 * docs/gateway-http-calls.md). The SDK's stateless handler builds, for every
 * request, a web `Request`, a server instance, a per-request transport and
 * a web `Response` that is read back into the Node response; for the
 * gateway's most frequent request that plumbing cost more CPU than the call
 * itself. Here one server instance per lane (the same handlers,
 * {@link createModernServer}) stays connected to a transport that carries
 * any number of concurrent exchanges, each request's answer written straight
 * to its `ServerResponse`.
 *
 * What stays the SDK's: the dispatch, the request and result validation, the
 * result encoding (`resultType`, `serverInfo`) and the error answers, all in
 * the server instance, which the transport binds to the request's revision
 * exactly as the SDK's per-request transport does (it is one). Per-request
 * state stays per request: the `_meta` envelope travels in each message, the
 * headers in each exchange's context. Only requests the SDK would hand to
 * its dispatch unchanged take this path ({@link directCallOf}); every other
 * request, valid or not, goes to the SDK's handler and gets its answer.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  isJsonContentType,
  PerRequestHTTPServerTransport,
  ProtocolErrorCode,
  SdkError,
  SdkErrorCode,
  type InboundClassificationOutcome,
  type JSONRPCMessage,
  type JSONRPCRequest,
  type MessageExtraInfo,
  type RequestId,
  type Server as ServerV2,
  type TransportSendOptions,
} from '@modelcontextprotocol/server';

/** The revision this path serves; any other goes to the SDK's handler. */
export const DIRECT_CALL_REVISION = '2026-07-28';

/** The SDK's SSE keep-alive interval (its default, which the lane's handler keeps). */
const SSE_KEEP_ALIVE_MS = 15_000;

/** The header mismatch code of the SDK's validation ladder (SEP-2243). */
const HEADER_MISMATCH = -32020;

/**
 * HTTP status of an error sent while the message is being dispatched (the
 * SDK's ladder: the per-request transport's table), and of a missing client
 * capability whenever it is sent; every other error is in-band (200).
 */
const LADDER_STATUS: Readonly<Record<number, number>> = {
  [ProtocolErrorCode.ParseError]: 400,
  [ProtocolErrorCode.InvalidRequest]: 400,
  [ProtocolErrorCode.MethodNotFound]: 404,
  [ProtocolErrorCode.UnsupportedProtocolVersion]: 400,
  [ProtocolErrorCode.MissingRequiredClientCapability]: 400,
  [HEADER_MISMATCH]: 400,
};

/** The SDK's headers of an SSE answer, in the order its `Response` lists them. */
const SSE_HEADERS = {
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'content-type': 'text/event-stream',
  'x-accel-buffering': 'no',
} as const;

/** HTTP optional whitespace around a header value, as the SDK strips it. */
const OWS = /^[\t ]+|[\t ]+$/g;

function headerOf(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return typeof v === 'string' ? v : undefined;
}

/**
 * The `tools/call` request of `route` when the SDK's handler would pass it
 * to its dispatch as it is: classified on {@link DIRECT_CALL_REVISION}, a
 * JSON body, and the standard headers present and naming what the body
 * does. `undefined` sends the request to the SDK's handler (every refusal,
 * every other method, `subscriptions/listen` and `server/discover` included).
 */
export function directCallOf(route: InboundClassificationOutcome, req: IncomingMessage): JSONRPCRequest | undefined {
  if (route.kind !== 'modern' || route.messageKind !== 'request') return undefined;
  const message = route.message;
  if (message.method !== 'tools/call' || route.classification.revision !== DIRECT_CALL_REVISION) return undefined;
  if (req.method !== 'POST' || !isJsonContentType(headerOf(req, 'content-type') ?? null)) return undefined;
  // The classifier checked that these agree with the body when present; the SDK refuses them absent.
  if (headerOf(req, 'mcp-protocol-version') === undefined || headerOf(req, 'mcp-method') === undefined) return undefined;
  const name = (message.params as { name?: unknown } | undefined)?.name;
  const nameHeader = headerOf(req, 'mcp-name')?.replace(OWS, '');
  // A Base64 sentinel or any difference is the SDK's to judge.
  if (typeof name !== 'string' || nameHeader !== name || nameHeader.includes('=?')) return undefined;
  return message;
}

/** What a handler sees of the HTTP request (`ctx.http.req`): its method, URL and headers. */
function requestView(req: IncomingMessage): Request {
  const headers = {
    get: (name: string): string | null => {
      const v = req.headers[name.toLowerCase()];
      return v === undefined ? null : Array.isArray(v) ? v.join(', ') : v;
    },
    has: (name: string): boolean => req.headers[name.toLowerCase()] !== undefined,
  };
  // A view, not a web Request: building one (headers and body copied) is the cost this path saves.
  return { method: req.method ?? 'POST', url: `http://${req.headers.host ?? 'localhost'}${req.url ?? '/'}`, headers } as unknown as Request;
}

/** One HTTP exchange in flight. */
interface Exchange {
  /** The client's JSON-RPC id (the server sees a unique one). */
  readonly id: RequestId;
  readonly res: ServerResponse;
  /** Set once a notification made the answer an SSE stream. */
  sse?: { keepAlive: NodeJS.Timeout };
  /** While the message is being delivered: an error now is the ladder's. */
  dispatching: boolean;
  done: boolean;
}

/**
 * A transport carrying many exchanges to one server instance. It is the
 * SDK's per-request transport (so connecting binds the instance to the
 * revision, as the SDK's handler does), with the exchange bookkeeping its
 * own: each request gets a unique id for the server's request table, mapped
 * back to the client's id in the answer.
 */
class ExchangeTransport extends PerRequestHTTPServerTransport {
  private readonly exchanges = new Map<number, Exchange>();
  private seq = 0;
  private shut = false;

  constructor(private readonly abortRequest: (id: number, reason: unknown) => void) {
    super({ classification: { era: 'modern', revision: DIRECT_CALL_REVISION } });
  }

  /** Deliver `message` to the server; its answer goes to `res`. */
  serve(message: JSONRPCRequest, req: IncomingMessage, res: ServerResponse): void {
    if (this.shut) {
      // What the SDK's handler answers once closed (its fetch throws; the Node adapter answers 500).
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: ProtocolErrorCode.InternalError, message: 'Internal server error' }, id: message.id }));
      return;
    }
    const id = ++this.seq;
    const ex: Exchange = { id: message.id, res, dispatching: true, done: false };
    this.exchanges.set(id, ex);
    // The client gave up (closed the connection): the call is cancelled, as when the SDK's exchange closes.
    res.once('close', () => {
      if (ex.done) return;
      this.finish(id, ex);
      this.abortRequest(id, new SdkError(SdkErrorCode.ConnectionClosed, 'Connection closed'));
    });
    const extra: MessageExtraInfo = { classification: { era: 'modern', revision: DIRECT_CALL_REVISION }, request: requestView(req) };
    try {
      this.onmessage?.({ ...message, id }, extra);
    } finally {
      ex.dispatching = false;
    }
  }

  override async start(): Promise<void> {
    await super.start();
  }

  override async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    const isResponse = 'id' in message && ('result' in message || 'error' in message);
    const key = isResponse ? message.id : options?.relatedRequestId;
    const ex = typeof key === 'number' ? this.exchanges.get(key) : undefined;
    if (ex === undefined || ex.done) {
      if (isResponse && ex === undefined) this.onerror?.(new Error(`Received a response for an unknown request id: ${String(message.id)}`));
      return;
    }
    if (!isResponse) {
      // A notification of the request (progress): the answer becomes an SSE stream, as the SDK's does.
      this.upgrade(ex);
      this.frame(ex, message);
      return;
    }
    const answer = { ...message, id: ex.id } as JSONRPCMessage;
    this.finish(key as number, ex);
    if (ex.sse) {
      this.frame(ex, answer);
      ex.res.end();
      return;
    }
    const code = 'error' in answer ? answer.error.code : undefined;
    const ladder = code !== undefined && (ex.dispatching || code === ProtocolErrorCode.MissingRequiredClientCapability) ? LADDER_STATUS[code] : undefined;
    ex.res.writeHead(ladder ?? 200, { 'content-type': 'application/json' });
    ex.res.end(JSON.stringify(answer));
  }

  override async close(): Promise<void> {
    if (this.shut) return;
    this.shut = true;
    for (const [id, ex] of [...this.exchanges]) {
      this.finish(id, ex);
      // What the SDK's handler answers an exchange its closing cut short.
      if (ex.sse) ex.res.end();
      else ex.res.writeHead(499).end();
    }
    this.onclose?.();
  }

  private finish(id: number, ex: Exchange): void {
    ex.done = true;
    this.exchanges.delete(id);
    if (ex.sse) clearInterval(ex.sse.keepAlive);
  }

  private upgrade(ex: Exchange): void {
    if (ex.sse) return;
    ex.res.writeHead(200, SSE_HEADERS);
    const keepAlive = setInterval(() => ex.res.write(': keepalive\n\n'), SSE_KEEP_ALIVE_MS);
    keepAlive.unref();
    ex.sse = { keepAlive };
  }

  private frame(ex: Exchange, message: JSONRPCMessage): void {
    ex.res.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
  }
}

/** A lane's direct `tools/call` path: one server instance serving every such request of the lane. */
export class DirectCalls {
  private readonly transport: ExchangeTransport;
  private readonly connected: Promise<void>;

  constructor(private readonly server: ServerV2) {
    this.transport = new ExchangeTransport((id, reason) => this.abortRequest(id, reason));
    this.connected = server.connect(this.transport);
  }

  /** Answer `message` (from {@link directCallOf}) on `res`. */
  async serve(message: JSONRPCRequest, req: IncomingMessage, res: ServerResponse): Promise<void> {
    await this.connected;
    this.transport.serve(message, req, res);
  }

  /** Stop: open exchanges end, calls in progress are aborted. */
  close(): Promise<void> {
    return this.server.close();
  }

  /** Abort one request's handler, as the SDK does when that request's exchange closes (it closes the instance). */
  private abortRequest(id: number, reason: unknown): void {
    // The protocol's table of running requests: per instance, which here serves many exchanges.
    const running = (this.server as unknown as { _requestHandlerAbortControllers?: Map<RequestId, AbortController> })._requestHandlerAbortControllers;
    running?.get(id)?.abort(reason);
  }
}
