/**
 * Data types shared by the pure machines and by `src/`. Machines may import
 * only `xstate` and files in `machines/`, so the shapes they consume live here.
 */

/** Where a server entry came from, lowest to highest precedence (SPEC §2.1). */
export type Scope = 'user' | 'project' | 'workspace' | 'cli' | 'runtime' | 'sdk';

/** All scopes in precedence order, lowest first. */
export const SCOPES: readonly Scope[] = ['user', 'project', 'workspace', 'cli', 'runtime', 'sdk'];

/** Scopes whose servers need an approval before anything starts (SPEC §2.1, §4). */
export const GATED_SCOPES: ReadonlySet<Scope> = new Set<Scope>(['project', 'workspace']);

/** Transport kinds (SPEC §8.1). */
export type TransportType = 'stdio' | 'sse' | 'http' | 'sdk';

/** One server's configuration as written by the user (SPEC §2.2), after `${VAR}` expansion. */
export interface ServerConfig {
  type?: TransportType;
  command?: string;
  args?: string[];
  env?: Record<string, string>;
  cwd?: string;
  url?: string;
  headers?: Record<string, string>;
  /** Connect / list timeout in milliseconds. */
  timeout?: number;
  disabled?: boolean;
  includeTools?: string[];
  excludeTools?: string[];
  description?: string;
  /** Auth settings that affect the connection (part of the fingerprint). */
  auth?: Record<string, unknown>;
  /**
   * For `type: 'sdk'`: the in-process server object (an SDK `McpServer` or
   * `Server`). Not serialisable; fingerprints use its identity.
   */
  instance?: unknown;
}

/** One entry of the desired server map: a validated config with its provenance. */
export interface DesiredServer {
  name: string;
  scope: Scope;
  /** Absolute path of the source file, or `runtime` / `sdk` / `inline`. */
  source: string;
  config: ServerConfig;
  /** Hash of the connection-relevant fields (SPEC §2.5). */
  fingerprint: string;
  /** Hash of the full config, what approvals are bound to (SPEC §4). */
  hash: string;
}

/** The desired state: server name → entry. */
export type DesiredMap = Readonly<Record<string, DesiredServer>>;

/** A stored or session approval decision bound to one config hash. */
export interface ApprovalDecision {
  hash: string;
  decision: 'approved' | 'rejected';
}

/**
 * Everything admission needs besides the server's own entry (SPEC §2.3, §4).
 * `allowed` is the *effective* list (CLI bound ∩ settings): `undefined` means
 * allow all, `[]` means deny all.
 */
export interface GatingState {
  allowed?: readonly string[];
  excluded: readonly string[];
  /** `isTrustedFolder()`; an untrusted folder connects nothing from gated scopes. */
  trusted: boolean;
  /** Decisions by server name (persisted and session-only, merged by `src/`). */
  approvals: Readonly<Record<string, ApprovalDecision>>;
}

/** Backoff policy of the supervisor (SPEC §5). */
export interface BackoffPolicy {
  initialMs: number;
  maxMs: number;
  /** Failures allowed before resting in `failed`. */
  attempts: number;
  /** A connection up this long resets the budget; its next loss reconnects at once. */
  healthyMs: number;
}

/** SPEC §5 defaults. */
export const DEFAULT_BACKOFF: Readonly<BackoffPolicy> = Object.freeze({
  initialMs: 500,
  maxMs: 30_000,
  attempts: 10,
  healthyMs: 30_000,
});
