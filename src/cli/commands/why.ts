import { nameCollisionIssues } from '../../config/name-collisions.js';
import { getOwn } from '../../util/own.js';
import { describeReason, fixFor } from '../../controller/messages.js';
import { ErrorCode, McpReconcilerError } from '../../errors.js';
import type { CliCommand, CliContext } from '../command.js';
import { withController } from '../controller-session.js';

/**
 * `why SERVER --cluster REDIS --workspace-id ID`: where a clustered
 * gateway's singleton runs, from Redis (docs/cluster.md): the lease holder
 * and each live replica's view of it (its lease machine's projection).
 */
async function clusterWhy(ctx: CliContext, server: string, target: string, workspaceId: string): Promise<number> {
  // Only with --cluster: without it nothing of Redis is loaded.
  const { connectRedis, liveReplicas, parseHolder, workspaceKeys, checkWorkspaceId } = await import('../../cluster/index.js');
  const keys = workspaceKeys(checkWorkspaceId(workspaceId));
  const redis = await connectRedis(target);
  try {
    const replicas = await liveReplicas(redis, keys);
    const holder = parseHolder(await redis.get(keys.lease(server)));
    const ttlMs = holder ? Number(await redis.pTTL(keys.lease(server))) : 0;
    const at = holder ? replicas.find((r) => r.id === holder.replica) : undefined;
    const views = replicas.filter((r) => r.leases && Object.hasOwn(r.leases, server)).map((r) => ({ replica: r.id, url: r.url, view: r.leases![server]! }));
    const message = holder
      ? `MCP server "${server}" is a singleton of cluster workspace ${workspaceId}: it runs on replica ${holder.replica}${at ? ` (${at.url}, pid ${at.pid})` : ' (which no longer announces itself: it expires and another replica that needs it takes over)'} under lease token ${holder.token}, expiring in ${(ttlMs / 1000).toFixed(1)} s unless renewed; the other replicas forward its calls there.`
      : views.length
        ? `MCP server "${server}" is a singleton of cluster workspace ${workspaceId} and no replica holds its lease now: the first replica a session needs it on takes it and starts it.`
        : `no live replica of cluster workspace ${workspaceId} reports "${server}" as a singleton, and nobody holds a lease for it.`;
    const lines = views.map(({ replica, view }) => `  replica ${replica}: ${view.placement === 'here' ? `holds the lease (token ${view.token}); runs it` : view.reason}`);
    if (ctx.global.json) ctx.io.stdout.write(`${JSON.stringify({ kind: 'singleton', name: server, workspaceId, holder: holder ? { ...holder, ttlMs, ...(at ? { url: at.url, pid: at.pid } : {}) } : null, replicas: views, message }, null, 2)}\n`);
    else ctx.io.stdout.write(`${message}\n${lines.join('\n')}${lines.length ? '\n' : ''}`);
    return 0;
  } finally {
    redis.destroy();
  }
}

async function run(ctx: CliContext): Promise<number> {
  // main checked the count against the declared `positionals`.
  const [target] = ctx.positionals as [string];
  if (ctx.values.cluster !== undefined || ctx.values['workspace-id'] !== undefined) {
    const redis = typeof ctx.values.cluster === 'string' ? ctx.values.cluster.trim() : '';
    const id = typeof ctx.values['workspace-id'] === 'string' ? ctx.values['workspace-id'].trim() : '';
    if (!redis || !id) throw new McpReconcilerError(ErrorCode.Usage, 'why --cluster and --workspace-id go together', { hint: 'give both, as the replicas were started with' });
    return clusterWhy(ctx, target, redis, id);
  }
  const answer = await withController(ctx, async (c) => {
    const row = c.status().find((s) => s.name === target);
    if (row) {
      const reason = c.unavailableReason(target);
      const d = row.toolDrift;
      const drift = d
        ? ` Its tool definitions changed since they were accepted (${[d.changed.length ? `changed: ${d.changed.join(', ')}` : '', d.added.length ? `new: ${d.added.join(', ')}` : ''].filter(Boolean).join('; ')}, since ${d.since})${d.held ? '; the changes are held back (pinToolDefinitions)' : ''}.`
        : '';
      return {
        kind: 'server' as const,
        name: target,
        state: row.state,
        reason: reason ?? null,
        message: reason
          ? `MCP server "${target}" ${describeReason(reason, row)}.${row.lastError ? ` ${reason === 'config_invalid' ? 'Error' : 'Last error'}: ${row.lastError}` : ''}`
          : row.state === 'connected'
            ? `MCP server "${target}" is connected with ${row.tools.length} tool(s).${drift}`
            : `MCP server "${target}" is ${row.state}.${row.lastError ? ` Last error: ${row.lastError}` : ''}`,
        fix: reason ? fixFor(reason, target, undefined, row) : drift ? `mcp-reconciler approve ${target} --tool-definitions` : null,
      };
    }
    if (target.startsWith('mcp__')) {
      const tool = c.tools().find((t) => t.name === target);
      const server = c.serverOfTool(target);
      const reason = tool || server === undefined ? null : (c.unavailableReason(server) ?? null);
      return { kind: 'tool' as const, name: target, state: null, reason, message: c.toolUnavailableMessage(target), fix: null };
    }
    const configured = getOwn(c.config().desired, target);
    if (configured) {
      // Listed in the config but never run: `__proto__` (see nameCollisionIssues).
      const issue = nameCollisionIssues({ [target]: configured }).find((i) => i.server === target);
      return {
        kind: 'server' as const,
        name: target,
        state: null,
        reason: null,
        message: `MCP server "${target}" is configured in ${configured.source} but not run${issue ? `: ${issue.message}` : ''}.`,
        fix: issue ? `rename "${target}" in ${configured.source}` : null,
      };
    }
    const known = c.status().map((s) => s.name);
    throw new McpReconcilerError(ErrorCode.UnknownServer, `no MCP server or tool named "${target}"`, {
      hint: known.length ? `configured servers: ${known.join(', ')}; tool names look like mcp__<server>__<tool>` : 'no servers are configured; check `mcp-reconciler config`',
    });
  });
  if (ctx.global.json) ctx.io.stdout.write(`${JSON.stringify(answer, null, 2)}\n`);
  else ctx.io.stdout.write(`${answer.message}${answer.fix ? `\nfix: ${answer.fix}` : ''}\n`);
  return 0;
}

/** `why SERVER|TOOL`: the reason and the fix. */
export const whyCommand: CliCommand = {
  name: 'why',
  positionals: [{ name: 'SERVER|TOOL', arity: 'required', help: 'a server name, or a tool name mcp__<server>__<tool>' }],
  summary: 'why a server or tool is unavailable, and the fix',
  examples: [
    'mcp-reconciler why github                   # the reason and the command that fixes it',
    'mcp-reconciler why mcp__github__create_issue',
    'mcp-reconciler why github --cluster redis://redis.internal:6379 --workspace-id team-tools   # which replica runs a singleton',
  ],
  options: {
    cluster: { type: 'string', value: 'REDIS', help: 'where a clustered gateway (serve --cluster) runs this singleton server, and each replica’s view of it' },
    'workspace-id': { type: 'string', value: 'ID', help: 'with --cluster: the workspace id its replicas share' },
  },
  run,
};
