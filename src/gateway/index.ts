/**
 * The gateway (`mcp-reconciler serve`): the live registry of one controller
 * served as an MCP server over stdio and streamable HTTP, with per-session
 * scopes over one shared, reference-counted server pool and configurable names.
 */
export { GatewayPool, GATEWAY_IDLE_TIMEOUT_MS, type GatewayPoolOptions, type PoolSession, type SessionListener } from './pool.js';
export {
  GatewayNames,
  gatewayName,
  validateSeparator,
  describeCollision,
  DEFAULT_SEPARATOR,
  CLIENT_TOOL_NAME_PATTERN,
  MAX_SEPARATOR_LENGTH,
  type NameCollision,
  type NamingSource,
  type ResolvedName,
} from './naming.js';
export { createSessionServer, GATEWAY_INFO, type GatewaySession, type SessionServerOptions } from './server.js';
export { serveStdio, eraOfFirstMessage, type StdioGateway, type StdioGatewayOptions, type StdioEra } from './stdio.js';
export { createModernServer, createModernLane, createModernHttpLane, type ModernLane, type ModernHttpLane, type ModernNotifier } from './modern.js';
export { createSessionCore, type SessionCore, type CallContext } from './session-core.js';
export { startHttpGateway, MCP_PATH, GATEWAY_SESSION_IDLE_TIMEOUT_MS, type HttpGateway, type HttpGatewayOptions, type SessionCloseReason } from './http.js';
export { parseServerList, scopeFromRequest, inScope, describeScope, SCOPE_HEADERS, SCOPE_QUERY_PARAM, type SessionScope } from './scope.js';
export { BoundedEventStore } from './event-store.js';
export { gatewayControllerOptions } from './controller-options.js';
