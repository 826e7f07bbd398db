/**
 * mcp-reconciler: keeps a workspace's MCP servers in the state their config
 * asks for. The public surface (SPEC §10), nothing else.
 */
export { createMcpController, McpController } from './controller.js';
export type {
  McpControllerOptions,
  McpControllerEvents,
  ServerStatus,
  Reason,
  ServerStateName,
  PublicStatus,
  CallToolOptions,
  Logger,
} from './controller/types.js';
export type { RegisteredTool, RegisteredPrompt, SkippedTool } from './registry/registry.js';
export { serversEqual, gatingEqual, type GatingLists } from './gating/equality.js';
export { fingerprint } from './gating/fingerprint.js';
export { computeGating, effectiveAllowed, type GatingInput, type ComputedGating } from './gating/compute.js';
export { approvalHash } from './approvals/hash.js';
export { FileApprovalStore, MemoryApprovalStore, type ApprovalStore, type ApprovalRecord } from './approvals/store.js';
export { presets, type Preset } from './config/presets.js';
export type { ConfigSource, ConfigIssue } from './config/sources.js';
export { McpReconcilerError, ErrorCode } from './errors.js';
export * as machines from '../machines/index.js';
export type { ServerConfig, DesiredServer, Scope, GatingState, BackoffPolicy } from '../machines/types.js';
export { startDashboard, type Dashboard, type DashboardOptions } from './dashboard/server.js';
export { graphOf, renderChart, toMermaid, toDot, toSvg, toJson, activeStateIds } from './viz/index.js';
