import { isGated } from '../../../machines/admission.js';
import { canonicalRoot, FileApprovalStore } from '../../approvals/store.js';
import { ErrorCode, McpReconcilerError } from '../../errors.js';
import { parseTimeoutMs, serverPositional, type CliCommand, type CliContext, type CliPositional } from '../command.js';
import { DEFAULT_PICKUP_TIMEOUT_MS } from '../request-channel.js';
import { sendToRunningWatch } from '../send-to-watch.js';
import { loadWorkspace } from '../workspace.js';
import { getOwn } from '../../util/own.js';
import { ToolDefinitions } from '../../approvals/tool-definitions.js';
import { defaultListingCacheDir } from '../../cache/listing-cache.js';

/** `--cluster` with `--workspace-id`: the decision goes to a clustered gateway's Redis (docs/cluster.md). */
function clusterOf(ctx: CliContext): { target: string; workspaceId: string } | undefined {
  const target = typeof ctx.values.cluster === 'string' ? ctx.values.cluster.trim() : undefined;
  const workspaceId = typeof ctx.values['workspace-id'] === 'string' ? ctx.values['workspace-id'].trim() : undefined;
  if (!target && !workspaceId) return undefined;
  if (!target || !workspaceId) {
    throw new McpReconcilerError(ErrorCode.Usage, '--cluster and --workspace-id go together', {
      hint: 'give both, as the gateway replicas were started with (serve --http --cluster REDIS --workspace-id ID)',
    });
  }
  if (ctx.values.session === true) throw new McpReconcilerError(ErrorCode.Usage, '--session does not apply with --cluster', { hint: 'a cluster keeps its decisions in Redis for every replica' });
  return { target, workspaceId };
}

const clusterOptions = {
  cluster: { type: 'string', value: 'REDIS', help: "store the decision in a clustered gateway's Redis (as its `serve --cluster`)" },
  'workspace-id': { type: 'string', value: 'ID', help: 'with --cluster: the workspace id its replicas share' },
} as const;

/**
 * Writes a decision for the server's current config hash without starting
 * anything: approving must never be the thing that spawns a process.
 */
async function decide(ctx: CliContext, decision: 'approved' | 'rejected'): Promise<number> {
  // main checked the count against the declared `positionals`.
  const [server] = ctx.positionals as [string];
  const timeout = parseTimeoutMs(ctx.values);
  if (decision === 'approved' && ctx.values['tool-definitions'] === true) return approveTools(ctx, server, timeout);
  if (decision === 'approved' && ctx.values.session === true) {
    // A session approval lives in a running controller's memory, so it goes to the
    // running watch; the watch checks the name and scope against its own config.
    return sendToRunningWatch(
      ctx,
      { verb: 'approve-session', server },
      'a session approval lives only as long as the watch that holds it; run `mcp-reconciler approve` without --session to store the approval for every run, or start `mcp-reconciler watch` for this workspace (same --cwd and --approvals) and run this again',
      timeout,
    );
  }
  if (timeout !== undefined) {
    throw new McpReconcilerError(ErrorCode.Usage, '--timeout only applies with --session (how long the running watch has to take the approval)', {
      hint: 'drop --timeout; a stored approval is written directly',
    });
  }
  const ws = await loadWorkspace(ctx.global, ctx.io);
  const entry = configuredEntry(ws.assembled.desired, server, ctx.global.root);
  if (!isGated(entry)) {
    throw new McpReconcilerError(ErrorCode.Usage, `"${server}" comes from the ${entry.scope} scope, which needs no approval`, {
      hint: decision === 'rejected' ? 'to keep it down, add it to `mcp.excluded` in your settings' : 'it connects without one',
    });
  }
  const root = await canonicalRoot(ctx.global.root);
  const record = { hash: entry.hash, decision, at: new Date().toISOString() };
  const cluster = clusterOf(ctx);
  if (cluster) {
    // Only with --cluster: without it nothing of Redis is loaded (docs/cluster.md).
    const { connectRedis, RedisApprovalStore, workspaceKeys, checkWorkspaceId } = await import('../../cluster/index.js');
    const keys = workspaceKeys(checkWorkspaceId(cluster.workspaceId));
    const redis = await connectRedis(cluster.target);
    try {
      await new RedisApprovalStore({ redis, keys, target: cluster.target }).set(root, server, record);
    } finally {
      redis.destroy();
    }
    if (ctx.global.json) ctx.io.stdout.write(`${JSON.stringify({ server, decision, hash: entry.hash, workspaceId: cluster.workspaceId })}\n`);
    else ctx.io.stdout.write(`${decision} "${server}" for its current config (${entry.hash.slice(0, 12)}) in cluster workspace ${cluster.workspaceId}\n`);
    return 0;
  }
  const store = new FileApprovalStore(ctx.global.approvalsPath);
  await store.set(root, server, record);
  if (ctx.global.json) ctx.io.stdout.write(`${JSON.stringify({ server, decision, hash: entry.hash, root })}\n`);
  else ctx.io.stdout.write(`${decision} "${server}" for its current config (${entry.hash.slice(0, 12)}) in ${root}\n`);
  return 0;
}

/**
 * `approve SERVER --tool-definitions`: accept the server's current tool definitions
 * (docs/tool-definitions.md). A running watch accepts what it has listed and
 * registers held-back changes at once; without one, the server's record is
 * cleared, so its next listing is accepted as it is.
 */
async function approveTools(ctx: CliContext, server: string, timeout: number | undefined): Promise<number> {
  try {
    return await sendToRunningWatch(ctx, { verb: 'approve-tools', server }, '', timeout);
  } catch (err) {
    if (!(err instanceof McpReconcilerError) || err.code !== ErrorCode.NoWatch || !/no `mcp-reconciler watch` is running/.test(err.message)) throw err;
  }
  const ws = await loadWorkspace(ctx.global, ctx.io);
  const entry = configuredEntry(ws.assembled.desired, server, ctx.global.root);
  const root = await canonicalRoot(ctx.global.root);
  const definitions = new ToolDefinitions(defaultListingCacheDir(), root, (err) => {
    throw err;
  });
  definitions.forget(server, entry.fingerprint);
  await definitions.flush();
  if (ctx.global.json) ctx.io.stdout.write(`${JSON.stringify({ server, tools: 'accept-next-listing', root })}\n`);
  else ctx.io.stdout.write(`no watch is running: the next tool listing of "${server}" will be accepted as it is\n`);
  return 0;
}

const serverArg = (what: string): CliPositional => serverPositional(`the project or workspace server to ${what} (a name from \`mcp-reconciler config\`)`);

/**
 * `approve SERVER`: persist an approval for the server's current config hash;
 * `--session`: approve it in the running `watch` only (nothing stored).
 */
export const approveCommand: CliCommand = {
  name: 'approve',
  examples: [
    "mcp-reconciler approve docs                 # approve the project server \"docs\" for its current config",
    "mcp-reconciler approve docs --session       # approve it only for the running watch (nothing stored)",
    "mcp-reconciler approve docs --tool-definitions  # accept the changed tool definitions of docs",
  ],
  positionals: [serverArg('approve')],
  summary: 'approve a project/workspace server for its current config',
  options: {
    session: { type: 'boolean', help: 'approve for the running watch of this workspace only; nothing is stored' },
    'tool-definitions': { type: 'boolean', help: "accept the server's current tool definitions (held back by pinToolDefinitions, or drifted since accepted)" },
    timeout: { type: 'string', value: 'MS', help: `with --session: how long the running watch has to take it (default ${DEFAULT_PICKUP_TIMEOUT_MS})` },
    ...clusterOptions,
  },
  run: (ctx) => decide(ctx, 'approved'),
};

/** `reject SERVER`: persist a rejection for the server's current config hash. */
export const rejectCommand: CliCommand = {
  name: 'reject',
  examples: [
    "mcp-reconciler reject docs                  # never start \"docs\" with this exact config",
  ],
  positionals: [serverArg('reject')],
  summary: 'reject a project/workspace server for its current config',
  options: { ...clusterOptions },
  run: (ctx) => decide(ctx, 'rejected'),
};

/** `server`'s entry in the desired map (own keys only: `approve toString` must not find Object.prototype.toString). */
function configuredEntry<E>(desired: Record<string, E>, server: string, root: string): E {
  const entry = getOwn(desired, server);
  if (entry) return entry;
  const known = Object.keys(desired);
  throw new McpReconcilerError(ErrorCode.UnknownServer, `no MCP server named "${server}" is configured in ${root}`, {
    hint: known.length ? `configured servers: ${known.join(', ')}` : 'check `mcp-reconciler config`',
  });
}
