import { parseTimeoutMs, serverPositional, type CliCommand, type CliContext } from '../command.js';
import { DEFAULT_PICKUP_TIMEOUT_MS } from '../request-channel.js';
import { sendToRunningWatch } from '../send-to-watch.js';

/**
 * Only a running `watch` holds connections worth reconnecting: a one-shot
 * command starts every server afresh and exits, so reconnecting in-process
 * would change nothing. Without a watch this fails and says so.
 */
async function run(ctx: CliContext): Promise<number> {
  // main checked the count against the declared `positionals`.
  const [server] = ctx.positionals as [string];
  const timeout = parseTimeoutMs(ctx.values);
  return sendToRunningWatch(
    ctx,
    { verb: 'reconnect', server },
    'reconnect acts on the servers of a running watch; one-shot commands (status, tools, call) start every server afresh, so there is nothing to reconnect: run `mcp-reconciler status` to see whether it connects now, or start `mcp-reconciler watch` for this workspace (same --cwd and --approvals) and run reconnect again',
    timeout,
  );
}

/** `reconnect SERVER`: ask the running `watch` of this workspace to reconnect a server now, with a fresh retry budget. */
export const reconnectCommand: CliCommand = {
  name: 'reconnect',
  examples: [
    "mcp-reconciler reconnect github             # the running watch retries \"github\" now, with a fresh budget",
  ],
  positionals: [serverPositional('a server of the running watch')],
  summary: 'make the running watch reconnect a failed, needs-auth or reconnecting server now',
  options: {
    timeout: { type: 'string', value: 'MS', help: `how long the running watch has to take the request (default ${DEFAULT_PICKUP_TIMEOUT_MS})` },
  },
  run,
};
