/**
 * The gateway over stdio: one session, the client at the other end of our
 * stdin/stdout (Claude Desktop, Cursor, VS Code start us as their server).
 * The client's first message picks the protocol era (SPEC §15): an
 * `initialize` (or any message without the 2026-07-28 `_meta` envelope)
 * opens the 2025 lane (src/gateway/server.ts); `server/discover` or a
 * request carrying the envelope opens the 2026-07-28 lane
 * (src/gateway/modern.ts) for the rest of the connection.
 */
import { PassThrough, Transform, Writable, type Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { PROTOCOL_VERSION_META_KEY, type Server as ServerV2 } from '@modelcontextprotocol/server';
import { serveStdio as serveStdioV2, StdioServerTransport as StdioServerTransportV2, type StdioServerHandle } from '@modelcontextprotocol/server/stdio';
import type { GatewayPool } from './pool.js';
import { createSessionServer, type GatewaySession } from './server.js';
import type { SessionScope } from './scope.js';
import { createModernLane, createModernServer } from './modern.js';
import { listenedResources } from './listened-resources.js';

/** Options of {@link serveStdio}. */
export interface StdioGatewayOptions {
  stdin: NodeJS.ReadableStream;
  /** Where JSON-RPC goes: a stream, or anything with `write` (wrapped). */
  stdout: NodeJS.WritableStream | { write(chunk: string): unknown };
  scope?: SessionScope;
  callTimeoutMs?: number;
}

/** The protocol era of a stdio connection: the 2025 handshake, or the 2026-07-28 revision. */
export type StdioEra = 'legacy' | 'modern';

/** A running stdio gateway session. */
export interface StdioGateway {
  /** The 2025 lane's session, once the client opened with `initialize`; `undefined` before that and on the 2026-07-28 lane. */
  readonly session: GatewaySession | undefined;
  /** The era the first message chose; `undefined` until it arrived. */
  readonly era: StdioEra | undefined;
  /** Resolves when the client closed our stdin (it exited) or {@link close} was called. */
  readonly closed: Promise<void>;
  close(): Promise<void>;
}

function asWritable(out: StdioGatewayOptions['stdout']): Writable {
  if (out instanceof Writable) return out;
  // A plain `{ write }` (the CLI's io) has no backpressure: every write is done at once.
  return new Writable({
    write(chunk: Buffer | string, _enc, cb) {
      out.write(typeof chunk === 'string' ? chunk : chunk.toString('utf8'));
      cb();
    },
  });
}

/**
 * The era a first message asks for: the 2026-07-28 lane for `server/discover`
 * and anything carrying the revision's `_meta` envelope, else the 2025 lane
 * (which answers an opening other than `initialize` with its own error).
 */
export function eraOfFirstMessage(line: string): StdioEra {
  let message: unknown;
  try {
    message = JSON.parse(line) as unknown;
  } catch {
    return 'legacy';
  }
  if (typeof message !== 'object' || message === null) return 'legacy';
  const { method, params } = message as { method?: unknown; params?: { _meta?: Record<string, unknown> } };
  if (method === 'initialize') return 'legacy';
  if (method === 'server/discover') return 'modern';
  const claimed = params?._meta?.[PROTOCOL_VERSION_META_KEY];
  return typeof claimed === 'string' && claimed >= '2026-07-28' ? 'modern' : 'legacy';
}

/** A pass-through that also hands each complete JSON line it carries to `onMessage` (unparsable lines are the SDK's to answer). */
function lineTap(onMessage: (message: unknown) => void): Transform {
  let pending = '';
  const decoder = new StringDecoder('utf8');
  return new Transform({
    transform(chunk: Buffer | string, _enc, cb) {
      pending += typeof chunk === 'string' ? chunk : decoder.write(chunk);
      let nl: number;
      while ((nl = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, nl).trim();
        pending = pending.slice(nl + 1);
        if (!line.includes('"subscriptions/listen"') && !line.includes('"notifications/cancelled"')) continue;
        try {
          onMessage(JSON.parse(line) as unknown);
        } catch {
          // not JSON: the transport answers it
        }
      }
      cb(null, chunk);
    },
  });
}

/**
 * Serve `pool` as one MCP session over `stdin`/`stdout`. The session ends
 * when stdin ends: a client that exits closes our stdin, and the gateway
 * must not outlive it with its servers running.
 */
export async function serveStdio(pool: GatewayPool, options: StdioGatewayOptions): Promise<StdioGateway> {
  const stdin = options.stdin as Readable;
  const stdout = asWritable(options.stdout);
  // Hold the scope's servers from the start, as before the era is known: they start while the client opens.
  const early = pool.attach(options.scope, 'stdio', { toolsChanged: () => undefined, promptsChanged: () => undefined });

  let legacy: GatewaySession | undefined;
  let modern: { handle: StdioServerHandle; close(): void } | undefined;
  let era: StdioEra | undefined;
  let resolveClosed!: () => void;
  const closed = new Promise<void>((resolve) => (resolveClosed = resolve));
  let closing: Promise<void> | undefined;

  const chunks: Buffer[] = [];
  const onFirstData = (chunk: Buffer | string): void => {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    chunks.push(buf);
    if (!buf.includes(10)) return;
    stdin.off('data', onFirstData);
    stdin.pause();
    const buffered = Buffer.concat(chunks);
    const line = buffered.subarray(0, buffered.indexOf(10)).toString('utf8');
    // What the transports read: the bytes seen so far, then the rest of stdin.
    const feed = new PassThrough();
    feed.write(buffered);
    stdin.pipe(feed);
    open(eraOfFirstMessage(line), feed).catch(() => void close());
  };

  const open = async (chosen: StdioEra, feed: Readable): Promise<void> => {
    if (closing) return;
    era = chosen;
    if (chosen === 'legacy') {
      legacy = createSessionServer(pool, {
        transport: 'stdio',
        ...(options.scope !== undefined ? { scope: options.scope } : {}),
        ...(options.callTimeoutMs !== undefined ? { callTimeoutMs: options.callTimeoutMs } : {}),
      });
      early.release();
      legacy.server.onclose = () => void close();
      await legacy.server.connect(new StdioServerTransport(feed, stdout));
      return;
    }
    // The pinned instance of the connection: its change notifications go out on the client's listen subscriptions.
    let current: ServerV2 | undefined;
    const lane = createModernLane(pool, {
      scope: options.scope,
      transport: 'stdio',
      ...(options.callTimeoutMs !== undefined ? { callTimeoutMs: options.callTimeoutMs } : {}),
      notifier: () =>
        current && {
          toolsChanged: () => void current?.sendToolListChanged().catch(() => undefined),
          promptsChanged: () => void current?.sendPromptListChanged().catch(() => undefined),
          resourcesChanged: () => void current?.sendResourceListChanged().catch(() => undefined),
          resourceUpdated: (uri) => void current?.sendResourceUpdated({ uri }).catch(() => undefined),
        },
    });
    early.release();
    // The listen streams' resource URIs, read off the client's messages on their way to the SDK.
    const listening = new Map<unknown, () => void>();
    const tapped = feed.pipe(
      lineTap((message) => {
        const uris = listenedResources(message);
        const { id, method, params } = message as { id?: unknown; method?: unknown; params?: { requestId?: unknown } };
        if (uris.length > 0 && !listening.has(id)) listening.set(id, lane.resources.watch(uris));
        else if (method === 'notifications/cancelled' && listening.has(params?.requestId)) {
          listening.get(params?.requestId)?.();
          listening.delete(params?.requestId);
        }
      }),
    );
    const handle = serveStdioV2(
      () => {
        current = createModernServer(pool, lane);
        return current;
      },
      { legacy: 'reject', transport: new StdioServerTransportV2(tapped, stdout) },
    );
    modern = { handle, close: () => lane.close() };
  };

  const close = (): Promise<void> => {
    closing ??= (async () => {
      stdin.off('data', onFirstData);
      stdin.off('end', onEnd);
      stdin.off('close', onEnd);
      early.release();
      if (legacy) await legacy.close();
      if (modern) {
        modern.close();
        await modern.handle.close().catch(() => undefined);
      }
      resolveClosed();
    })();
    return closing;
  };
  const onEnd = (): void => void close();
  stdin.once('end', onEnd);
  stdin.once('close', onEnd);
  stdin.on('data', onFirstData);
  return {
    get session() {
      return legacy;
    },
    get era() {
      return era;
    },
    closed,
    close,
  };
}
