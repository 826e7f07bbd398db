/**
 * `status --shared`: what the user's daemon serves — its workspaces, their
 * sessions, and which session holds which server (docs/daemon.md); with
 * `--ui`, the same kept live on a dashboard page.
 */
import { connectDaemon, controlHello, greet } from '../daemon/client.js';
import type { DaemonStatus } from '../daemon/protocol.js';
import type { CliContext } from './command.js';
import { serveUntilStopped } from './serve-dashboard.js';
import { cliBuild, cliDaemonPaths } from './daemon-link.js';
import { displayPath } from '../format/paths.js';
import { table } from './output.js';

/** The daemon's status as lines for people. */
export function sharedStatusText(status: DaemonStatus, home: string): string {
  const lines = [
    `daemon pid ${status.pid}, mcp-reconciler ${status.version} (build ${status.build}), up since ${new Date(status.startedAt).toISOString()}`,
    `socket ${status.socket}; exits ${status.idleTimeoutMs} ms after its last session`,
  ];
  if (status.workspaces.length === 0) lines.push('no workspace open');
  for (const w of status.workspaces) {
    lines.push('', `workspace ${displayPath(w.root, w.root, home)} (${w.root}): ${w.sessions.length} session(s)`);
    if (w.sessions.length > 0) {
      lines.push(
        table([
          ['SESSION', 'PID', 'CLIENT', 'SERVERS'],
          ...w.sessions.map((s) => [s.id.slice(0, 8), String(s.pid), s.client ?? '-', s.servers?.join(',') ?? 'all']),
        ]),
      );
    }
    if (w.servers.length > 0) {
      lines.push(
        table([
          ['SERVER', 'STATE', 'PID', 'HELD BY'],
          ...w.servers.map((r) => [r.name, r.state, r.pid === undefined ? '-' : String(r.pid), r.heldBy.map((id) => id.slice(0, 8)).join(',') || '-']),
        ]),
      );
    }
  }
  return `${lines.join('\n')}\n`;
}

/** Ask the running daemon of this build for its status (never starts one). */
async function readSharedStatus(env: NodeJS.ProcessEnv): Promise<DaemonStatus> {
  const socket = await connectDaemon(cliDaemonPaths(env));
  try {
    const welcome = await greet(socket, controlHello(cliBuild().id, 'status'));
    return welcome.status!;
  } finally {
    socket.destroy();
  }
}

/**
 * `status --shared --ui`: serve the daemon's dashboard (its workspaces,
 * sessions and holds, live) until Ctrl-C. It only reads: no daemon is
 * started, and while none runs the page says so and waits for one.
 */
async function serveSharedDashboard(ctx: CliContext): Promise<number> {
  const { startDaemonDashboard } = await import('../daemon/dashboard.js');
  return serveUntilStopped(ctx, (port) => startDaemonDashboard(() => readSharedStatus(ctx.io.env), { port }), 'daemon dashboard', 'the daemon keeps running');
}

/** Print the daemon's status; exit code 1 when no daemon of this build runs. With `--ui`, serve it as a live dashboard. */
export async function printSharedStatus(ctx: CliContext): Promise<number> {
  if (ctx.values.ui === true) return serveSharedDashboard(ctx);
  const status = await readSharedStatus(ctx.io.env);
  ctx.io.stdout.write(ctx.global.json ? `${JSON.stringify(status, null, 2)}\n` : sharedStatusText(status, ctx.global.home));
  return 0;
}
