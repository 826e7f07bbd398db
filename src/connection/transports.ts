/**
 * Building the transport a server entry asks for: a stdio child, streamable
 * HTTP, SSE (also as the fallback of an `http` entry) or an in-process SDK
 * server. The connection owns what is built; this file only makes it.
 */
import { resolve as resolvePath } from 'node:path';
import type { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { FetchLike, Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { ServerConfig } from '../../machines/types.js';
import { runHeadersHelper } from '../config/headers-helper.js';
import { describeError, ErrorCode, McpReconcilerError } from '../errors.js';
import type { transportOf } from '../gating/fingerprint.js';
import { childEnv, type EnvPolicy } from './env.js';
import { configError, httpStatusOf, isPermanentStatus } from './errors.js';
import { loadHttpSdk } from './http-sdk.js';
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
}

/** A built transport and the concrete kinds the connection needs to reach. */
export interface BuiltTransport {
  transport: Transport;
  stdio?: StdioProcessTransport;
  http?: StreamableHTTPClientTransport;
  /** What the entry's `headersHelper` printed for this connect; merged over `headers`, never logged. */
  helperHeaders: Record<string, string>;
}

/** Any object with `connect(transport)`: an SDK `McpServer` or low-level `Server`. */
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
  let helperHeaders: Record<string, string> = {};
  if (config.headersHelper !== undefined && (ctx.kind === 'http' || ctx.kind === 'sse')) {
    helperHeaders = await runHeadersHelper({ server: ctx.server, url: config.url, command: config.headersHelper, cwd: ctx.cwd, env: serverEnv(ctx), ...(ctx.signal ? { signal: ctx.signal } : {}) });
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
        ...(ctx.onStderr ? { onStderr: ctx.onStderr } : {}),
      });
      return { transport: stdio, stdio, helperHeaders };
    }
    case 'http': {
      const { StreamableHTTPClientTransport } = await loadHttpSdk();
      const http = new StreamableHTTPClientTransport(serverUrl(ctx.server, config.url), {
        requestInit: { headers: { ...(config.headers ?? {}), ...helperHeaders } },
        fetch: sessionLossFetch((loss) => ctx.onSessionLoss(loss), recordingFetch(ctx)),
      });
      return { transport: http, http, helperHeaders };
    }
    case 'sse':
      return { transport: await sseTransport(ctx, helperHeaders), helperHeaders };
    case 'sdk':
      return { transport: await linkInProcess(ctx), helperHeaders };
  }
}

/** An SSE transport for the entry: its own kind, or the fallback of an `http` entry. */
export async function sseTransport(ctx: TransportContext, helperHeaders: Record<string, string>): Promise<SSEClientTransport> {
  const { SSEClientTransport } = await loadHttpSdk();
  return new SSEClientTransport(serverUrl(ctx.server, ctx.config.url), {
    requestInit: { headers: { ...(ctx.config.headers ?? {}), ...helperHeaders } },
    fetch: recordingFetch(ctx),
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
function recordingFetch(ctx: TransportContext): FetchLike {
  // OAuth sits closest to the network, so a 401 it resolves is never reported here.
  const send: FetchLike = ctx.wrapFetch ? ctx.wrapFetch((u, i) => fetch(u, i)) : (u, i) => fetch(u, i);
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
