import { nameCollisionIssues } from '../../config/name-collisions.js';
import { getOwn } from '../../util/own.js';
import { describeReason, fixFor } from '../../controller/messages.js';
import { ErrorCode, McpReconcilerError } from '../../errors.js';
import type { CliCommand, CliContext } from '../command.js';
import { withController } from '../controller-session.js';

async function run(ctx: CliContext): Promise<number> {
  // main checked the count against the declared `positionals`.
  const [target] = ctx.positionals as [string];
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
  examples: ['mcp-reconciler why github                   # the reason and the command that fixes it', 'mcp-reconciler why mcp__github__create_issue'],
  run,
};
