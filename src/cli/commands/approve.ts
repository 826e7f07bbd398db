import { isGated } from '../../../machines/admission.js';
import { canonicalRoot, FileApprovalStore } from '../../approvals/store.js';
import { ErrorCode, McpReconcilerError } from '../../errors.js';
import type { CliCommand, CliContext } from '../command.js';
import { loadWorkspace } from '../workspace.js';

/**
 * Writes a decision for the server's current config hash without starting
 * anything: approving must never be the thing that spawns a process.
 */
async function decide(ctx: CliContext, decision: 'approved' | 'rejected'): Promise<number> {
  const verb = decision === 'approved' ? 'approve' : 'reject';
  const [server, ...rest] = ctx.positionals;
  if (!server || rest.length > 0) {
    throw new McpReconcilerError(ErrorCode.Usage, `${verb} needs exactly one SERVER name`, { hint: `e.g. mcp-reconciler ${verb} docs` });
  }
  if (decision === 'approved' && ctx.values.session === true) {
    throw new McpReconcilerError(ErrorCode.Usage, '--session approvals live only as long as a running controller', {
      hint: 'answer the prompt in `mcp-reconciler watch` with "s", or call approve(name, { persist: false }) from the library',
    });
  }
  const ws = await loadWorkspace(ctx.global, ctx.io);
  const entry = ws.assembled.desired[server];
  if (!entry) {
    const known = Object.keys(ws.assembled.desired);
    throw new McpReconcilerError(ErrorCode.UnknownServer, `no MCP server named "${server}" is configured in ${ctx.global.root}`, {
      hint: known.length ? `configured servers: ${known.join(', ')}` : 'check `mcp-reconciler config`',
    });
  }
  if (!isGated(entry)) {
    throw new McpReconcilerError(ErrorCode.Usage, `"${server}" comes from the ${entry.scope} scope, which needs no approval`, {
      hint: decision === 'rejected' ? 'to keep it down, add it to `mcp.excluded` in your settings' : 'it connects without one',
    });
  }
  const store = new FileApprovalStore(ctx.global.approvalsPath);
  const root = await canonicalRoot(ctx.global.root);
  await store.set(root, server, { hash: entry.hash, decision, at: new Date().toISOString() });
  if (ctx.global.json) ctx.io.stdout.write(`${JSON.stringify({ server, decision, hash: entry.hash, root })}\n`);
  else ctx.io.stdout.write(`${decision} "${server}" for its current config (${entry.hash.slice(0, 12)}) in ${root}\n`);
  return 0;
}

/** `approve SERVER`: persist an approval for the server's current config hash. */
export const approveCommand: CliCommand = {
  name: 'approve',
  usage: 'SERVER',
  summary: 'approve a project/workspace server for its current config',
  options: { session: { type: 'boolean' } },
  optionHelp: ['--session   approve for the running session only (watch mode)'],
  run: (ctx) => decide(ctx, 'approved'),
};

/** `reject SERVER`: persist a rejection for the server's current config hash. */
export const rejectCommand: CliCommand = {
  name: 'reject',
  usage: 'SERVER',
  summary: 'reject a project/workspace server for its current config',
  run: (ctx) => decide(ctx, 'rejected'),
};
