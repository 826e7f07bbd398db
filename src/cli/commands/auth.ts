/**
 * `auth SERVER` / `logout SERVER`: OAuth sign-in and sign-out for one remote
 * server of the workspace, from any terminal. Tokens go to the token store
 * (`$MCP_RECONCILER_OAUTH_STORE` or `~/.config/mcp-reconciler/oauth.json`,
 * mode 0600); a running `watch` watches that file and connects a server
 * waiting in `needs_auth` as soon as its tokens appear.
 *
 * With `--cluster REDIS --workspace-id ID` (and the cluster secret) the
 * tokens go to a clustered gateway's sealed credential store in Redis, under
 * the gateway's identity, so its replicas connect the server without a
 * sign-in of their own (docs/cluster-gaps.md); with `--principal KEY`, under
 * that principal's, for a per-principal server (docs/cluster-principals.md).
 */
import type { DesiredServer } from '../../../machines/types.js';
import { OAuthManager } from '../../auth/manager.js';
import { defaultTokenStorePath, FileTokenStore, type TokenStore } from '../../auth/token-store.js';
import { ErrorCode, McpReconcilerError } from '../../errors.js';
import { parseTimeoutMs, serverPositional, type CliCommand, type CliContext, type CliOption } from '../command.js';
import { loadWorkspace } from '../workspace.js';
import { CLUSTER_SECRET_ENV, clusterTargetOptions, parseClusterTarget } from './serve.js';

const DEFAULT_WAIT_MS = 5 * 60_000;

async function serverEntry(ctx: CliContext): Promise<DesiredServer> {
  // main checked the count against the declared `positionals`.
  const [server] = ctx.positionals as [string];
  const ws = await loadWorkspace(ctx.global, ctx.io);
  const entry = Object.hasOwn(ws.assembled.desired, server) ? ws.assembled.desired[server] : undefined;
  if (!entry) {
    const known = Object.keys(ws.assembled.desired);
    throw new McpReconcilerError(ErrorCode.UnknownServer, `no MCP server named "${server}" is configured in ${ctx.global.root}`, {
      hint: known.length ? `configured servers: ${known.join(', ')}` : 'check `mcp-reconciler config`',
    });
  }
  return entry;
}

/** Where the tokens go: the token file, or a cluster's sealed store in Redis (`close` leaves Redis). */
interface StoreTarget {
  store: TokenStore;
  /** For the messages: the file, or the cluster. */
  where: string;
  json: Record<string, string>;
  close(): void;
}

/** A principal's key as `status --cluster` lists it (`principalKey` in src/cluster/credentials.ts). */
const PRINCIPAL_KEY = /^p-[0-9a-f]{32}$/;

/**
 * `--principal KEY`: whose credentials, in a cluster (docs/cluster-principals.md);
 * `gateway` without it. Only for a server each principal signs in to as itself.
 */
function principalOf(ctx: CliContext, entry: DesiredServer, signIn: boolean): string {
  const given = ctx.values.principal;
  if (given === undefined) return 'gateway';
  const key = typeof given === 'string' ? given.trim() : '';
  if (ctx.values.cluster === undefined) {
    throw new McpReconcilerError(ErrorCode.Usage, '--principal applies to --cluster only', { hint: 'a principal signs in to a clustered gateway\'s per-principal servers; add --cluster and --workspace-id' });
  }
  if (!PRINCIPAL_KEY.test(key)) {
    throw new McpReconcilerError(ErrorCode.Usage, `--principal takes a principal's key (p- and 32 hex digits), got "${key}"`, {
      hint: '`mcp-reconciler status --cluster REDIS --workspace-id ID` lists the keys of the principals with a controller (PRINCIPAL)',
    });
  }
  // Signing in for a principal to a server the gateway signs in to once would store tokens nobody reads.
  if (signIn && entry.config.oauth?.perPrincipal !== true) {
    throw new McpReconcilerError(ErrorCode.Usage, `"${entry.name}" is not signed in to per principal: every replica uses the gateway's one sign-in for it`, {
      hint: `drop --principal to sign in as the gateway, or mark the server "oauth": { "perPrincipal": true }`,
    });
  }
  return key;
}

async function tokenStore(ctx: CliContext, principal: string): Promise<StoreTarget> {
  const cluster = parseClusterTarget(ctx.values);
  const flag = ctx.values['token-store'];
  if (!cluster) {
    const store = new FileTokenStore(typeof flag === 'string' ? flag : defaultTokenStorePath(ctx.io.env));
    return { store, where: store.path, json: { tokenStore: store.path }, close: () => undefined };
  }
  if (flag !== undefined) throw new McpReconcilerError(ErrorCode.Usage, '--token-store and --cluster exclude each other', { hint: "with --cluster the tokens go to the cluster's Redis, sealed; drop --token-store" });
  const secret = ctx.io.env[CLUSTER_SECRET_ENV];
  if (!secret) {
    throw new McpReconcilerError(ErrorCode.Usage, `--cluster needs $${CLUSTER_SECRET_ENV}: a cluster keeps OAuth credentials in Redis sealed with it`, {
      hint: `set it to the secret the replicas run with (serve --cluster without it keeps credentials on each replica, and nothing is shared)`,
    });
  }
  // Only with --cluster: without it nothing of Redis is loaded (docs/cluster.md).
  const { connectRedis, RedisTokenStore, checkWorkspaceId, workspaceKeys, sealingKey } = await import('../../cluster/index.js');
  sealingKey(secret); // its length is checked before Redis is reached
  const keys = workspaceKeys(checkWorkspaceId(cluster.workspaceId));
  const redis = await connectRedis(cluster.target);
  // The gateway's own identity towards the managed servers, as `serve --cluster` uses (docs/cluster.md, OAuth credentials),
  // or one principal's (docs/cluster-principals.md).
  const store = new RedisTokenStore({ redis, keys, secret, principal });
  const whose = principal === 'gateway' ? '' : ` for principal ${principal}`;
  return {
    store,
    where: `cluster workspace ${cluster.workspaceId} (Redis at ${cluster.target}, sealed)${whose}`,
    json: { workspaceId: cluster.workspaceId, ...(principal === 'gateway' ? {} : { principal }) },
    close: () => redis.destroy(),
  };
}

async function authRun(ctx: CliContext): Promise<number> {
  const entry = await serverEntry(ctx);
  const timeoutMs = parseTimeoutMs(ctx.values) ?? DEFAULT_WAIT_MS;
  const principal = principalOf(ctx, entry, true);
  const target = await tokenStore(ctx, principal);
  const manager = new OAuthManager({ store: target.store, authorizationTimeoutMs: timeoutMs, warn: (m) => ctx.io.stderr.write(`${m}\n`) });
  try {
    await manager.authorize(entry.name, entry, {
      timeoutMs,
      ...(ctx.io.signal ? { signal: ctx.io.signal } : {}),
      onAuthorizationUrl: (server, url) => {
        if (ctx.global.json) {
          ctx.io.stdout.write(`${JSON.stringify({ server, authorizationUrl: url.href })}\n`);
        } else {
          ctx.io.stdout.write(`Open this URL in a browser to authorise "${server}":\n\n  ${url.href}\n\nWaiting up to ${Math.round(timeoutMs / 1000)} s for the browser to come back…\n`);
        }
      },
    });
  } finally {
    manager.dispose();
    target.close();
  }
  if (ctx.global.json) ctx.io.stdout.write(`${JSON.stringify({ server: entry.name, authorized: true, ...target.json })}\n`);
  else if (principal !== 'gateway') {
    ctx.io.stdout.write(`Authorised "${entry.name}"; tokens stored in ${target.where}. Every replica connects it with them for that principal, as the account you signed in with.\n`);
  } else if (ctx.values.cluster !== undefined) ctx.io.stdout.write(`Authorised "${entry.name}"; tokens stored in ${target.where}. Every replica connects it with them, without a sign-in.\n`);
  else ctx.io.stdout.write(`Authorised "${entry.name}"; tokens stored in ${target.where}. A running watch connects it now.\n`);
  return 0;
}

async function logoutRun(ctx: CliContext): Promise<number> {
  const entry = await serverEntry(ctx);
  const target = await tokenStore(ctx, principalOf(ctx, entry, false));
  const manager = new OAuthManager({ store: target.store });
  let had: boolean;
  try {
    had = await manager.logout(entry);
  } finally {
    manager.dispose();
    target.close();
  }
  if (ctx.global.json) ctx.io.stdout.write(`${JSON.stringify({ server: entry.name, removed: had, ...target.json })}\n`);
  else ctx.io.stdout.write(had ? `Removed the stored OAuth credentials of "${entry.name}" from ${target.where}.\n` : `No OAuth credentials were stored for "${entry.name}" in ${target.where}.\n`);
  return 0;
}

const tokenStoreOption: CliOption = {
  type: 'string',
  value: 'FILE',
  help: 'OAuth token store (default: $MCP_RECONCILER_OAUTH_STORE or ~/.config/mcp-reconciler/oauth.json)',
};

/** serve's `--cluster` / `--workspace-id`, said of the sign-in, and whose credentials. */
const clusterOptions: Record<'cluster' | 'workspace-id' | 'principal', CliOption> = {
  cluster: { ...clusterTargetOptions.cluster, help: `the tokens go to this clustered gateway's Redis (as its serve --cluster), sealed with $${CLUSTER_SECRET_ENV}; needs --workspace-id` },
  'workspace-id': clusterTargetOptions['workspace-id'],
  principal: { type: 'string', value: 'KEY', help: "with --cluster: this principal's credentials (its key p-… as status --cluster lists it) instead of the gateway's; for oauth.perPrincipal servers" },
};

const serverArg = serverPositional('a remote (HTTP) server of this workspace');

/** `auth SERVER`: sign in to a remote server with OAuth (prints the URL, waits for the loopback redirect). */
export const authCommand: CliCommand = {
  name: 'auth',
  positionals: [serverArg],
  summary: 'sign in to a remote server with OAuth; a running watch picks the tokens up',
  options: {
    timeout: { type: 'string', value: 'MS', help: `how long to wait for the browser (default ${DEFAULT_WAIT_MS})` },
    'token-store': tokenStoreOption,
    ...clusterOptions,
  },
  examples: [
    'mcp-reconciler auth linear                  # prints the sign-in URL, waits for the browser, stores the tokens (0600)',
    'mcp-reconciler auth linear --cluster redis://redis.internal:6379/0 --workspace-id team-tools   # for every replica of a clustered gateway',
  ],
  run: authRun,
};

/** `logout SERVER`: forget a remote server's stored OAuth credentials. */
export const logoutCommand: CliCommand = {
  name: 'logout',
  positionals: [serverArg],
  summary: "forget a remote server's stored OAuth credentials",
  options: { 'token-store': tokenStoreOption, ...clusterOptions },
  examples: [
    'mcp-reconciler logout linear                # forget its tokens; it asks to sign in again next time',
    'mcp-reconciler logout linear --cluster redis://redis.internal:6379/0 --workspace-id team-tools',
    'mcp-reconciler logout linear --cluster redis://redis.internal:6379/0 --workspace-id team-tools --principal p-0f3c…   # one principal\'s',
  ],
  run: logoutRun,
};
