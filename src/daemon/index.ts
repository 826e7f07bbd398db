/**
 * The machine-wide server pool (`mcp-reconciler daemon`): the daemon, its
 * socket protocol and paths, and the stdio shim of `serve --stdio --shared`.
 */
export { startDaemon, socketAnswers, DAEMON_IDLE_TIMEOUT_MS, type Daemon, type DaemonOptions, type DaemonWorkspace, type ResolvedSession } from './server.js';
export { connectDaemon, connectSocket, greet, controlHello, DAEMON_START_TIMEOUT_MS, type SpawnedDaemon } from './client.js';
export { runShim, DAEMON_GONE_CODE, type ShimOptions } from './shim.js';
export { daemonDir, daemonPaths, buildIdentity, checkPrivateDir, ensurePrivateDir, DAEMON_DIR_ENV, type BuildIdentity, type DaemonPaths } from './paths.js';
export { DAEMON_PROTOCOL, DAEMON_IDLE_ENV, type DaemonHello, type DaemonWelcome, type DaemonStatus, type DaemonWorkspaceInfo, type DaemonSessionInfo, type SessionRequest } from './protocol.js';
export { SharedMcpController, type SharedControllerOptions, type SharedTool } from './shared-controller.js';
