/**
 * The cluster's connection to Redis (docs/cluster.md): `@redis/client`
 * (node-redis, Redis's own maintained client: RESP3, promise API, its own
 * TypeScript types). Commands fail at once while the connection is down
 * (no offline queue), so every reader sees "unreachable" and fails closed
 * instead of waiting; the client keeps reconnecting in the background.
 */
import { createClient, type RedisClientType } from '@redis/client';
import { ErrorCode, McpReconcilerError, describeError } from '../errors.js';

/** A connected client; `duplicate()` gives the subscriber its own connection. */
export type Redis = RedisClientType;

/** How long a first connection is tried before {@link connectRedis} gives up. */
const FIRST_CONNECT_MS = 5_000;

/** Longest wait between two reconnect attempts. */
const MAX_RECONNECT_DELAY_MS = 1_000;

/** `redis://…` / `rediss://…` / `unix:///path` / a socket path (starting with `/` or `.`): the client's options. */
export function redisOptions(target: string): Parameters<typeof createClient>[0] {
  const socketCommon = {
    connectTimeout: 5_000,
    reconnectStrategy: (retries: number) => Math.min(50 * 2 ** Math.min(retries, 5), MAX_RECONNECT_DELAY_MS),
  };
  if (/^rediss?:\/\//i.test(target)) return { url: target, disableOfflineQueue: true, socket: socketCommon };
  const path = target.startsWith('unix://') ? target.slice('unix://'.length) : target;
  if (path.startsWith('/') || path.startsWith('.')) return { disableOfflineQueue: true, socket: { ...socketCommon, path, tls: false } };
  throw new McpReconcilerError(ErrorCode.Usage, `--cluster takes a Redis URL or a unix socket path, not ${JSON.stringify(target)}`, {
    hint: 'e.g. --cluster redis://redis.internal:6379/0, or --cluster /run/redis/redis.sock',
  });
}

/**
 * Connect to `target`; rejects with a `connect_failed` error naming it when
 * Redis does not answer within 5 s. `onError` hears about later connection
 * problems (once per distinct message until the connection is ready again).
 */
export async function connectRedis(target: string, onError: (message: string) => void = () => undefined): Promise<Redis> {
  const options = redisOptions(target)!;
  // Before the first connect a refused or missing socket is retried only for FIRST_CONNECT_MS, then `connect` rejects (else it would retry for ever).
  const started = Date.now();
  let everReady = false;
  const retry = options.socket!.reconnectStrategy as (retries: number, cause: Error) => number;
  options.socket = { ...options.socket!, reconnectStrategy: (retries: number, cause: Error) => (everReady || Date.now() - started < FIRST_CONNECT_MS ? retry(retries, cause) : cause) } as typeof options.socket;
  const client = createClient(options) as unknown as Redis;
  let last: string | undefined;
  client.on('error', (err: unknown) => {
    const message = describeError(err);
    if (message === last) return;
    last = message;
    onError(`Redis at ${target}: ${message}`);
  });
  client.on('ready', () => {
    everReady = true;
    last = undefined;
  });
  try {
    await client.connect();
  } catch (err) {
    client.destroy();
    throw unreachable(target, err);
  }
  return client;
}

/** The error of a Redis that cannot be reached at start. */
export function unreachable(target: string, cause: unknown): McpReconcilerError {
  return new McpReconcilerError(ErrorCode.ConnectFailed, `cannot reach Redis at ${target}: ${describeError(cause)}`, {
    hint: 'start redis-server (Redis 7 or Valkey) there, or point --cluster at the one your replicas share',
    cause,
  });
}

/** Key prefix of one workspace: the `{…}` hash tag keeps a workspace's keys in one Redis Cluster slot. */
export function workspaceKeys(workspaceId: string) {
  const p = `mcpr:{${workspaceId}}`;
  return {
    approvals: `${p}:approvals`,
    approvalsChanged: `${p}:approvals:changed`,
    listing: (fingerprint: string) => `${p}:listing:${fingerprint}`,
    replicas: `${p}:replicas`,
    replica: (id: string) => `${p}:replica:${id}`,
    lease: (server: string) => `${p}:lease:${server}`,
    fence: (server: string) => `${p}:fence:${server}`,
    credential: (principal: string, server: string) => `${p}:cred:${principal}:${server}`,
    credentialLock: (principal: string, server: string) => `${p}:credlock:${principal}:${server}`,
    /** Pub/sub: a credential store's tokens changed; the message is whose (`gateway` or a principal key). */
    credentialsChanged: `${p}:credentials:changed`,
    oauthState: (state: string) => `${p}:oauth-state:${state}`,
  };
}

/** The keys of one workspace (see {@link workspaceKeys}). */
export type WorkspaceKeys = ReturnType<typeof workspaceKeys>;

/** A workspace id: 1 to 64 of letters, digits, `.`, `_`, `-` (it is part of every key). */
export function checkWorkspaceId(id: string): string {
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(id)) {
    throw new McpReconcilerError(ErrorCode.Usage, `--workspace-id must be 1 to 64 letters, digits, ".", "_" or "-", not ${JSON.stringify(id)}`, {
      hint: 'every replica of one gateway uses the same id, e.g. --workspace-id team-tools',
    });
  }
  return id;
}
