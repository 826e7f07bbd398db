import { DAEMON_IDLE_ENV, DAEMON_IDLE_TIMEOUT_MS } from '../../daemon/protocol.js';
import type { CliCommand } from '../command.js';


/** `daemon`: the machine-wide server pool that `serve --stdio --shared` sessions attach to. */
export const daemonCommand: CliCommand = {
  name: 'daemon',
  summary: 'run the per-user daemon that serves every `serve --stdio --shared` session from one server pool',
  examples: [
    'mcp-reconciler daemon                        # in the foreground (clients start it by themselves when absent)',
    'mcp-reconciler daemon --idle-timeout 60000   # exit after a minute without sessions',
    'mcp-reconciler daemon --stop                 # stop the running daemon of this build',
  ],
  options: {
    'idle-timeout': { type: 'string', value: 'MS', help: `exit after MS with no session (default ${DAEMON_IDLE_TIMEOUT_MS}, or $${DAEMON_IDLE_ENV})` },
    stop: { type: 'boolean', help: 'stop the running daemon of this build and exit' },
  },
  run: async (ctx) => (await import('../daemon-host.js')).runDaemon(ctx),
};
