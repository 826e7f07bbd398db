/**
 * Building the transport a server entry asks for: a stdio child, streamable
 * HTTP, SSE (also as the fallback of an `http` entry) or an in-process SDK
 * server. The connection owns what is built; this file only makes it.
 */
import { resolve as resolvePath } from 'node:path';
import { InMemoryTransport, SSEClientTransport, StreamableHTTPClientTransport, type FetchLike, type JSONRPCMessage, type Transport } from '@modelcontextprotocol/client';
import type { ServerConfig } from '../../machines/types.js';
import { runHeadersHelper } from './headers-helper.js';
import { describeError, ErrorCode, McpReconcilerError } from '../errors.js';
import type { transportOf } from '../config/identity.js';
import { childEnv, type EnvPolicy } from './env.js';
import { HelperHeaders } from './helper-headers.js';
import { configError, httpStatusOf, isPermanentStatus, protocolRejectionOf } from './errors.js';
import type { ProcessTracker } from './processes.js';
import { sessionLossFetch, type SessionLoss } from './session-loss.js';
import { StdioProcessTransport } from './stdio-transport.js';

type TransportKind = ReturnType<typeof transportOf>;

/** What building a server's transport needs, and where the transports report back to. */
export interface TransportContext {
  server: string;
  config: ServerConfig;
  kind: TransportKind;
  /** Workspace root: a relative `cwd` in the config is resolved against it. */
  cwd: string;
  parentEnv: NodeJS.ProcessEnv;
  envPolicy?: EnvPolicy;
  tracker: ProcessTracker;
  signal?: AbortSignal;
  /** A stdio child runs. */
  onSpawn?: (pid: number) => void;
  /** A stdio child's first answer to a request. */
  onAnswer?: (message: JSONRPCMessage) => void;
  /** A stdio child wrote to stderr. */
  onStderr?: (chunk: Buffer) => void;
  /** Wraps the HTTP fetch (the OAuth layer). */
  wrapFetch?: (next: FetchLike) => FetchLike;
  /** Every HTTP status the server answered with, after OAuth had its say. */
  onStatus(status: number): void;
  /** A streamable-HTTP session that is gone (SPEC §5). */
  onSessionLoss(loss: SessionLoss): void;
  /** Told the transport as soon as it exists, before any await a timeout could cut short, so a close reaches it. */
  onTransport(transport: Transport): void;
  /** A re-run of the `headersHelper` after a 401 failed (the 401 then stands). */
  onHelperRerunFailed?(err: unknown): void;
}

/** A built transport and the concrete kinds the connection needs to reach. */
export interface BuiltTransport {
  transport: Transport;
  stdio?: StdioProcessTransport;
  http?: StreamableHTTPClientTransport;
  /** What the entry's `headersHelper` printed, kept fresh after a 401; merged over `headers`, never logged. */
  helper?: HelperHeaders;
}

/** Any object with `connect(transport)`: an SDK `McpServer` or low-level `Server` (v1 or v2). */
interface ConnectableServer {
  connect(transport: Transport): Promise<void>;
}

function isConnectable(value: unknown): value is ConnectableServer {
  return value !== null && typeof value === 'object' && typeof (value as { connect?: unknown }).connect === 'function';
}

function serverEnv(ctx: TransportContext): ReturnType<typeof childEnv> {
  return childEnv(ctx.parentEnv, ctx.config.env, ctx.envPolicy);
}

/** Build the transport of `ctx.config` (running its `headersHelper` first for a remote one). */
export async function buildTransport(ctx: TransportContext): Promise<BuiltTransport> {
  const config = ctx.config;
  let helper: HelperHeaders | undefined;
  const command = config.headersHelper;
  if (command !== undefined && (ctx.kind === 'http' || ctx.kind === 'sse')) {
    const run = (signal: AbortSignal | undefined): Promise<Record<string, string>> =>
      runHeadersHelper({ server: ctx.server, url: config.url, command, cwd: ctx.cwd, env: serverEnv(ctx), ...(signal ? { signal } : {}) });
    helper = new HelperHeaders(await run(ctx.signal), run, (err) => ctx.onHelperRerunFailed?.(err));
  }
  switch (ctx.kind) {
    case 'stdio': {
      if (!config.command) throw configError(ctx.server, 'has no "command"', 'Set "command" (and "args") for a stdio server.');
      const stdio = new StdioProcessTransport({
        command: config.command,
        args: config.args ?? [],
        env: serverEnv(ctx),
        cwd: resolvePath(ctx.cwd, config.cwd ?? '.'),
        tracker: ctx.tracker,
        ...(ctx.onSpawn ? { onSpawn: ctx.onSpawn } : {}),
        ...(ctx.onAnswer ? { onAnswer: ctx.onAnswer } : {}),
        ...(ctx.onStderr ? { onStderr: ctx.onStderr } : {}),
      });
      return { transport: stdio, stdio };
    }
    case 'http': {
      const http = new StreamableHTTPClientTransport(serverUrl(ctx.server, config.url), {
        requestInit: { headers: { ...(config.headers ?? {}), ...helper?.headers } },
        fetch: sessionLossFetch((loss) => ctx.onSessionLoss(loss), recordingFetch(ctx, helper)),
      });
      return { transport: http, http, ...(helper ? { helper } : {}) };
    }
    case 'sse':
      return { transport: await sseTransport(ctx, helper), ...(helper ? { helper } : {}) };
    case 'sdk':
      return { transport: await linkInProcess(ctx) };
  }
}

/** An SSE transport for the entry: its own kind, or the fallback of an `http` entry. */
export async function sseTransport(ctx: TransportContext, helper: HelperHeaders | undefined): Promise<SSEClientTransport> {
  return new SSEClientTransport(serverUrl(ctx.server, ctx.config.url), {
    requestInit: { headers: { ...(ctx.config.headers ?? {}), ...helper?.headers } },
    fetch: recordingFetch(ctx, helper),
  });
}

/**
 * Whether a failed streamable-HTTP connect should be retried over SSE: the
 * entry asks for it (`fallbackToSse`, VS Code's and Cursor's rule for `type:
 * http`) and the server answered the first request with a 4xx other than
 * 401 (credentials, not the transport), 408 or 429 (come back later). A 404
 * here is the path an SSE-only server does not serve, not a lost session.
 */
export function shouldFallBackToSse(err: unknown, s: { config: ServerConfig; kind: TransportKind; used: TransportKind; sawUnauthorized: boolean; permanentStatus: number | undefined }): boolean {
  if (s.kind !== 'http' || s.used !== 'http' || s.config.fallbackToSse !== true || s.sawUnauthorized) return false;
  // A server refusing our protocol revision speaks streamable HTTP, just a newer revision of it.
  if (protocolRejectionOf(err)) return false;
  const status = httpStatusOf(err) ?? s.permanentStatus;
  return status === 404 || isPermanentStatus(status);
}

/** The entry's URL, or the permanent config error saying what is wrong with it. */
function serverUrl(server: string, raw: string | undefined): URL {
  if (!raw) throw configError(server, 'has no "url"', 'Set "url" for an http or sse server.');
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw configError(server, `has an invalid "url": ${raw}`, 'Use an absolute http:// or https:// URL.');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw configError(server, `has a "url" that is not http(s): ${url.protocol}`, 'Use an absolute http:// or https:// URL.');
  }
  return url;
}

/** A fetch that reports every status, so a connect failure can be told apart (needs_auth, permanent). */
function recordingFetch(ctx: TransportContext, helper: HelperHeaders | undefined): FetchLike {
  // OAuth sits closest to the network, then the headers helper's re-run: a 401 either resolves is never reported here.
  const authed: FetchLike = ctx.wrapFetch ? ctx.wrapFetch((u, i) => fetch(u, i)) : (u, i) => fetch(u, i);
  const send = helper ? helper.wrap(authed) : authed;
  return async (url, init) => {
    const response = await send(url, init);
    ctx.onStatus(response.status);
    return response;
  };
}

/** Link an in-process SDK server to a fresh in-memory client transport. */
async function linkInProcess(ctx: TransportContext): Promise<Transport> {
  const instance = ctx.config.instance;
  if (!isConnectable(instance)) {
    throw configError(ctx.server, 'has no in-process server instance', 'Pass an McpServer or Server object as "instance" of an sdk server.');
  }
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  // Known before the await, so a timeout meanwhile still closes both ends.
  ctx.onTransport(clientSide);
  try {
    await instance.connect(serverSide);
  } catch (err) {
    throw new McpReconcilerError(ErrorCode.ConnectFailed, `in-process server could not accept a connection: ${describeError(err)}`, {
      hint: 'An SDK server instance serves one client at a time; close its previous connection first.',
      cause: err,
    });
  }
  return clientSide;
}
