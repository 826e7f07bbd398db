import { shellQuote } from '../../format/shell.js';
import type { ServerStatus } from '../../controller/types.js';
import { formatIssue, type ConfigIssue } from '../../config/sources.js';
import { parseTimeoutMs, type CliCommand, type CliContext } from '../command.js';
import { withController } from '../controller-session.js';
import { displayPath } from '../../format/paths.js';
import { table } from '../output.js';
import { TOKEN_ENCODING } from '../../registry/tokens.js';
import { ErrorCode, McpReconcilerError } from '../../errors.js';
import { serveUntilStopped } from '../serve-dashboard.js';
import type { ReplicaInfo } from '../../cluster/replicas.js';

/** What every server's tool definitions cost together, in tokens. */
export function totalTokens(rows: readonly ServerStatus[]): number {
  return rows.reduce((sum, r) => sum + r.tokens, 0);
}

/** One human line per server: name, scope, state, tools, their tokens, reason, source, transport (the one in use once connected), stdio PID. */
export function statusTable(rows: readonly ServerStatus[], root: string, home: string): string {
  if (rows.length === 0) return 'no servers configured';
  return table([
    ['NAME', 'SCOPE', 'STATE', 'TOOLS', 'TOKENS', 'REASON', 'SOURCE', 'TRANSPORT', 'PID'],
    ...rows.map((r) => [
      r.name,
      r.scope ?? '-',
      r.state,
      String(r.tools.length),
      String(r.tokens),
      r.reason ?? (r.lastError ? `error: ${r.lastError.split('\n')[0]!.slice(0, 80)}` : '-'),
      r.source ? displayPath(r.source, root, home) : '-',
      r.transport ?? '-',
      r.pid === undefined ? '-' : String(r.pid),
    ]),
  ]);
}

/** One warning per listed tool that was not registered because its definition is invalid (the server's bug; its other tools work). */
export function invalidToolWarnings(rows: readonly ServerStatus[]): string[] {
  return rows.flatMap((r) => r.skippedTools.filter((t) => t.invalid).map((t) => `MCP server "${r.name}": tool "${t.rawName}" is not registered: ${t.reason}`));
}

async function run(ctx: CliContext): Promise<number> {
  if (ctx.values.shared === true) return (await import('../shared-status.js')).printSharedStatus(ctx);
  if (ctx.values.ui === true) {
    throw new McpReconcilerError(ErrorCode.Usage, 'status --ui shows the shared daemon or a cluster: it goes with --shared or --cluster', {
      hint: "run `mcp-reconciler status --shared --ui` for the daemon's dashboard, `status --cluster REDIS --workspace-id ID --ui` for a cluster's, or `mcp-reconciler watch --ui` for this workspace's",
    });
  }
  const issues: ConfigIssue[] = [];
  const readyTimeoutMs = parseTimeoutMs(ctx.values);
  // Without --timeout every starting server is reported with its outcome: connected, or
  // failed by its own start bound (counted from when it left the connect queue).
  const wait = readyTimeoutMs === undefined ? ({ readyWait: 'start-bound' } as const) : { readyTimeoutMs };
  const rows = await withController(ctx, async (c) => c.status(), wait, (c) => {
    c.on('config-error', (e) => issues.push(...e.issues));
  });
  if (ctx.global.json) {
    ctx.io.stdout.write(`${JSON.stringify({ servers: rows, totalTokens: totalTokens(rows), issues }, null, 2)}\n`);
  } else {
    ctx.io.stdout.write(`${statusTable(rows, ctx.global.root, ctx.global.home)}\n`);
    if (rows.length > 0) ctx.io.stdout.write(`total: ${rows.reduce((n, r) => n + r.tools.length, 0)} tools, ${totalTokens(rows)} tokens (${TOKEN_ENCODING})\n`);
    for (const i of issues) ctx.io.stderr.write(`warning: ${formatIssue(i)}\n`);
    for (const w of invalidToolWarnings(rows)) ctx.io.stderr.write(`warning: ${w}\n`);
    const pending = rows.filter((r) => r.reason === 'pending_approval').map((r) => r.name);
    // Shell-quoted: a name from a checked-in file must be safe to paste after `approve`.
    if (pending.length === 1) ctx.io.stderr.write(`hint: ${shellQuote(pending[0]!)} waits for approval: mcp-reconciler approve ${shellQuote(pending[0]!)}\n`);
    else if (pending.length > 1) ctx.io.stderr.write(`hint: ${pending.map(shellQuote).join(', ')} wait for approval: mcp-reconciler approve NAME\n`);
  }
  return 0;
}

/**
 * What `status --cluster` says of the replicas' announcements (docs/cluster-singletons.md):
 * unsigned ones can be rewritten by whoever can write to Redis; forged ones
 * (seen only with the secret here) are ignored by the replicas.
 */
export function announcementNotes(replicas: readonly ReplicaInfo[], checked: boolean): string {
  const ids = (trust: string) => replicas.filter((r) => r.announcement === trust).map((r) => r.id);
  const lines: string[] = [];
  const unsigned = ids('unsigned');
  if (unsigned.length) {
    lines.push(
      `announcements: unsigned (${unsigned.join(', ')}: started without $MCP_RECONCILER_CLUSTER_SECRET): whoever can write to this Redis can point forwarded calls, and the callers' bearer tokens, elsewhere; start every replica with the secret to sign them`,
    );
  }
  const forged = ids('forged');
  if (forged.length) lines.push(`warning: the announcements of ${forged.join(', ')} are not signed with this cluster's secret: the replicas ignore them (forged, or another secret)`);
  if (!checked && ids('unchecked').length) lines.push('announcements: signed (set $MCP_RECONCILER_CLUSTER_SECRET here to check the signatures too)');
  return lines.map((l) => `${l}\n`).join('');
}

/**
 * The per-principal controllers the replicas announce (docs/cluster-principals.md):
 * one row per principal, replica and server; empty when there are none.
 */
export function principalTable(replicas: readonly ReplicaInfo[]): string {
  const rows: string[][] = [];
  for (const r of replicas) {
    for (const [principal, c] of Object.entries(r.controllers ?? {}).sort(([a], [b]) => a.localeCompare(b))) {
      const servers = Object.entries(c.servers).sort(([a], [b]) => a.localeCompare(b));
      if (servers.length === 0) rows.push([principal, r.id, String(c.sessions), '-', '-']);
      for (const [server, state] of servers) rows.push([principal, r.id, String(c.sessions), server, state]);
    }
  }
  if (rows.length === 0) return '';
  const principals = new Set(rows.map((row) => row[0]));
  return `\n${table([['PRINCIPAL', 'REPLICA', 'SESSIONS', 'SERVER', 'STATE'], ...rows])}\n${principals.size} principal(s) with a controller of their own (per-principal servers)\n`;
}

/** `status`: start, settle, print every server's state, exit. */
/** `status --cluster REDIS --workspace-id ID`: the live replicas of a clustered gateway and their sessions (docs/cluster.md). */
async function clusterStatus(ctx: CliContext, target: string, workspaceId: string): Promise<number> {
  // Only with --cluster: without it nothing of Redis is loaded.
  const { connectRedis, liveReplicas, listLeases, workspaceKeys, checkWorkspaceId, announcementKey } = await import('../../cluster/index.js');
  const keys = workspaceKeys(checkWorkspaceId(workspaceId));
  // With the cluster secret here too, the replicas' announcements are checked, not only seen to be signed.
  const secret = ctx.io.env.MCP_RECONCILER_CLUSTER_SECRET || undefined;
  const key = secret ? announcementKey(secret) : undefined;
  const redis = await connectRedis(target);
  try {
    // Singleton servers' lease holders (docs/cluster.md): who runs each, under which fencing token.
    const readLeases = async (replicas: ReplicaInfo[]) =>
      (await listLeases(redis, keys)).map((l) => {
        const holder = replicas.find((r) => r.id === l.holder.replica);
        return { server: l.server, replica: l.holder.replica, token: l.holder.token, ttlMs: l.ttlMs, ...(holder ? { url: holder.url, pid: holder.pid } : {}) };
      });
    if (ctx.values.ui === true) {
      const { startClusterDashboard } = await import('../../dashboard/cluster-dashboard.js');
      const read = async () => {
        const replicas = await liveReplicas(redis, keys, key);
        return { workspaceId, redis: target, replicas, leases: await readLeases(replicas) };
      };
      return await serveUntilStopped(ctx, (port) => startClusterDashboard(read, { port }), 'cluster dashboard');
    }
    const replicas = await liveReplicas(redis, keys, key);
    const leases = await readLeases(replicas);
    if (ctx.global.json) {
      ctx.io.stdout.write(`${JSON.stringify({ workspaceId, replicas, leases }, null, 2)}\n`);
      return 0;
    }
    const leaseTable = leases.length
      ? `\n${table([
          ['SINGLETON', 'HOLDER', 'URL', 'TOKEN', 'EXPIRES'],
          ...leases.map((l) => [l.server, l.replica, l.url ?? '(not announced: gone?)', String(l.token), `in ${(l.ttlMs / 1000).toFixed(1)}s unless renewed`]),
        ])}\n${leases.length} singleton lease(s)\n`
      : '';
    if (replicas.length === 0) {
      ctx.io.stdout.write(`no live replica of cluster workspace ${workspaceId} on Redis at ${target}\n`);
      return 0;
    }
    const now = Date.now();
    ctx.io.stdout.write(
      `${table([
        ['REPLICA', 'URL', 'REACH URL', 'HOST', 'PID', 'SESSIONS', 'PRINCIPALS', 'SEEN'],
        ...replicas.map((r) => [
          r.id,
          r.url,
          // Where the other replicas forward this one's sessions and singleton calls (--replica-url, else its URL).
          r.reachUrl ?? r.url,
          r.host,
          String(r.pid),
          String(r.sessions),
          Object.entries(r.principals).map(([p, n]) => `${p}:${n}`).join(',') || '-',
          `${Math.max(0, Math.round((now - Date.parse(r.at)) / 1000))}s ago`,
        ]),
      ])}\n${replicas.length} replica(s), ${replicas.reduce((n, r) => n + r.sessions, 0)} session(s)\n${announcementNotes(replicas, key !== undefined)}${leaseTable}${principalTable(replicas)}`,
    );
    return 0;
  } finally {
    redis.destroy();
  }
}

export const statusCommand: CliCommand = {
  name: 'status',
  examples: [
    "mcp-reconciler status                       # start, settle, print, exit",
    "mcp-reconciler status --timeout 30000 --json",
    "mcp-reconciler status --shared              # the daemon's workspaces, sessions and who holds which server",
    'mcp-reconciler status --shared --ui         # the same on a live dashboard (URL printed; Ctrl-C stops it)',
    'mcp-reconciler status --cluster /run/redis/redis.sock --workspace-id team --ui   # the replicas and their sessions, live',
  ],
  summary: 'start the servers, wait until they settle, print their state, exit',
  // Plain status's own option first, then the other views (--shared, --cluster) and how to show them (--ui).
  options: {
    timeout: {
      type: 'string',
      value: 'MS',
      help: "wait at most MS milliseconds for each server to settle, counted from its start (default: until it connects or its start bound, startTimeoutMs, fails it)",
    },
    shared: { type: 'boolean', help: 'show the running daemon instead: its workspaces, sessions, and which session holds which server' },
    cluster: { type: 'string', value: 'REDIS', help: 'list the live replicas of a clustered gateway (serve --cluster) and their sessions instead' },
    'workspace-id': { type: 'string', value: 'ID', help: 'with --cluster: the workspace id its replicas share' },
    ui: { type: 'boolean', help: 'with --shared or --cluster: serve it as a live dashboard on 127.0.0.1 (URL printed) until Ctrl-C' },
    port: { type: 'string', value: 'N', help: 'with --ui: dashboard port (default: a free one)' },
  },
  run: (ctx) => {
    const target = typeof ctx.values.cluster === 'string' ? ctx.values.cluster.trim() : '';
    const id = typeof ctx.values['workspace-id'] === 'string' ? ctx.values['workspace-id'].trim() : '';
    if (!target && !id) return run(ctx);
    if (!target || !id) {
      throw new McpReconcilerError(ErrorCode.Usage, 'status --cluster and --workspace-id go together', { hint: 'give both, as the replicas were started with' });
    }
    return clusterStatus(ctx, target, id);
  },
};
