/** A controller that holds only what a test adds to it, and the disposal of a test's controllers. */
import { afterEach } from 'vitest';
import { createMcpController, MemoryApprovalStore, type McpController } from '../../src/index.js';

type ControllerOptions = Parameters<typeof createMcpController>[0];

/**
 * A controller in `cwd` that reads no config file, watches nothing, keeps
 * approvals in memory and writes no process records: its servers are the
 * runtime servers the test adds. `opts` adds to or overrides any of these.
 */
export function bareController(cwd: string, opts: Partial<ControllerOptions> = {}): McpController {
  return createMcpController({ cwd, sources: [], watch: false, approvals: new MemoryApprovalStore(), processStateFile: false, ...opts });
}

/**
 * The controllers of each test: push every one a test makes; all are disposed
 * after it. vitest runs after-hooks in reverse: call this after registering the
 * hooks of what the controllers connect to, so those end after the controllers.
 */
export function disposedAfterEach(): McpController[] {
  const controllers: McpController[] = [];
  afterEach(async () => {
    await Promise.all(controllers.splice(0).map((c) => c.dispose()));
  });
  return controllers;
}
