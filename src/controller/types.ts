import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { BackoffPolicy, DesiredMap, DesiredServer, LogLevel, ProtocolChoice, Scope, StartupMode, TransportType } from '../../machines/types.js';
import type { ToolDrift } from '../approvals/tool-definitions.js';
import type { ConfigIssue, ConfigSource } from '../config/sources.js';
import type { InputResolver } from '../config/load.js';
import type { Preset } from '../config/presets.js';
import type { ApprovalStore } from '../approvals/store.js';
import type { ListingSecondLevel } from '../cache/listing-cache.js';
import type { EnvPolicy } from '../connection/env.js';
import type { RegisteredPrompt, RegisteredTool, SkippedTool } from '../registry/registry.js';
import type { ResourceChange } from '../registry/resources.js';
import type { ElicitationCompleteHandler, ElicitationHandler, SamplingHandler } from '../connection/client-capabilities.js';
import type { AuthorizationUrlHandler } from '../auth/manager.js';
import type { AuthorizationGrantHandler } from '../auth/cross-app-access.js';
import type { TokenStore } from '../auth/token-store.js';
import type { SharedCallback } from '../auth/shared-callback.js';
import type { Root } from '@modelcontextprotocol/sdk/types.js';
import type { ToolExposure } from '../search/exposure.js';
import type { ToolApprovalHandler } from './tool-policy.js';

import type { PublicStatus, Reason, ServerStateName } from '../../machines/reason.js';

export type { PublicStatus, Reason, ServerStateName };

/** One row of {@link McpController.status}. */
export interface ServerStatus {
  name: string;
  scope: Scope | undefined;
  /** Source file path, or `runtime` / `sdk` / `inline`. */
  source: string | undefined;
  /**
   * The server actor's state; `config_invalid` for an entry the config layer
   * refused (no actor runs for it; `lastError` says what is wrong, `source`
   * and `line` where).
   */
  state: ServerStateName | 'config_invalid';
  status: PublicStatus;
  reason: Reason | undefined;
  /** 1-based line of the refused entry in `source` (`config_invalid` rows). */
  line?: number;
  /** The files whose `mcp.excluded` lists the server (`excluded` rows). */
  excludedBy?: string[];
  /** Who switched the server off (`disabled` rows): its config file, `` `mcp-reconciler disable` (state file) ``, this session, the profile. */
  disabledBy?: string;
  /** The profile in use, when it is what leaves the server out (`disabled` rows). */
  profile?: string;
  /** Registered tool names (`mcp__<server>__<tool>`). */
  tools: string[];
  /**
   * What the registered tools' definitions cost in a model's context, summed
   * (see `RegisteredTool.tokens`); counted when first read.
   */
  readonly tokens: number;
  /** Registered prompt names. */
  prompts: string[];
  /** URIs of the resources the server lists (shadowed ones included; see `resources()` for owners). */
  resources: string[];
  /** URI templates of the resource templates the server lists. */
  resourceTemplates: string[];
  /** Tools the server lists that were not registered, with why. */
  skippedTools: SkippedTool[];
  /**
   * The registered tools come from the listing cache, not (yet) from a
   * listing of the running server: a `connecting` server's until it answers,
   * a `dormant` one's until it is woken.
   */
  cached: boolean;
  lastError: string | undefined;
  generation: number;
  attempt: number;
  /** PID of the stdio child of the current generation, when there is one. */
  pid: number | undefined;
  /**
   * The transport: the one in use while connected (`sse` when an `http`
   * entry fell back, see `fallbackToSse`), else the configured one.
   */
  transport: TransportType | undefined;
  /**
   * How the server's tool definitions differ from the ones accepted (its
   * first listing, or the last `approve --tool-definitions`): changed and new tools, and
   * whether they are held back (`pinToolDefinitions`). Absent without drift.
   */
  toolDrift?: ToolDrift;
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
  /**
   * Which tools {@link McpController.exposedTools} hands a model: `all`
   * (default), `search` (a search tool and a call tool), or `auto` (all while
   * within `maxTools` / `maxToolTokens`, else pinned and most used tools plus
   * the search pair). The gateway (`serve --tools`) follows it per session.
   */
  toolExposure?: ToolExposure;
  /**
   * Hold back changed tool definitions of every server until
   * {@link McpController.approveTools} (a server's own `pinToolDefinitions` wins).
   */
  pinToolDefinitions?: boolean;
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
  /**
   * Answers VS Code `${input:id}` variables (declared in the file's `inputs`;
   * `spec.password` marks a secret) and host variables such as Claude Code's
   * `CLAUDE_PLUGIN_ROOT` (`spec.type === 'hostVariable'`). Called on every
   * load that needs one, so remember answers. Without it (or when it returns
   * `undefined`) the server is skipped with an issue saying how to answer.
   */
  resolveInput?: InputResolver;
  /**
   * How long `start()` waits for each admitted server to settle, counted from
   * when its start left the connect queue (time queued behind other starts
   * does not count); a server's own `timeout`, when shorter, ends the wait
   * for it sooner. Default 10 000.
   */
  readyTimeoutMs?: number;
  /**
   * `'readiness'` (default): `start()` waits for each server within
   * `readyTimeoutMs`. `'start-bound'`: a starting server is waited for until
   * it connects or its start bound (`startTimeoutMs`) fails it, for one-shot
   * commands that report every server's outcome (`mcp-reconciler status`).
   */
  readyWait?: 'readiness' | 'start-bound';
  /**
   * The start bound of a stdio server whose config sets no `startTimeoutMs`:
   * a start (spawn, `initialize`, the first listings) still unanswered this
   * long after it left the connect queue fails with the request it waited
   * for, its process group is killed, and the supervisor retries it like any
   * failed start. Default 180 000 (3 minutes: room for a first `npx`
   * download).
   */
  startTimeoutMs?: number;
  /** Supervisor policy (SPEC §5). */
  backoff?: Partial<BackoffPolicy>;
  /** Connect/list timeout when a server sets none. Default 30 000. */
  connectTimeoutMs?: number;
  /**
   * The MCP protocol revision for servers whose config sets no `protocol`.
   * Default `auto`: the newest revision the server offers (2026-07-28 via
   * `server/discover`), else the 2025 `initialize` handshake. A pin uses only
   * that revision (docs/protocol.md).
   */
  protocol?: ProtocolChoice;
  /**
   * How many server processes start at once. Default: 2 × cores, rising
   * (up to 64) while starts prove light, so cheap servers are not queued
   * behind a limit meant for heavy ones; a number given here is kept as is.
   */
  connectConcurrency?: number;
  /** Watch the source files and reload on change. Default true. */
  watch?: boolean;
  /** Debounce of file events. Default 300. */
  debounceMs?: number;
  /** Grace period between SIGTERM and SIGKILL when stopping a child. Default 2 000. */
  killGraceMs?: number;
  /**
   * File recording the process groups of this workspace's stdio servers, so a
   * start after the host was SIGKILLed reaps the orphans (0600; one per
   * workspace). Default `$XDG_STATE_HOME/mcp-reconciler/processes/<hash of the
   * real root>.json` (`~/.local/state/…`); `false` turns recording off.
   */
  processStateFile?: string | false;
  /**
   * Directory of the per-server logs: each server's stderr, the MCP log
   * messages it sends and the supervisor's lines about it, one 0600 file per
   * server, rotated at `logMaxBytes`. Default
   * `$XDG_STATE_HOME/mcp-reconciler/logs/<hash of the real root>`
   * (`~/.local/state/…`); `false` keeps no logs.
   */
  logDir?: string | false;
  /** Cap of each server's log file before it is rotated (one rotated file is kept). Default 1 MiB. */
  logMaxBytes?: number;
  /**
   * The `logging/setLevel` sent to every server that declares `logging`, after
   * each connect, unless its entry's `logLevel` or a settings file's
   * `mcp.logLevel` says otherwise. Default: none sent (the server's own default).
   */
  logLevel?: LogLevel;
  /**
   * The workspace state file: the `enable` / `disable` switches of servers
   * whose host file has no field for them (docs/manage.md). Default
   * `$XDG_STATE_HOME/mcp-reconciler/workspaces/<hash of the real root>.json`;
   * `false` keeps them for this controller's life only.
   */
  workspaceStateFile?: string | false;
  /**
   * Asked before each call of a tool that a settings file's `permissions.ask`
   * matches (and no `permissions.allow`, nor the `readOnlyHint` rule, lets
   * through): answer `allow` (this call), `always` (remembered for this
   * workspace) or `deny`. Without it such calls fail with `tool_denied`.
   */
  onToolApproval?: ToolApprovalHandler;
  /**
   * Use this profile of the settings files (`profiles: { NAME: { servers,
   * tools } }`, docs/manage.md): servers it leaves out rest in `disabled`,
   * tools it leaves out are not registered. It only narrows what gating
   * allows; a name no file defines keeps nothing. Change it with `setProfile()`.
   */
  profile?: string;
  /**
   * Directory of the listing cache (SPEC §12): every successful listing is
   * stored there (0600, keyed by workspace and fingerprint) so the next start
   * registers a server's tools before it answers. Default
   * `$XDG_CACHE_HOME/mcp-reconciler/listings` (`~/.cache/…`); `false` keeps
   * listings in memory only (lazy and idle-stopped servers still keep their
   * tools for the controller's life).
   */
  listingCache?: string | false;
  /**
   * A second level of the listing cache, behind its files (docs/cluster.md:
   * the Redis a clustered gateway's replicas share).
   */
  listingCacheSecondLevel?: ListingSecondLevel;
  /**
   * Default `startup` for servers whose config sets none. `eager` (default)
   * connects on admission; `lazy` serves cached tools from the `dormant`
   * state and connects on the first call (a server with nothing cached
   * connects once to fill the cache, then goes dormant).
   */
  startup?: StartupMode;
  /**
   * Default idle timeout: a connected server with no call for this long is
   * stopped and goes `dormant`, its tools staying registered. Default: never.
   */
  idleTimeoutMs?: number;
  /**
   * Start servers on demand only (the gateway): an admitted server rests in
   * `dormant` (cached tools registered, no process) until a host holds it
   * with `hold()` or a call needs it; released, it idle-stops after
   * `idleTimeoutMs`. Default false: admitted servers start as `startup` says.
   */
  onDemand?: boolean;
  logger?: Partial<Logger>;
  /**
   * Answers servers' `elicitation/create` requests (form and URL mode). Form
   * answers get the schema's defaults for omitted fields (SEP-1034) and are
   * checked against the requested schema. Without it the client declares no
   * elicitation capability, so servers do not ask.
   */
  onElicitation?: ElicitationHandler;
  /**
   * Hears a server's `notifications/elicitation/complete`: the out-of-band
   * step of a URL elicitation `onElicitation` accepted is done (2025
   * revisions; the 2026-07-28 revision has no such notification).
   */
  onElicitationComplete?: ElicitationCompleteHandler;
  /** Answers `sampling/createMessage` with the host's model. Without it no sampling capability is declared. */
  onSampling?: SamplingHandler;
  /**
   * Roots offered to servers (`roots/list`). Default: the workspace folder.
   * `false` declares no roots capability. Change them later with `setRoots()`.
   */
  roots?: Root[] | false;
  /**
   * Called with the URL a user must open to authorise a server (OAuth
   * authorization code + PKCE, loopback redirect on 127.0.0.1). Without it
   * servers that need a new sign-in rest in `needs_auth` until
   * `authenticate()` or `mcp-reconciler auth SERVER`; with it they ask at
   * once. Return a promise to have the connection wait for it.
   */
  onAuthorizationUrl?: AuthorizationUrlHandler;
  /**
   * Supplies the ID-JAG for servers whose config says `oauth.grantType:
   * "jwt-bearer"` (cross-app access, SEP-990): given the MCP authorization
   * server (`audience`) and `resource`, exchange the user's IdP ID token,
   * e.g. with `requestJwtAuthorizationGrant()`. The controller then does the
   * JWT-bearer grant itself. Called whenever a new access token is needed.
   */
  onAuthorizationGrant?: AuthorizationGrantHandler;
  /**
   * Narrows the desired map after every read: the servers it leaves out are
   * as if not configured for this controller. A clustered gateway serves its
   * per-principal servers from one controller per principal and the others
   * from its own (docs/cluster-principals.md).
   */
  selectServers?: (desired: DesiredMap) => DesiredMap;
  /** OAuth client settings. */
  oauth?: {
    /** Token store, or the path of its JSON file. Default `~/.config/mcp-reconciler/oauth.json` (0600). */
    tokenStore?: TokenStore | string;
    /** `client_name` for dynamic registration. Default `mcp-reconciler`. */
    clientName?: string;
    /** An https URL of this host's client ID metadata document (SEP-991), used when a server supports it. */
    clientMetadataUrl?: string;
    /** How long an authorization waits for the browser to come back. Default 5 minutes. */
    authorizationTimeoutMs?: number;
    /**
     * The browser comes back to a callback any process of a group serves
     * instead of a loopback receiver of this one (a clustered gateway,
     * docs/cluster-oauth.md); codes of other processes' sign-ins that reach
     * this one are redeemed with this workspace's config.
     */
    callback?: SharedCallback;
  };
}

/**
 * Events (SPEC §9). A closed set: `on('typo', …)` does not compile.
 */
export interface McpControllerEvents {
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
  /** Registered tool names of one server that appeared, disappeared, or kept their name but changed definition. */
  'tools-changed': { server: string; added: string[]; removed: string[]; updated: string[] };
  'pending-approval': { servers: string[] };
  'config-error': { issues: ConfigIssue[] };
  /**
   * Something a status view shows changed: at most one per turn of the event
   * loop, after the other events of that turn, with every server's row as it
   * is when sent (docs/client-update.md). `registryChanged`: the servers whose
   * registered tools or prompts changed since the previous `client-update`.
   */
  'client-update': { status: ServerStatus[]; registryChanged: string[] };
  /** After each reconcile that sent something to the machines. */
  reconciled: { count: number; servers: string[] };
  /**
   * One server's resources (URIs) or resource templates appeared,
   * disappeared or changed definition; `conflicts` lists the URIs it shares
   * with another server after the change (one owner reads them, see
   * {@link McpController.resources}).
   */
  'resources-changed': ResourceChange;
}

/**
 * Options of {@link McpController.callTool}. `timeoutMs` bounds the whole
 * call, including any wait for a `dormant` or `connecting` server to connect
 * (default for that wait: the server's connect timeout).
 */
export interface CallToolOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
  /** Progress notifications the server sends for this call; each one also restarts `timeoutMs`. */
  onprogress?: (progress: { progress: number; total?: number; message?: string }) => void;
  /**
   * Asks about this call instead of the controller's `onToolApproval` when
   * `permissions.ask` holds the tool (the gateway asks the client that made
   * the call). An `always` answer is remembered the same way.
   */
  onToolApproval?: ToolApprovalHandler;
}

/**
 * Options of {@link McpController.readResource} and
 * {@link McpController.subscribeResource}. `servers` narrows which servers
 * may own the URI (a gateway session's scope): of those listing it, the
 * first in code-point order answers. `timeoutMs` and `signal` work as for a
 * tool call, including the wait for a dormant server to start.
 */
export interface ResourceOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
  servers?: Iterable<string>;
}

export type { RegisteredTool, RegisteredPrompt, CallToolResult, DesiredServer };
export type { RegisteredResource, RegisteredResourceTemplate, ResourceChange, ResourceConflict } from '../registry/resources.js';
export type { ResourceUpdate, ResourceUpdateListener } from '../connection/subscriptions.js';
