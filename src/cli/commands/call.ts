import { DEFAULT_REQUEST_TIMEOUT_MSEC } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { ErrorCode as McpErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { ErrorCode, McpReconcilerError } from '../../errors.js';
import { parseTimeoutMs, type CliCommand, type CliContext } from '../command.js';
import { withController } from '../controller-session.js';

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
  const [tool, json, ...rest] = ctx.positionals;
  if (!tool || rest.length > 0) {
    throw new McpReconcilerError(ErrorCode.Usage, 'call needs TOOL and at most one JSON_ARGS', {
      hint: `e.g. mcp-reconciler call mcp__docs__echo '{"text":"hi"}'`,
    });
  }
  const args = parseArgsJson(json);
  const timeoutMs = parseTimeoutMs(ctx.values);
  const result = await withController(ctx, (c) =>
    c.callTool(tool, args, timeoutMs === undefined ? {} : { timeoutMs }).catch((err: unknown) => {
      // The SDK's own message ("Request timed out") names neither the tool nor the limit.
      if (err instanceof McpError && err.code === McpErrorCode.RequestTimeout) {
        const limit = timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MSEC;
        throw new McpReconcilerError(ErrorCode.Timeout, `Tool ${tool} did not answer within ${limit} ms${timeoutMs === undefined ? ' (the default)' : ''}; the call was cancelled`, {
          hint: 'raise the limit with --timeout MS, or check the server with `mcp-reconciler status`',
          details: { tool, timeoutMs: limit },
          cause: err,
        });
      }
      throw err;
    }),
  );
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
  usage: 'TOOL [JSON_ARGS]',
  summary: 'call a tool and print its result',
  options: { timeout: { type: 'string' } },
  optionHelp: ['--timeout MS   give up on the call after MS milliseconds (default 60000)'],
  run,
};
