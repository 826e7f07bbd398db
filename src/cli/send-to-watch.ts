import { canonicalRoot } from '../approvals/store.js';
import { ErrorCode, McpReconcilerError } from '../errors.js';
import type { CliContext } from './command.js';
import { DEFAULT_PICKUP_TIMEOUT_MS, requestChannelPath, sendRequest, type ChannelRequest } from './request-channel.js';

const CODES: ReadonlySet<string> = new Set(Object.values(ErrorCode));

/**
 * Send `request` to the `watch` running for this workspace and print its
 * answer (`--json`: one object). Throws an `McpReconcilerError` saying what
 * happened when the watch refused it (its own error code and hint), or when
 * no running watch took it: `no_watch`, with `noWatchHint` as the advice.
 *
 * @param pickupTimeoutMs how long a running watch has to take the request
 * @returns the exit code (0: the watch did it)
 */
export async function sendToRunningWatch(
  ctx: CliContext,
  request: ChannelRequest,
  noWatchHint: string,
  pickupTimeoutMs = DEFAULT_PICKUP_TIMEOUT_MS,
): Promise<number> {
  const root = await canonicalRoot(ctx.global.root);
  const file = requestChannelPath(ctx.global.approvalsPath, root);
  const outcome = await sendRequest({ file, root, request, pickupTimeoutMs });
  const where = `for ${root}`;
  switch (outcome.kind) {
    case 'no-watch':
      throw new McpReconcilerError(ErrorCode.NoWatch, `no \`mcp-reconciler watch\` is running ${where} (with approvals file ${ctx.global.approvalsPath}), so nothing was done`, {
        hint: noWatchHint,
        details: { root, file },
      });
    case 'not-picked-up':
      throw new McpReconcilerError(
        ErrorCode.NoWatch,
        `no running watch picked this up: a watch ${where} is registered (pid ${outcome.watchers.join(', ')}) but did not take the request within ${pickupTimeoutMs} ms; the request was withdrawn, nothing was done`,
        { hint: `check that watch's terminal (it may be stuck or stopped), or retry with a longer --timeout. ${noWatchHint}`, details: { root, file } },
      );
    case 'no-answer':
      throw new McpReconcilerError(
        ErrorCode.NoWatch,
        `the running watch (pid ${outcome.by}) took the request but did not answer in time; it may still act on it`,
        { hint: "check the watch's output, or run `mcp-reconciler status` to see the server's state", details: { root, file } },
      );
    case 'answered': {
      const { result } = outcome;
      if (!result.ok) {
        const code = result.code && CODES.has(result.code) ? (result.code as ErrorCode) : ErrorCode.ConnectFailed;
        throw new McpReconcilerError(code, `the running watch (pid ${outcome.by}) could not do it: ${result.message}`, {
          ...(result.hint ? { hint: result.hint } : {}),
          details: { root, server: request.server },
        });
      }
      if (ctx.global.json) {
        ctx.io.stdout.write(`${JSON.stringify({ ok: true, request: request.verb, server: request.server, root, watchPid: outcome.by, message: result.message })}\n`);
      } else {
        ctx.io.stdout.write(`${result.message} (running watch, pid ${outcome.by})\n`);
      }
      return 0;
    }
  }
}
