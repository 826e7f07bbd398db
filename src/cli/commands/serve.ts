import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { DesiredServer } from '../../../machines/types.js';
import { createMcpController, type McpController } from '../../controller/controller.js';
import { describeReason, shellQuote } from '../../controller/messages.js';
import { formatIssue } from '../../config/sources.js';
import { ErrorCode, McpReconcilerError, describeError } from '../../errors.js';
// Only the scope parser is loaded with the CLI; the SDK's server side loads when serve runs.
import { parseServerList, type SessionScope } from '../../gateway/scope.js';
import { validateSeparator } from '../../gateway/naming.js';
import type { StdioGateway } from '../../gateway/stdio.js';
import type { HttpGateway, SessionCloseReason } from '../../gateway/http.js';
import type { GatewayPool } from '../../gateway/pool.js';
import type { PrincipalSignIns } from '../../cluster/oauth-callback.js';
import { parseTimeoutMs, type CliCommand, type CliContext, type CliOption } from '../command.js';
import { controllerOptionsFor } from '../controller-session.js';
import { writeRaw } from '../output.js';
import { untilStopped } from '../until-stopped.js';
import type { ToolExposure, ToolExposureMode } from '../../search/exposure.js';

/** The cluster secret (docs/cluster.md): OAuth credentials are sealed in Redis with a key derived from it. */
export const CLUSTER_SECRET_ENV = 'MCP_RECONCILER_CLUSTER_SECRET';

/** How long a singleton server's lease lasts without renewal, in ms (docs/cluster.md; the same on every replica). */
export const LEASE_MS_ENV = 'MCP_RECONCILER_LEASE_MS';

/** Environment variable that fixes the HTTP access token (for client config files); random when unset. */
export const GATEWAY_TOKEN_ENV = 'MCP_RECONCILER_GATEWAY_TOKEN';

function usage(message: string, hint: string): McpReconcilerError {
  return new McpReconcilerError(ErrorCode.Usage, message, { hint });
}

export interface ServeArgs {
  stdio: boolean;
  http: boolean;
  port: number;
  scope: SessionScope;
  callTimeoutMs: number | undefined;
  token: string | undefined;
  resumable: boolean;
  lazy: boolean;
  idleTimeoutMs: number | undefined;
  sessionIdleTimeoutMs: number | undefined;
  /** `--max-sessions`: the HTTP gateway's cap on open sessions (docs/cluster.md's capacity model). */
  maxSessions: number | undefined;
  separator: string | undefined;
  exposure: ToolExposure | undefined;
  /** `--cluster` and `--workspace-id` (docs/cluster.md). */
  cluster: ClusterArgs | undefined;
  /** `--bind`: the address to listen on. */
  bind: string | undefined;
  allowedHosts: string[];
  allowedOrigins: string[];
}

interface ClusterArgs {
  target: string;
  workspaceId: string;
  /** Principal auth: the identity provider (`--auth-issuer`), its keys (`--auth-jwks`), our resource URL (`--public-url`). */
  issuer: string;
  jwksUrl: string;
  publicUrl: string | undefined;
  /** `--replica-url`: where the other replicas reach this one to forward its sessions' requests. */
  replicaUrl: string | undefined;
}

const LOOPBACK_BINDS = new Set(['127.0.0.1', '::1', 'localhost']);

function strings(v: CliContext['values'], key: string): string[] {
  const raw = v[key];
  const list = Array.isArray(raw) ? raw : raw === undefined ? [] : [raw];
  return list.filter((x): x is string => typeof x === 'string').map((x) => x.trim()).filter(Boolean);
}

function httpUrl(v: CliContext['values'], key: string): string | undefined {
  const raw = v[key];
  if (raw === undefined) return undefined;
  try {
    const u = new URL(String(raw));
    if (u.protocol === 'https:' || u.protocol === 'http:') return u.href;
  } catch {
    // reported below
  }
  throw usage(`--${key} must be an http(s) URL, not ${JSON.stringify(String(raw))}`, `e.g. --${key} https://id.example.com${key === 'auth-jwks' ? '/.well-known/jwks.json' : key === 'public-url' ? '/mcp' : ''}`);
}

/** The most `--max-sessions` takes (a bound against typos: 100 000 sessions already take 5–16 GB, docs/cluster.md). */
const MAX_SESSIONS_LIMIT = 100_000;

/** `--max-sessions N`: a whole number from 1 to {@link MAX_SESSIONS_LIMIT}, with --http only. */
function parseMaxSessions(v: CliContext['values'], http: boolean): number | undefined {
  const raw = v['max-sessions'];
  if (raw === undefined) return undefined;
  if (!http) throw usage('--max-sessions applies to --http only', 'a stdio gateway serves one session; add --http, or drop --max-sessions');
  const text = typeof raw === 'string' ? raw.trim() : '';
  const n = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!(n >= 1 && n <= MAX_SESSIONS_LIMIT)) {
    throw usage(`--max-sessions must be a whole number from 1 to ${MAX_SESSIONS_LIMIT}, not ${JSON.stringify(String(raw))}`, 'e.g. --max-sessions 2000 for a cluster replica (default 64)');
  }
  return n;
}

/** What a logged cluster sign-in URL is good for (docs/cluster-oauth.md). */
const SIGN_IN_NOTE = '(the browser may come back to any replica; the URL works once, for 10 minutes)';

/** The servers of `desired` that are (or are not) per-principal (`oauth.perPrincipal`, docs/cluster-principals.md). */
function serversWhere(desired: Record<string, DesiredServer>, perPrincipal: boolean): Record<string, DesiredServer> {
  return Object.fromEntries(Object.entries(desired).filter(([, entry]) => (entry.config.oauth?.perPrincipal === true) === perPrincipal));
}

const EXPOSURE_MODES: readonly ToolExposureMode[] = ['all', 'search', 'auto'];

/** `--tools`, `--max-tools`, `--max-tool-tokens`; a cap alone means `auto`. */
function parseExposure(v: CliContext['values']): ToolExposure | undefined {
  const count = (key: string): number | undefined => {
    const raw = v[key];
    if (raw === undefined) return undefined;
    const text = typeof raw === 'string' ? raw.trim() : '';
    if (!/^\d+$/.test(text) || Number(text) < 1) throw usage(`--${key} must be a whole number of at least 1, not ${JSON.stringify(String(raw))}`, `e.g. --${key} ${key === 'max-tools' ? '128' : '20000'}`);
    return Number(text);
  };
  const maxTools = count('max-tools');
  const maxToolTokens = count('max-tool-tokens');
  let mode: ToolExposureMode | undefined;
  if (v.tools !== undefined) {
    if (typeof v.tools !== 'string' || !EXPOSURE_MODES.includes(v.tools as ToolExposureMode)) {
      throw usage(`--tools must be all, search or auto, not ${JSON.stringify(String(v.tools))}`, 'all: every tool; search: search_tools and call_tool; auto: all while under --max-tools / --max-tool-tokens');
    }
    mode = v.tools as ToolExposureMode;
  }
  if (mode === 'auto' && maxTools === undefined && maxToolTokens === undefined) {
    throw usage('--tools auto needs a budget', 'add --max-tools N and/or --max-tool-tokens T (e.g. --max-tools 128 for VS Code)');
  }
  if ((mode === 'all' || mode === 'search') && (maxTools !== undefined || maxToolTokens !== undefined)) {
    throw usage(`--max-tools and --max-tool-tokens apply to --tools auto, not --tools ${mode}`, 'drop --tools (a cap alone means auto), or drop the caps');
  }
  if (mode === undefined && maxTools === undefined && maxToolTokens === undefined) return undefined;
  return { mode: mode ?? 'auto', ...(maxTools !== undefined ? { maxTools } : {}), ...(maxToolTokens !== undefined ? { maxToolTokens } : {}) };
}

/** `--cluster REDIS` and `--workspace-id ID` as serve declares them; `auth`/`logout --cluster` take the same (docs/cluster-gaps.md). */
export const clusterTargetOptions: Record<'cluster' | 'workspace-id', CliOption> = {
  cluster: { type: 'string', value: 'REDIS', help: 'HTTP: one replica of a gateway sharing approvals (and more) in Redis: a redis:// URL or a unix socket path; needs --workspace-id (docs/cluster.md)' },
  'workspace-id': { type: 'string', value: 'ID', help: 'with --cluster: the name every replica of this gateway shares in Redis' },
};

/** `--cluster REDIS` with `--workspace-id ID`: both or neither (`undefined`); usage errors name the one missing. */
export function parseClusterTarget(v: CliContext['values']): { target: string; workspaceId: string } | undefined {
  const target = typeof v.cluster === 'string' ? v.cluster.trim() : undefined;
  const workspaceId = typeof v['workspace-id'] === 'string' ? v['workspace-id'].trim() : undefined;
  if (target === undefined && workspaceId === undefined) return undefined;
  if (!target) throw usage('--workspace-id needs --cluster', 'add --cluster redis://HOST:6379 (or a unix socket path), the Redis every replica shares');
  if (!workspaceId) {
    throw usage('--cluster needs --workspace-id', 'name the workspace every replica of this gateway shares, e.g. --workspace-id team-tools (approvals and listings are kept under it)');
  }
  return { target, workspaceId };
}

/** `--cluster REDIS` with `--workspace-id ID`: both or neither, and only with --http. */
function parseCluster(v: CliContext['values'], http: boolean): ServeArgs['cluster'] {
  const given = v.cluster !== undefined || v['workspace-id'] !== undefined;
  const issuer = httpUrl(v, 'auth-issuer');
  const jwksUrl = httpUrl(v, 'auth-jwks');
  const publicUrl = httpUrl(v, 'public-url');
  const replicaUrl = httpUrl(v, 'replica-url');
  if (!given) {
    if (issuer || jwksUrl || publicUrl || replicaUrl) throw usage('--auth-issuer, --auth-jwks, --public-url and --replica-url apply to --cluster', 'without --cluster the gateway takes its shared access token');
    return undefined;
  }
  if (!http) throw usage('--cluster applies to --http only', 'a clustered gateway serves many clients over HTTP: add --http');
  const { target, workspaceId } = parseClusterTarget(v)!;
  if (!issuer || !jwksUrl) {
    throw usage('--cluster needs --auth-issuer and --auth-jwks: a clustered gateway takes access tokens of your identity provider instead of one shared token', 'e.g. --auth-issuer https://id.example.com --auth-jwks https://id.example.com/.well-known/jwks.json (see docs/cluster.md)');
  }
  // The issuer identifier is compared as given: `new URL` would add a trailing slash.
  return { target, workspaceId, issuer: String(v['auth-issuer']).trim(), jwksUrl, publicUrl, replicaUrl };
}

/** `serve`'s options, checked (usage errors say what to change). */
export function parseServeArgs(ctx: CliContext): ServeArgs {
  const v = ctx.values;
  if (ctx.positionals.length > 0) throw usage(`serve takes no arguments (got "${ctx.positionals.join(' ')}")`, 'e.g. mcp-reconciler serve --stdio');
  const stdio = v.stdio === true;
  const http = v.http === true;
  if (!stdio && !http) {
    throw usage('serve needs --stdio or --http', 'use --stdio when an MCP client starts the gateway, --http [--port N] to serve several clients');
  }
  let port = 0;
  if (v.port !== undefined) {
    if (!http) throw usage('--port applies to --http only', 'add --http, or drop --port');
    const text = typeof v.port === 'string' ? v.port.trim() : '';
    port = /^\d+$/.test(text) ? Number(text) : NaN;
    if (!Number.isInteger(port) || port < 0 || port > 65_535) throw usage(`--port must be a port number from 0 to 65535, not ${JSON.stringify(String(v.port))}`, 'leave it out to get a free port');
  }
  let scope: SessionScope;
  if (v.servers !== undefined) {
    if (!stdio) throw usage('--servers scopes the stdio session', 'HTTP clients name their servers per session: add ?servers=a,b to the URL or send the X-MCP-Allowed-Servers header');
    scope = parseServerList(typeof v.servers === 'string' ? v.servers : '', '--servers');
  }
  if (v.resumable === true && !http) throw usage('--resumable applies to --http only', 'add --http, or drop --resumable');
  if (v['session-idle-timeout'] !== undefined && !http) {
    throw usage('--session-idle-timeout applies to --http only', 'a stdio session ends when its client closes stdin; add --http, or drop --session-idle-timeout');
  }
  const maxSessions = parseMaxSessions(v, http);
  const cluster = parseCluster(v, http);
  const bind = typeof v.bind === 'string' ? v.bind.trim() : undefined;
  if (bind !== undefined) {
    if (!http) throw usage('--bind applies to --http only', 'add --http, or drop --bind');
    if (!LOOPBACK_BINDS.has(bind) && !cluster) {
      throw usage(`--bind ${bind} reaches beyond this machine, which needs --cluster`, 'a gateway on the network authenticates principals with your identity provider: add --cluster, --workspace-id, --auth-issuer and --auth-jwks (docs/cluster.md)');
    }
  }
  const allowedHosts = strings(v, 'allowed-host');
  const allowedOrigins = strings(v, 'allowed-origin');
  if ((allowedHosts.length || allowedOrigins.length) && !cluster) throw usage('--allowed-host and --allowed-origin apply to --cluster', 'without it the gateway answers loopback only');
  if (stdio && !ctx.io.stdin) throw usage('serve --stdio needs a standard input', 'run it as the command of an MCP client');
  if (v.shared === true && !stdio) throw usage('--shared applies to --stdio', 'use serve --stdio --shared; HTTP clients already share one gateway');
  const token = http ? ctx.io.env[GATEWAY_TOKEN_ENV] || undefined : undefined;
  return {
    cluster,
    bind,
    // A request another replica forwards is addressed to --replica-url's host.
    allowedHosts: [...allowedHosts, ...[cluster?.publicUrl, cluster?.replicaUrl].filter((u) => u !== undefined).map((u) => new URL(u).host)],
    allowedOrigins,
    stdio,
    http,
    port,
    scope,
    callTimeoutMs: parseTimeoutMs(v, 'call-timeout'),
    token,
    resumable: v.resumable === true,
    lazy: v.lazy === true,
    idleTimeoutMs: parseTimeoutMs(v, 'idle-timeout'),
    sessionIdleTimeoutMs: parseTimeoutMs(v, 'session-idle-timeout'),
    maxSessions,
    separator: v.separator === undefined ? undefined : validateSeparator(typeof v.separator === 'string' ? v.separator : '', '--separator'),
    exposure: parseExposure(v),
  };
}

/**
 * Whether a configured server looks like an `mcp-reconciler serve` itself:
 * registering the gateway in a file it reads makes it start itself.
 */
function looksLikeGateway(config: { command?: string; args?: string[] }): boolean {
  const words = [config.command ?? '', ...(config.args ?? [])];
  // The program itself (`mcp-reconciler`, `node …/cli/main.js`, `npx -y mcp-reconciler`) followed by
  // `serve`: a client that merely passes such a command line on (an inspector) does not count.
  const at = words.slice(0, 3).findIndex((w) => /(^|[\\/])mcp-reconciler$|cli[\\/]main\.js$/.test(w));
  return at >= 0 && words[at + 1] === 'serve';
}

/**
 * Whether our parent process is an `mcp-reconciler serve` (Linux `/proc`;
 * elsewhere false). A gateway that finds itself among its own servers would
 * otherwise start itself again at every level.
 */
function startedByGateway(): boolean {
  try {
    const args = readFileSync(`/proc/${process.ppid}/cmdline`, 'utf8').split('\0');
    return looksLikeGateway({ args });
  } catch {
    return false;
  }
}


/** `$MCP_RECONCILER_LEASE_MS`: a whole number of ms, at least 500; unset → the default. */
function leaseMsOf(raw: string | undefined): number | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  const ms = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
  if (!(ms >= 500)) throw usage(`$${LEASE_MS_ENV} must be a whole number of milliseconds of at least 500, not ${JSON.stringify(raw)}`, 'unset it for the default (15000), and use the same value on every replica');
  return ms;
}

/** Why an HTTP session closed, for the log line (nothing for a client's own DELETE). */
function closeNote(reason: SessionCloseReason | undefined): string {
  if (reason === 'idle') return ' (unused for the session idle timeout; see --session-idle-timeout)';
  if (reason === 'evicted') return ' (the least recently used idle session, ended to make room for a new one)';
  return '';
}

async function run(ctx: CliContext): Promise<number> {
  const args = parseServeArgs(ctx);
  const { io } = ctx;
  if (ctx.io.stdin === process.stdin && startedByGateway()) {
    throw new McpReconcilerError(ErrorCode.ConfigInvalid, 'this gateway was started by another `mcp-reconciler serve`: the gateway is configured as one of its own servers', {
      hint: 'remove the `mcp-reconciler serve` entry from the config files the gateway reads (or serve with another --preset)',
    });
  }
  // The session goes to the user's daemon, which runs the servers for every session (docs/daemon.md).
  if (ctx.values.shared === true) return (await import('../shared-serve.js')).runSharedStdio(ctx);
  const { GatewayPool, GATEWAY_IDLE_TIMEOUT_MS, gatewayControllerOptions, serveStdio, startHttpGateway } = await import('../../gateway/index.js');
  // stdout may be the protocol channel: everything human goes to stderr.
  const log = (line: string): void => void io.stderr.write(`mcp-reconciler serve: ${line}\n`);
  // Only with --cluster: without it nothing of Redis is loaded (docs/cluster.md).
  const clusterKit = args.cluster ? await import('../../cluster/index.js') : undefined;
  const secret = io.env[CLUSTER_SECRET_ENV] || undefined;
  const leaseMs = args.cluster ? leaseMsOf(io.env[LEASE_MS_ENV]) : undefined;
  const cluster = args.cluster ? await clusterKit!.openCluster({ ...args.cluster, log, ...(secret ? { secret } : {}), ...(leaseMs ? { leaseMs } : {}) }) : undefined;
  // A managed server's OAuth sign-in may come back to any replica (docs/cluster-oauth.md): it needs the
  // public URL (the callback beside it) and the secret (the flow's record is sealed like the credentials).
  const signIns =
    cluster?.tokens && secret && args.cluster?.publicUrl
      ? new clusterKit!.RedisSignIns({ redis: cluster.redis, keys: cluster.keys, secret, publicUrl: args.cluster.publicUrl, log })
      : undefined;
  // The resource URL is known once the port is: requests wait for it.
  let principals: ((url: string) => void) | undefined;
  const principalAuth = new Promise<import('../../cluster/principals.js').PrincipalAuth>((resolve) => {
    principals = (url) => resolve(new clusterKit!.PrincipalAuth({ issuer: args.cluster!.issuer, jwksUrl: args.cluster!.jwksUrl, resource: args.cluster!.publicUrl ?? url }));
  });
  let metadataRoute: import('../../cluster/principals.js').PrincipalAuth | undefined;
  const cwdArg = `--cwd ${shellQuote(ctx.global.root)}`;
  // Managed servers' elicitation and sampling go to a connected client that supports them (the pool picks it).
  let pool: GatewayPool | undefined;
  const { options, cleanup } = controllerOptionsFor(ctx, {
    watch: true,
    // The pool's sessions decide what runs: a server starts when a session's scope takes it and
    // stops idle-timeout ms after the last such session left; one nobody names never starts.
    ...gatewayControllerOptions(args, () => pool, 'the gateway'),
    ...(cluster ? { approvals: cluster.approvals, listingCacheSecondLevel: cluster.listings } : {}),
    ...(cluster?.tokens ? { oauth: { tokenStore: cluster.tokens, ...(signIns ? { callback: signIns, authorizationTimeoutMs: clusterKit!.SIGN_IN_TTL_MS } : {}) } } : {}),
    ...(signIns
      ? { onAuthorizationUrl: (server: string, url: URL) => log(`"${server}" needs a sign-in: open ${url.href} ${SIGN_IN_NOTE}`) }
      : {}),
  });
  // Per-principal servers (docs/cluster-principals.md): only where each principal's credentials can be
  // kept apart and shared between replicas, i.e. in the cluster's sealed store.
  const perPrincipal = cluster?.tokens && secret ? new Set<string>() : undefined;
  const principalSignIns = new WeakMap<McpController, PrincipalSignIns>();
  if (perPrincipal) {
    // The gateway's controller leaves them out (and says which they are); a principal's has only them.
    options.selectServers = (desired) => {
      perPrincipal.clear();
      for (const name of Object.keys(serversWhere(desired, true))) perPrincipal.add(name);
      return serversWhere(desired, false);
    };
  }
  const principalController = (principal: string): McpController => {
    const callback = signIns?.forPrincipal(principal);
    const c = createMcpController({
      ...options,
      ...gatewayControllerOptions(args, () => pool?.principalPool(principal), 'the gateway'),
      selectServers: (desired) => serversWhere(desired, true),
      oauth: {
        ...options.oauth,
        tokenStore: new clusterKit!.RedisTokenStore({ redis: cluster!.redis, keys: cluster!.keys, secret: secret!, principal }),
        ...(callback ? { callback } : {}),
      },
      ...(callback ? { onAuthorizationUrl: (server: string, url: URL) => askToSignIn(principal, server, url) } : {}),
      // One process per gateway owns these files; a principal's controller runs remote servers only.
      processStateFile: false,
      workspaceStateFile: false,
      // A listing may be personal: it is not shared between principals.
      listingCache: false,
      listingCacheSecondLevel: undefined,
    });
    if (callback) principalSignIns.set(c, callback);
    c.on('server-state', (e) => {
      // `status --cluster` shows each principal's servers: announce the change (coalesced), not at the next beat.
      if (e.state !== e.previous) cluster?.changed();
      // Signed in: the client that was sent the sign-in URL is told it is done.
      const asked = e.state === 'connected' ? signInsAsked.get(`${principal}\0${e.name}`) : undefined;
      if (asked !== undefined) {
        signInsAsked.delete(`${principal}\0${e.name}`);
        pool?.principalPool(principal)?.elicitationComplete(e.name, asked);
      }
      if (e.state === 'failed' || e.state === 'needs_auth') {
        const row = c.status().find((r) => r.name === e.name);
        log(`"${e.name}" of principal ${principal} ${describeReason(e.state)}${row?.lastError ? `: ${row.lastError}` : ''}`);
      }
    });
    return c;
  };
  /** The URL elicitation sent for each principal's sign-in of a server (`principal\0server` → its id), until it connects. */
  const signInsAsked = new Map<string, string>();
  /** A principal's sign-in: logged as the gateway's are, and sent to that principal's session if its client takes URL elicitations. */
  const askToSignIn = (principal: string, server: string, url: URL): void => {
    log(`"${server}" of principal ${principal} needs a sign-in: open ${url.href} ${SIGN_IN_NOTE}`);
    const request = {
      mode: 'url' as const,
      elicitationId: randomUUID(),
      url: url.href,
      message: `Sign in to "${server}" with your own account to use its tools through this gateway (the link works once, for 10 minutes).`,
    };
    signInsAsked.set(`${principal}\0${server}`, request.elicitationId);
    void pool
      ?.principalPool(principal)
      ?.elicit(server, request, { signal: AbortSignal.timeout(clusterKit!.SIGN_IN_TTL_MS) })
      .catch(() => undefined);
  };
  signIns?.setPrincipalRedeemer(async (principal) => {
    const c = await pool?.principalController(principal);
    return c ? principalSignIns.get(c)?.redeemer() : undefined;
  });
  const controller = createMcpController(options);
  const session = untilStopped(ctx);
  controller.on('config-error', (e) => {
    for (const issue of e.issues) log(`config: ${formatIssue(issue)}`);
  });
  controller.on('pending-approval', (e) => {
    for (const name of e.servers) log(`"${name}" is waiting for approval; it starts once you run: mcp-reconciler approve ${shellQuote(name)} ${cwdArg}`);
  });
  controller.on('server-state', (e) => {
    if (e.state === 'failed' || e.state === 'needs_auth') {
      const row = controller.status().find((s) => s.name === e.name);
      log(`"${e.name}" ${describeReason(e.state)}${row?.lastError ? `: ${row.lastError}` : ''}`);
    }
  });
  pool = new GatewayPool(controller, {
    onError: log,
    ...(args.separator !== undefined ? { separator: args.separator } : {}),
    ...(cluster ? { admit: (servers: string[]) => cluster.admit(servers), placement: cluster.singletons } : {}),
    ...(perPrincipal ? { principals: { servers: () => perPrincipal, create: principalController, idleTimeoutMs: args.idleTimeoutMs ?? GATEWAY_IDLE_TIMEOUT_MS } } : {}),
  });
  let http: HttpGateway | undefined;
  let stdio: StdioGateway | undefined;
  // A client that went away leaves a broken pipe: that ends the session, it is not a crash.
  const onStdoutError = (): void => session.stop();
  let stopped = false;
  try {
    if (cluster) {
      await cluster.attach(controller, pool);
      log(`cluster: workspace ${args.cluster!.workspaceId} on Redis at ${args.cluster!.target}`);
      if (!cluster.tokens) {
        log(
          `cluster: $${CLUSTER_SECRET_ENV} is not set, so OAuth credentials stay on this replica and a session is answered only by the replica that opened it; ` +
            'set it (32+ bytes, the same on every replica) to share credentials sealed in Redis and forward sessions between replicas',
        );
      }
    }
    if (args.http) {
      http = await startHttpGateway(pool, {
        port: args.port,
        ...(args.bind ? { host: args.bind } : {}),
        ...(args.allowedHosts.length ? { allowedHosts: args.allowedHosts } : {}),
        ...(args.allowedOrigins.length ? { allowedOrigins: args.allowedOrigins } : {}),
        ...(cluster
          ? {
              authenticate: async (req) => (await principalAuth).authenticate(req),
              extraRoute: (url) => metadataRoute?.route(url) ?? signIns?.route(url),
              ...(cluster.sessions
                ? {
                    // Signed ids naming this replica; another replica's session is forwarded to it (docs/cluster-sessions.md).
                    sessionIdGenerator: () => cluster.sessions!.mint(),
                    unknownSession: (id, req, res, notFound) => cluster.sessions!.forward(id, req, res, notFound),
                    // Input-required rounds live where the call runs: a retry landing elsewhere is sent there.
                    requestStateGenerator: () => cluster.sessions!.mint(),
                    foreignRequestState: (state, body, req, res) => cluster.sessions!.forwardRetry(state, body, req, res),
                  }
                : {}),
            }
          : {}),
        resumable: args.resumable,
        ...(args.token ? { token: args.token } : {}),
        ...(args.callTimeoutMs !== undefined ? { callTimeoutMs: args.callTimeoutMs } : {}),
        ...(args.sessionIdleTimeoutMs !== undefined ? { sessionIdleTimeoutMs: args.sessionIdleTimeoutMs } : {}),
        ...(args.maxSessions !== undefined ? { maxSessions: args.maxSessions } : {}),
        onSession: (e) => {
          log(`session ${e.id} ${e.type === 'open' ? 'opened' : 'closed'}${e.type === 'open' && e.scope ? ` (servers: ${[...e.scope].join(', ') || 'none'})` : ''}${closeNote(e.reason)}`);
          // Announced after a short delay: the session map is updated after this call returns.
          cluster?.changed();
        },
      });
      log(`listening on ${http.url}`);
      if (cluster) {
        principals!(http.url);
        metadataRoute = await principalAuth;
        const gateway = http;
        cluster.announce(() => {
          const principals = new Map<string, number>();
          const open = gateway.sessions();
          for (const s of open) if (s.principal !== undefined) principals.set(s.principal, (principals.get(s.principal) ?? 0) + 1);
          const controllers = pool?.principalStatus() ?? {};
          return {
            url: gateway.url,
            reachUrl: args.cluster!.replicaUrl ?? gateway.url,
            sessions: open.length,
            principals: Object.fromEntries(principals),
            ...(Object.keys(controllers).length > 0 ? { controllers } : {}),
          };
        });
        if (!args.cluster!.replicaUrl && (args.bind === '0.0.0.0' || args.bind === '::')) {
          log(`cluster: the other replicas cannot forward sessions to ${http.url}: add --replica-url with the address they reach this one at`);
        }
        log(`clients send access tokens of ${args.cluster!.issuer} for ${args.cluster!.publicUrl ?? http.url} (metadata: ${metadataRoute.metadataUrl}); scope mcp:servers or mcp:server:<name>`);
      } else {
        log(`access token: ${http.token}`);
        log('clients send "Authorization: Bearer <token>"; add ?servers=a,b to the URL (or an X-MCP-Allowed-Servers header) to limit a session to some servers');
      }
    }
    if (args.stdio) {
      if (io.stdin === process.stdin) process.stdout.on('error', onStdoutError);
      stdio = await serveStdio(pool, {
        stdin: io.stdin!,
        stdout: { write: (chunk: string) => writeRaw(io.stdout, chunk) },
        ...(args.scope !== undefined ? { scope: args.scope } : {}),
        ...(args.callTimeoutMs !== undefined ? { callTimeoutMs: args.callTimeoutMs } : {}),
      });
      // The client closed our stdin: it is gone, and so is the reason to run.
      void stdio.closed.then(() => session.stop());
    }
    // Only now, with the listeners bound: a port that is taken must not have started any server.
    void pool.start().then(() => {
      if (stopped) return;
      const rows = controller.status();
      const connected = rows.filter((r) => r.state === 'connected').map((r) => r.name);
      const dormant = rows.filter((r) => r.state === 'dormant').map((r) => r.name);
      const other = rows.filter((r) => r.state !== 'connected' && r.state !== 'removed' && r.state !== 'dormant');
      log(`ready: ${controller.tools().length} tools from ${connected.length} connected server(s)${connected.length ? ` (${connected.join(', ')})` : ''}`);
      if (dormant.length) log(`not running until a session uses them: ${dormant.join(', ')}`);
      for (const r of other) log(`"${r.name}" is ${r.state}${r.reason ? ` (${describeReason(r.reason)})` : ''}`);
      const { desired } = controller.config();
      const singletons = Object.keys(desired).filter((name) => desired[name]!.config.singleton === true);
      if (singletons.length && !cluster) log(`note: singleton: true (${singletons.join(', ')}) applies to serve --http --cluster only; here every such server runs in this gateway as usual`);
      const personal = Object.keys(serversWhere(desired, true));
      if (personal.length && !perPrincipal) {
        log(
          `note: oauth.perPrincipal (${personal.join(', ')}) applies to serve --http --cluster with $${CLUSTER_SECRET_ENV} only; ` +
            'here the gateway signs in to such a server once, for every session, as to any other',
        );
      }
      for (const [name, entry] of Object.entries(desired)) {
        if (looksLikeGateway(entry.config)) {
          log(`warning: "${name}" (${entry.source ?? entry.scope}) looks like this gateway itself; if it is, the gateway starts itself: remove it from that file or serve with another --preset`);
        }
      }
      for (const name of args.scope ?? []) {
        if (!(name in desired)) log(`warning: --servers names "${name}", which is not configured (configured: ${Object.keys(desired).join(', ') || 'none'})`);
      }
    });
    await session.done;
  } finally {
    stopped = true;
    session.release();
    process.stdout.off('error', onStdoutError);
    await stdio?.close().catch((err: unknown) => log(`closing the stdio session: ${describeError(err)}`));
    await http?.close().catch((err: unknown) => log(`closing the HTTP listener: ${describeError(err)}`));
    pool.close();
    await pool.closePrincipals();
    await controller.dispose();
    signIns?.close();
    await cluster?.close();
    cleanup();
  }
  return 0;
}

/** `serve`: the live registry as one MCP server, over stdio and/or streamable HTTP on loopback. */
export const serveCommand: CliCommand = {
  name: 'serve',
  examples: [
    'mcp-reconciler serve --stdio                # register this command in Claude Desktop, Cursor or VS Code',
    'mcp-reconciler serve --http --port 7331     # streamable HTTP on 127.0.0.1; the access token is printed on stderr',
    'mcp-reconciler serve --stdio --servers github,docs',
    'mcp-reconciler serve --stdio --shared         # one server pool for every client on the machine (mcp-reconciler daemon)',
    'mcp-reconciler serve --stdio --max-tools 128      # VS Code: every tool while under 128, else search_tools + call_tool',
  ],
  summary: 'serve the managed servers’ tools and prompts as one MCP server (stdio or HTTP gateway)',
  options: {
    stdio: { type: 'boolean', help: 'serve one client on stdin/stdout (how MCP clients start local servers)' },
    shared: { type: 'boolean', help: 'stdio: attach to the user’s daemon (started when absent), so every session shares one process per server' },
    http: { type: 'boolean', help: 'serve streamable HTTP on 127.0.0.1 (URL and access token printed on stderr)' },
    port: { type: 'string', value: 'N', help: `HTTP port (default: a free one); token from $${GATEWAY_TOKEN_ENV} when set` },
    servers: { type: 'string', value: 'a,b', help: 'limit the stdio session to these servers (HTTP: ?servers=a,b per session)' },
    'call-timeout': { type: 'string', value: 'MS', help: 'give up on a forwarded tool call after MS without progress (default 600000)' },
    resumable: { type: 'boolean', help: 'HTTP: keep messages so a broken SSE stream resumes with Last-Event-ID (~1 ms per call)' },
    lazy: { type: 'boolean', help: 'start a server on its first call (tools come from the listing cache until then)' },
    'idle-timeout': { type: 'string', value: 'MS', help: 'stop a server MS after the last session using it left (default 300000); a new session starts it again' },
    'session-idle-timeout': {
      type: 'string',
      value: 'MS',
      help: 'HTTP: end a session with no request or open stream for MS (default 1800000, 30 min), releasing its servers',
    },
    'max-sessions': {
      type: 'string',
      value: 'N',
      help: 'HTTP: at most N sessions open at once (default 64); a new one ends the least recently used idle session, or gets 503 when all are in use',
    },
    separator: { type: 'string', value: 'SEP', help: 'tool and prompt names mcp<SEP><server><SEP><tool> (default __; letters, digits, _ and - only)' },
    tools: { type: 'string', value: 'all|search|auto', help: 'all: list every tool (default); search: only search_tools + call_tool (found tools join the list); auto: all while under the caps, else pinned and most used tools + the search pair' },
    'max-tools': { type: 'string', value: 'N', help: 'auto: list every tool only while a session has at most N (e.g. 128 for VS Code, 40 for Cursor); implies --tools auto' },
    ...clusterTargetOptions,
    'auth-issuer': { type: 'string', value: 'URL', help: "with --cluster: your identity provider's issuer; clients send its JWT access tokens (scope mcp:servers or mcp:server:<name>)" },
    'auth-jwks': { type: 'string', value: 'URL', help: "with --cluster: the identity provider's JWKS URL (its signing keys)" },
    'public-url': { type: 'string', value: 'URL', help: 'with --cluster: the URL clients reach the gateway at (the tokens\' audience; default the listening URL)' },
    'replica-url': { type: 'string', value: 'URL', help: 'with --cluster: the URL the other replicas reach this one at, to forward the requests of sessions it opened (default the listening URL)' },
    bind: { type: 'string', value: 'ADDR', help: 'HTTP: listen on ADDR (default 127.0.0.1); beyond loopback needs --cluster' },
    'allowed-host': { type: 'string', value: 'HOST:PORT', multiple: true, help: 'with --cluster: a Host header to accept besides loopback (and --public-url\'s)' },
    'allowed-origin': { type: 'string', value: 'ORIGIN', multiple: true, help: 'with --cluster: a browser Origin to accept besides loopback' },
    'max-tool-tokens': { type: 'string', value: 'T', help: 'auto: list every tool only while their definitions cost at most T tokens (o200k_base); implies --tools auto' },
  },
  run,
};
