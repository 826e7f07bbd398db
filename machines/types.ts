/**
 * Data types shared by the pure machines and by `src/`. Machines may import
 * only `xstate` and files in `machines/`, so the shapes they consume live here.
 */

/**
 * Where a server entry came from, lowest to highest precedence (SPEC §2.1).
 * `local` is a user's private entry for one workspace kept in a per-user file
 * (Claude Code's `projects[<root>].mcpServers` in `~/.claude.json`): it wins
 * over the project's checked-in file and, being the user's own, is not gated.
 */
export type Scope = 'user' | 'project' | 'local' | 'workspace' | 'cli' | 'runtime' | 'sdk';

/** All scopes in precedence order, lowest first. */
export const SCOPES: readonly Scope[] = ['user', 'project', 'local', 'workspace', 'cli', 'runtime', 'sdk'];

/** Scopes whose servers need an approval before anything starts (SPEC §2.1, §4). */
export const GATED_SCOPES: ReadonlySet<Scope> = new Set<Scope>(['project', 'workspace']);

/** Transport kinds (SPEC §8.1). */
export type TransportType = 'stdio' | 'sse' | 'http' | 'sdk';

/**
 * Which MCP protocol revision a server is spoken to in: a pinned revision, or
 * `auto` (negotiate: the newest revision the server offers, docs/protocol.md).
 */
export type ProtocolChoice = '2025-11-25' | '2026-07-28' | 'auto';

/** MCP log levels (`logging/setLevel`), least severe first. */
export const LOG_LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'] as const;
/** One of {@link LOG_LEVELS}. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Globs over a server's tool names (docs/manage.md): `deny` hides, `ask` holds each call for approval, `allow` lets through `ask`. */
export interface ToolPermissionLists {
  allow?: string[];
  ask?: string[];
  deny?: string[];
}

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
  /** OAuth client settings for an http/sse server (part of the fingerprint and the approval hash). */
  oauth?: ServerOAuthConfig;
  /**
   * Pin the MCP protocol revision for this server (`auto`, the default, or the
   * controller's `protocol` option, negotiates). Part of the fingerprint (a
   * change reconnects), not of the approval hash (it changes no command or URL).
   */
  protocol?: ProtocolChoice;
  /** For `type: 'http'`: reconnect over SSE when the first request gets a 4xx, as VS Code and Cursor do. Set by the host's format. */
  fallbackToSse?: boolean;
  /** Tools the host runs without asking (Cline `autoApprove`, Roo `alwaysAllow`). Metadata for the host; the controller does not act on it. */
  autoApprove?: string[];
  /** Gemini CLI `trust`: the host may skip tool confirmations. Metadata for the host; the controller does not act on it. */
  trust?: boolean;
  /** The env file (VS Code, Cursor `envFile`) already loaded into `env`; kept so that approvals and `config` show it. */
  envFile?: string;
  /**
   * Claude Code `headersHelper`: a shell command run (in the workspace root,
   * with the server's env, time-bounded) before each http/sse connect; its
   * stdout, a JSON object of string headers, is merged over `headers`. Part
   * of the fingerprint and the approval hash, since it runs a command.
   */
  headersHelper?: string;
  /**
   * `eager` (default) connects on admission; `lazy` waits for the first tool
   * call, serving cached tools meanwhile (state `dormant`). Not part of the
   * fingerprint or the approval hash: how a server starts is not what it runs.
   */
  startup?: StartupMode;
  /** Stop a connected server after this long without a tool call; it goes `dormant`, its tools stay. Not hashed either. */
  idleTimeoutMs?: number;
  /**
   * In a clustered gateway (`serve --http --cluster`, docs/cluster.md): run
   * this server on one replica at a time, under a Redis lease; the others
   * forward its calls to the holder. For a server that locks files or lives
   * under an API quota. Ignored (with a note) outside a cluster. Not part of
   * the fingerprint or the approval hash: where it runs is not what it runs.
   */
  singleton?: boolean;
  /**
   * The start bound of a stdio server: a start (spawn, `initialize`, the
   * first listings) still unanswered this long after it left the connect
   * queue fails, its process group is killed, and the supervisor retries as
   * for any failed start. Default: the controller's `startTimeoutMs`
   * (180 000). Not part of the fingerprint or the approval hash.
   */
  startTimeoutMs?: number;
  /**
   * Hold back tool definitions that change after they were accepted (a new
   * description or schema, a new tool) until `approve <server> --tool-definitions`
   * (docs/tool-definitions.md). Not hashed: it changes what is registered, not what runs.
   */
  pinToolDefinitions?: boolean;
  /**
   * Raw names of this server's tools a tool budget (`toolExposure` / `serve
   * --tools auto`) lists first, before the most called ones. Not hashed.
   */
  pinnedTools?: string[];
  /**
   * The least severe MCP log message the server should send
   * (`logging/setLevel`, sent after each connect when the server declares
   * `logging`). Not hashed: it changes what the server tells, not what runs.
   */
  logLevel?: LogLevel;
  /**
   * This server's own tool permissions (docs/manage.md): globs over its raw
   * tool names or `mcp__<server>__<tool>`, applied with the settings files'
   * `permissions` (a deny anywhere hides). Not hashed.
   */
  permissions?: ToolPermissionLists;
  /**
   * For `type: 'sdk'`: the in-process server object (an SDK `McpServer` or
   * `Server`). Not serialisable; fingerprints use its identity.
   */
  instance?: unknown;
}

/**
 * OAuth settings of one remote server. Without them a server that answers
 * 401 is authorised with dynamic client registration (or a client ID
 * metadata document) and the authorization-code flow with PKCE.
 */
export interface ServerOAuthConfig {
  /** A pre-registered client id (no dynamic registration). */
  clientId?: string;
  /** Its secret; write it as `${VAR}` so it stays out of the file. */
  clientSecret?: string;
  /** Scopes to ask for when the server does not say which it needs. */
  scopes?: string[] | string;
  /** How the client authenticates at the token endpoint. */
  tokenEndpointAuthMethod?: 'client_secret_basic' | 'client_secret_post' | 'none' | 'private_key_jwt';
  /**
   * `authorization_code` (default, a user signs in), `client_credentials`
   * (machine to machine) or `jwt-bearer` (cross-app access, SEP-990: the
   * host's `onAuthorizationGrant` supplies an ID-JAG from the enterprise IdP).
   */
  grantType?: 'authorization_code' | 'client_credentials' | 'jwt-bearer';
  /** PEM private key for `private_key_jwt` client credentials; write it as `${VAR}`. */
  privateKey?: string;
  /** JWS algorithm of the private-key JWT. Default RS256. */
  signingAlgorithm?: string;
  /** Fixed loopback port for the redirect, for authorization servers that only accept a registered one. */
  callbackPort?: number;
  /**
   * The authorization server (issuer URL) this server's OAuth must use. Any
   * other one the MCP server names is refused before anything is sent.
   * Without it, pre-registered credentials stay with the origin they were
   * first used with.
   */
  issuer?: string;
  /**
   * A clustered gateway (`serve --http --cluster` with the cluster secret)
   * signs in to this server once per principal, each with its own sealed
   * credentials and its own connection, instead of once as the gateway
   * (docs/cluster-principals.md). Elsewhere it changes nothing.
   */
  perPrincipal?: boolean;
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
  /** Hash of what runs and what it reaches, what approvals are bound to (SPEC §4). */
  hash: string;
  /**
   * Hash of the whole config (every field but `startup` / `idleTimeoutMs`):
   * any edit changes it, which is how the reconciler tells an edited entry
   * (a filter, a description) from an unchanged one. Absent in hand-made
   * entries, where `hash` alone is compared.
   */
  configHash?: string;
  /**
   * A listing of this fingerprint is in the listing cache, so its tools can be
   * registered before (or without) connecting. Set by the controller; not part
   * of what makes two entries equal.
   */
  cached?: boolean;
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

/** When a server connects: on admission, or on its first tool call. */
export type StartupMode = 'eager' | 'lazy';

/** Start-up and idle defaults for servers whose config sets none (controller options). */
export interface LifecyclePolicy {
  startup: StartupMode;
  /** Idle stop after this many ms without a call; `undefined` never stops. */
  idleTimeoutMs?: number;
  /**
   * A first connect still running after this long (the entry's `timeout`
   * wins) is reported as starting slowly (`live.connecting.slow`): it keeps
   * starting in the background, within its start bound (`startTimeoutMs`,
   * enforced by the connect actor), and `start()` stops waiting for it.
   */
  slowStartMs: number;
  /**
   * Start servers only on demand (the gateway's session pool): an admitted
   * server nobody holds (HOLD / RELEASE) rests in `dormant` instead of
   * connecting, and a call still wakes it. Default false.
   */
  onDemand?: boolean;
}

/** Eager, never idle-stopped: what a server does without `startup` / `idleTimeoutMs`. */
export const DEFAULT_LIFECYCLE: Readonly<LifecyclePolicy> = Object.freeze({ startup: 'eager', slowStartMs: 30_000 });
