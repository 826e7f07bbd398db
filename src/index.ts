/**
 * mcp-reconciler: keeps a workspace's MCP servers in the state their config
 * asks for. The public surface (SPEC §10), nothing else.
 */
import { createMcpController as createLocalController, McpController } from './controller/controller.js';
import type { McpControllerOptions } from './controller/types.js';
import { SharedMcpController, type SharedControllerOptions } from './daemon/shared-controller.js';
export { McpController, SharedMcpController, type SharedControllerOptions };
export type { SharedTool } from './daemon/shared-controller.js';

/**
 * Create a controller. With `{ shared: true }` it is a session on the user's
 * daemon instead (docs/daemon.md): the daemon runs the servers for every
 * session on the machine, and this process runs none.
 */
export function createMcpController<O extends McpControllerOptions | SharedControllerOptions>(options: O): O extends SharedControllerOptions ? SharedMcpController : McpController {
  const controller = 'shared' in options && options.shared === true ? new SharedMcpController(options) : createLocalController(options as McpControllerOptions);
  return controller as O extends SharedControllerOptions ? SharedMcpController : McpController;
}
export type {
  McpControllerOptions,
  McpControllerEvents,
  ServerStatus,
  Reason,
  ServerStateName,
  PublicStatus,
  CallToolOptions,
  ResourceOptions,
  Logger,
} from './controller/types.js';
export type { RegisteredTool, RegisteredPrompt, SkippedTool } from './registry/registry.js';
export type { ToolMatch, SearchToolsOptions } from './search/tool-search.js';
export { TOKEN_ENCODING } from './registry/tokens.js';
export { SEARCH_TOOL, CALL_TOOL, type ToolExposure, type ToolExposureMode, type ExposedTools, type OwnToolDefinition } from './search/exposure.js';
export type { RegisteredResource, RegisteredResourceTemplate, ResourceChange, ResourceConflict } from './registry/resources.js';
export type { ResourceUpdate, ResourceUpdateListener } from './connection/subscriptions.js';
export { gatingEqual, type GatingLists } from './gating/equality.js';
export { approvalHash, fingerprint, serversEqual } from './config/identity.js';
export { computeGating, effectiveAllowed, type GatingInput, type ComputedGating } from './gating/compute.js';
export { FileApprovalStore, MemoryApprovalStore, type ApprovalStore, type ApprovalRecord } from './approvals/store.js';
export { presets, type Preset } from './config/presets.js';
export { readServerLog, defaultLogDir, DEFAULT_LOG_MAX_BYTES, type LogRecord, type LogSource, type ReadLogOptions } from './controller/server-logs.js';
export {
  addServer,
  removeServer,
  editTargets,
  EDIT_SCOPES,
  type AddServerOptions,
  type RemoveServerOptions,
  type EditContext,
  type EditResult,
  type EditScope,
  type EditTarget,
  type ServerSpec,
} from './config/edit.js';
export type { SetEnabledOptions, SetEnabledResult } from './controller/switches.js';
export { LOG_LEVELS, type LogLevel, type ToolPermissionLists } from '../machines/types.js';
export { READ_ONLY_RULE, ANNOTATION_RULES, type ToolApprovalAnswer, type ToolApprovalHandler, type ToolApprovalRequest } from './controller/tool-policy.js';
export { HOST_SWITCHES, type HostSwitches } from './config/enablement.js';
export { importServers, type ImportOptions, type ImportedServer } from './config/import.js';
export { defaultWorkspaceStatePath } from './config/workspace-state.js';
export type { ConfigSource, ConfigIssue } from './config/sources.js';
export type { InputResolver, InputSpec } from './config/load.js';
export { FORMAT_NAMES, type FormatName } from './config/formats.js';
export { McpReconcilerError, ErrorCode } from './errors.js';
export { FileTokenStore, MemoryTokenStore, defaultTokenStorePath, credentialKey, type TokenStore, type StoredCredentials } from './auth/token-store.js';
export type { AuthorizationUrlHandler, AuthorizeOptions } from './auth/manager.js';
export type {
  AuthorizationGrantHandler,
  AuthorizationGrantContext,
  RequestJwtAuthorizationGrantOptions,
  JwtAuthorizationGrant,
} from './auth/cross-app-access.js';

type CrossAppAccess = typeof import('./auth/cross-app-access.js');

/**
 * Exchange the user's IdP ID token for an ID-JAG (SEP-990 cross-app access),
 * for an `onAuthorizationGrant` hook. Loaded on first call, like the rest of
 * the OAuth code.
 */
export async function requestJwtAuthorizationGrant(
  ...args: Parameters<CrossAppAccess['requestJwtAuthorizationGrant']>
): ReturnType<CrossAppAccess['requestJwtAuthorizationGrant']> {
  return (await import('./auth/cross-app-access.js')).requestJwtAuthorizationGrant(...args);
}

/** {@link requestJwtAuthorizationGrant} after discovering the IdP's token endpoint from its issuer URL. */
export async function discoverAndRequestJwtAuthorizationGrant(
  ...args: Parameters<CrossAppAccess['discoverAndRequestJwtAuthorizationGrant']>
): ReturnType<CrossAppAccess['discoverAndRequestJwtAuthorizationGrant']> {
  return (await import('./auth/cross-app-access.js')).discoverAndRequestJwtAuthorizationGrant(...args);
}
export type {
  ElicitationCompleteHandler,
  ElicitationHandler,
  ElicitationRequest,
  ElicitationAnswer,
  SamplingHandler,
} from './connection/client-capabilities.js';
export { DEFAULT_INHERITED_ENV, type EnvPolicy } from './connection/env.js';
export * as machines from '../machines/index.js';
export type { ServerConfig, ServerOAuthConfig, DesiredServer, Scope, GatingState, BackoffPolicy } from '../machines/types.js';
export type { Dashboard, DashboardOptions } from './dashboard/server.js';
export { graphOf, renderChart, toMermaid, toDot, toSvg, toJson, activeStateIds } from './viz/index.js';
export type {
  GatewayPool,
  GatewayPoolOptions,
  GatewaySession,
  SessionScope,
  StdioGateway,
  StdioGatewayOptions,
  HttpGateway,
  HttpGatewayOptions,
} from './gateway/index.js';

/**
 * The gateway (`mcp-reconciler serve` as a library: `GatewayPool`,
 * `serveStdio`, `startHttpGateway`; see `src/gateway/`). Loaded on first use,
 * like the dashboard, so hosts that never serve do not load the SDK's server
 * side.
 */
export function loadGateway(): Promise<typeof import('./gateway/index.js')> {
  return import('./gateway/index.js');
}

/**
 * Serve the live dashboard for `controller` on 127.0.0.1 (see
 * `src/dashboard/server.ts`). Loaded on first use so hosts that never open it
 * do not carry its code.
 */
export async function startDashboard(
  ...args: Parameters<typeof import('./dashboard/server.js').startDashboard>
): ReturnType<typeof import('./dashboard/server.js').startDashboard> {
  const { startDashboard: start } = await import('./dashboard/server.js');
  return start(...args);
}
