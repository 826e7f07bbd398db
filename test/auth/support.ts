/** Shared bits of the auth tests: a controller for remote servers, waiting for a server's state by its events. */
import { createMcpController, MemoryApprovalStore, MemoryTokenStore, type McpController, type ServerStatus } from '../../src/index.js';

type ControllerOptions = Parameters<typeof createMcpController>[0];

/**
 * A controller for OAuth tests: no config files, no watcher, decisions and
 * tokens in memory, no process records, one connect attempt (a 401 rests in
 * `needs_auth` at once). `opts` overrides any of these.
 */
export function authTestController(cwd: string, opts: Partial<ControllerOptions> = {}): McpController {
  return createMcpController({
    cwd,
    sources: [],
    watch: false,
    approvals: new MemoryApprovalStore(),
    processStateFile: false,
    backoff: { attempts: 1 },
    oauth: { tokenStore: new MemoryTokenStore() },
    ...opts,
  });
}

/** The status row of `name`, if configured. */
export function stateOf(c: McpController, name = 'remote'): ServerStatus | undefined {
  return c.status().find((s) => s.name === name);
}

/** Resolves once `name` reaches `state` (event-driven, no polling clock). */
export function reach(c: McpController, state: string, name = 'remote'): Promise<void> {
  return new Promise((resolve) => {
    if (stateOf(c, name)?.state === state) return resolve();
    const off = c.on('server-state', (e) => {
      if (e.name === name && e.state === state) {
        off();
        resolve();
      }
    });
  });
}
