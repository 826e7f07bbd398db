import { DEFAULT_REQUEST_TIMEOUT_MSEC, type CallToolResult } from '@modelcontextprotocol/client';
import { isRequestTimeout } from '../../connection/errors.js';
import type { McpController } from '../../controller/controller.js';
import { ErrorCode, McpReconcilerError } from '../../errors.js';
import { parseTimeoutMs, type CliCommand, type CliContext } from '../command.js';
import { withController } from '../controller-session.js';
import { terminalElicitation } from '../elicit-prompt.js';
import { canPrompt } from '../inputs.js';
import { terminalToolApproval } from '../tool-approval-prompt.js';

function parseArgsJson(text: string | undefined): Record<string, unknown> {
  if (text === undefined || text.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new McpReconcilerError(ErrorCode.Usage, `JSON_ARGS is not valid JSON: ${(err as Error).message}`, {
      hint: `pass an object, e.g. '{"text":"hi"}' (quote it for your shell)`,
    });
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new McpReconcilerError(ErrorCode.Usage, 'JSON_ARGS must be a JSON object', { hint: `e.g. '{"text":"hi"}'` });
  }
  return value as Record<string, unknown>;
}

async function run(ctx: CliContext): Promise<number> {
  // main checked the count against the declared `positionals`.
  const [tool, json] = ctx.positionals as [string, string?];
  const args = parseArgsJson(json);
  const timeoutMs = parseTimeoutMs(ctx.values);
  // On a terminal a tool may ask the user (elicitation); without one it is not offered, so a
  // server that needs an answer says so instead of waiting for one nobody can give.
  // `permissions.ask` is asked on the terminal too; without one such a call fails with tool_denied.
  const extra = canPrompt(ctx.io) ? { onElicitation: terminalElicitation(ctx.io), onToolApproval: terminalToolApproval(ctx.io) } : {};
  const call = (c: McpController): Promise<CallToolResult> =>
    c.callTool(tool, args, timeoutMs === undefined ? {} : { timeoutMs }).catch((err: unknown) => {
      // The SDK's own message ("Request timed out") names neither the tool nor the limit.
      if (isRequestTimeout(err)) {
        const limit = timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MSEC;
        throw new McpReconcilerError(ErrorCode.Timeout, `Tool ${tool} did not answer within ${limit} ms${timeoutMs === undefined ? ' (the default)' : ''}; the call was cancelled`, {
          hint: 'raise the limit with --timeout MS, or check the server with `mcp-reconciler status`',
          details: { tool, timeoutMs: limit },
          cause: err,
        });
      }
      throw err;
    });
  const result = await withController(ctx, call, extra);
  if (ctx.global.json) {
    ctx.io.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } else {
    for (const part of result.content ?? []) {
      if (part.type === 'text') ctx.io.stdout.write(`${part.text}\n`);
      else ctx.io.stdout.write(`${JSON.stringify(part)}\n`);
    }
    if (result.structuredContent && (result.content ?? []).length === 0) {
      ctx.io.stdout.write(`${JSON.stringify(result.structuredContent, null, 2)}\n`);
    }
  }
  return result.isError ? 1 : 0;
}

/** `call TOOL [JSON_ARGS]`: call one tool once and print its result. */
export const callCommand: CliCommand = {
  name: 'call',
  examples: [
    "mcp-reconciler call mcp__files__read_file '{\"path\":\"README.md\"}'",
    "mcp-reconciler call mcp__notes__echo '{\"text\":\"hi\"}' --timeout 5000 --json",
  ],
  positionals: [
    { name: 'TOOL', arity: 'required', help: 'the registered tool name, mcp__<server>__<tool> (see `mcp-reconciler tools`)' },
    { name: 'JSON_ARGS', arity: 'optional', help: 'the arguments as one JSON object (default {})' },
  ],
  summary: 'call a tool and print its result',
  options: {
    timeout: { type: 'string', value: 'MS', help: `give up on the call after MS milliseconds (default ${DEFAULT_REQUEST_TIMEOUT_MSEC})` },
  },
  run,
};
