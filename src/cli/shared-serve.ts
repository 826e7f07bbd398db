/**
 * `serve --stdio --shared`: the MCP client's stdio passed to a session on
 * the user's daemon, which is started when absent (docs/daemon.md).
 */
import { connectDaemon, greet } from '../daemon/client.js';
import { DAEMON_PROTOCOL } from '../daemon/protocol.js';
import { runShim } from '../daemon/shim.js';
import type { CliContext } from './command.js';
import { cliBuild, cliDaemonPaths, sessionRequest, spawnDaemon } from './daemon-link.js';
import { writeRaw } from './output.js';

/** Run the shim until the client closes stdin; the exit code. */
export async function runSharedStdio(ctx: CliContext): Promise<number> {
  // serve's run checked the options (usage errors come before any daemon starts).
  const { io } = ctx;
  const log = (line: string): void => void io.stderr.write(`mcp-reconciler serve: ${line}\n`);
  const paths = cliDaemonPaths(io.env);
  const build = cliBuild();
  const request = sessionRequest(ctx);
  // A client that went away leaves a broken pipe: nothing is left to serve.
  if (io.stdin === process.stdin) process.stdout.on('error', () => process.exit(0));
  return runShim({
    stdin: io.stdin!,
    stdout: { write: (text: string) => writeRaw(io.stdout, text) },
    log,
    attach: async () => {
      const socket = await connectDaemon(paths, () => spawnDaemon(paths, io.env));
      const welcome = await greet(socket, { protocol: DAEMON_PROTOCOL, build: build.id, kind: 'session', pid: process.pid, session: request });
      return { socket, pid: welcome.pid };
    },
  });
}
