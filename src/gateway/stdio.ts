/**
 * The gateway over stdio: one session, the client at the other end of our
 * stdin/stdout (Claude Desktop, Cursor, VS Code start us as their server).
 */
import { Writable } from 'node:stream';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { GatewayPool } from './pool.js';
import { createSessionServer, type GatewaySession } from './server.js';
import type { SessionScope } from './scope.js';

/** Options of {@link serveStdio}. */
export interface StdioGatewayOptions {
  stdin: NodeJS.ReadableStream;
  /** Where JSON-RPC goes: a stream, or anything with `write` (wrapped). */
  stdout: NodeJS.WritableStream | { write(chunk: string): unknown };
  scope?: SessionScope;
  callTimeoutMs?: number;
}

/** A running stdio gateway session. */
export interface StdioGateway {
  readonly session: GatewaySession;
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
 * Serve `pool` as one MCP session over `stdin`/`stdout`. The session ends
 * when stdin ends: a client that exits closes our stdin, and the gateway
 * must not outlive it with its servers running.
 */
export async function serveStdio(pool: GatewayPool, options: StdioGatewayOptions): Promise<StdioGateway> {
  const session = createSessionServer(pool, {
    transport: 'stdio',
    ...(options.scope !== undefined ? { scope: options.scope } : {}),
    ...(options.callTimeoutMs !== undefined ? { callTimeoutMs: options.callTimeoutMs } : {}),
  });
  const stdin = options.stdin as NodeJS.ReadableStream & import('node:stream').Readable;
  const transport = new StdioServerTransport(stdin, asWritable(options.stdout));
  let resolveClosed!: () => void;
  const closed = new Promise<void>((resolve) => (resolveClosed = resolve));
  const close = async (): Promise<void> => {
    stdin.off('end', onEnd);
    stdin.off('close', onEnd);
    await session.close();
    resolveClosed();
  };
  const onEnd = (): void => void close();
  stdin.once('end', onEnd);
  stdin.once('close', onEnd);
  session.server.onclose = () => void close();
  await session.server.connect(transport);
  return { session, closed, close };
}
