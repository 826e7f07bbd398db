/**
 * A read-only dashboard served by a CLI verb until Ctrl-C (`status --shared
 * --ui`, `status --cluster … --ui`): `--port`, the URL printed (a JSON event
 * with `--json`), closed on the way out.
 */
import { ErrorCode, McpReconcilerError } from '../errors.js';
import type { CliContext } from './command.js';
import { untilStopped } from './until-stopped.js';

/** The port `--port` names; default 0 (a free one). */
function portOf(ctx: CliContext): number {
  const given = ctx.values.port;
  if (given === undefined) return 0;
  const port = typeof given === 'string' && /^\d+$/.test(given.trim()) ? Number(given) : NaN;
  if (!(port >= 0 && port <= 65_535)) throw new McpReconcilerError(ErrorCode.Usage, `invalid --port "${String(given)}"`, { hint: 'use 0 for a free port, or 1-65535' });
  return port;
}

/** Start the dashboard `start` makes on `--port`, print its URL as `what`, and serve it until Ctrl-C / SIGTERM. */
export async function serveUntilStopped(ctx: CliContext, start: (port: number) => Promise<{ url: string; close(): Promise<void> }>, what: string, after = ''): Promise<number> {
  const port = portOf(ctx);
  const session = untilStopped(ctx);
  try {
    const dashboard = await start(port);
    try {
      ctx.io.stdout.write(ctx.global.json ? `${JSON.stringify({ event: 'dashboard', url: dashboard.url })}\n` : `${what}: ${dashboard.url}\n(Ctrl-C stops it${after ? `; ${after}` : ''})\n`);
      await session.done;
    } finally {
      await dashboard.close();
    }
  } finally {
    session.release();
  }
  return 0;
}
