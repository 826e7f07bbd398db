/** Shared bits of the auth tests: waiting for a server's state by its events. */
import type { McpController, ServerStatus } from '../../src/index.js';

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
