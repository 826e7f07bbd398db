/** The connection layer: from a desired server entry to a live SDK client. */
export { childEnv, DEFAULT_INHERITED_ENV, defaultEnvPolicy, inheritsVariable, type EnvPolicy } from './env.js';
export { ProcessTracker, type ProcessTrackerOptions, type TrackedSpawnOptions } from './processes.js';
export { StdioProcessTransport, type StdioProcessTransportOptions } from './stdio-transport.js';
export { isSessionLossStatus, sessionLossFetch, type SessionLoss } from './session-loss.js';
export { openConnection, type ConnectOptions, type ConnectionEvent, type LiveConnection, type ResourceListing } from './connect.js';
