import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { BackoffPolicy, DesiredServer, Scope } from '../../machines/types.js';
import type { ConfigIssue, ConfigSource } from '../config/sources.js';
import type { Preset } from '../config/presets.js';
import type { ApprovalStore } from '../approvals/store.js';
import type { EnvPolicy } from '../connection/env.js';
import type { RegisteredPrompt, RegisteredTool, SkippedTool } from '../registry/registry.js';

import type { PublicStatus, Reason, ServerStateName } from '../../machines/reason.js';

export type { PublicStatus, Reason, ServerStateName };

/** One row of {@link McpController.status}. */
export interface ServerStatus {
  name: string;
  scope: Scope | undefined;
  /** Source file path, or `runtime` / `sdk` / `inline`. */
  source: string | undefined;
  state: ServerStateName;
  status: PublicStatus;
  reason: Reason | undefined;
  /** Registered tool names (`mcp__<server>__<tool>`). */
  tools: string[];
  /** Registered prompt names. */
  prompts: string[];
  /** Tools the server lists that were not registered, with why. */
  skippedTools: SkippedTool[];
  lastError: string | undefined;
  generation: number;
  attempt: number;
  /** PID of the stdio child of the current generation, when there is one. */
  pid: number | undefined;
}

/** Minimal logger; every method optional in practice (defaults are silent). */
export interface Logger {
  debug(message: string, details?: Record<string, unknown>): void;
  info(message: string, details?: Record<string, unknown>): void;
  warn(message: string, details?: Record<string, unknown>): void;
  error(message: string, details?: Record<string, unknown>): void;
}

/** Options of {@link createMcpController} (SPEC §10). Everything but `cwd` is optional. */
export interface McpControllerOptions {
  /** The workspace root. Its real path keys approvals. */
  cwd: string;
  /** Explicit config sources; wins over `preset`. */
  sources?: ConfigSource[];
  /** A preset name (`default`, `claude-code`, `vscode`, `cursor`, `gemini`, `qwen`, `workspace-yaml`) or object. Default `default`. */
  preset?: string | Preset;
  /** Extra files in the `cli` scope (`--mcp-config`). */
  cliConfigFiles?: string[];
  /** Overrides the preset's user-scope file (tests, demos). */
  userConfigPath?: string;
  /** In-process servers (`sdk` scope): name → `McpServer` or low-level `Server`. */
  sdkServers?: Record<string, unknown>;
  /** The host's `--allowed-mcp-server-names`, captured once and immutable. */
  cliAllowedServerNames?: readonly string[];
  /** Whether the workspace folder is trusted; an untrusted one connects nothing gated. Default: trusted. */
  isTrustedFolder?: () => boolean | Promise<boolean>;
  /** The approvals store, or the path of its JSON file. Default: `~/.config/mcp-reconciler/approvals.json`. */
  approvals?: ApprovalStore | string;
  /** Which parent variables stdio children inherit. */
  envPolicy?: EnvPolicy;
  /** Environment for `${VAR}` expansion and children. Default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** `start()` resolves at the latest after this long. Default 10 000. */
  readyTimeoutMs?: number;
  /** Supervisor policy (SPEC §5). */
  backoff?: Partial<BackoffPolicy>;
  /** Connect/list timeout when a server sets none. Default 30 000. */
  connectTimeoutMs?: number;
  /** How many servers connect at once. */
  connectConcurrency?: number;
  /** Watch the source files and reload on change. Default true. */
  watch?: boolean;
  /** Debounce of file events. Default 300. */
  debounceMs?: number;
  /** Grace period between SIGTERM and SIGKILL when stopping a child. Default 2 000. */
  killGraceMs?: number;
  logger?: Partial<Logger>;
}

/** Events (SPEC §9). */
export interface McpControllerEvents extends Record<string, unknown> {
  /** Every transition of a server actor; `path` is the full state path (`live.reconnecting.waiting`). */
  'server-state': {
    name: string;
    state: ServerStateName;
    previous: ServerStateName | undefined;
    reason: Reason | undefined;
    generation: number;
    path: string;
    attempt: number;
  };
  'tools-changed': { server: string; added: string[]; removed: string[] };
  'pending-approval': { servers: string[] };
  'config-error': { issues: ConfigIssue[] };
  'client-update': { status: ServerStatus[] };
  /** After each reconcile that sent something to the machines. */
  reconciled: { count: number; servers: string[] };
}

/** Options of {@link McpController.callTool}. */
export interface CallToolOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
}

export type { RegisteredTool, RegisteredPrompt, CallToolResult, DesiredServer };
