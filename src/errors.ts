/**
 * Error codes a caller (or the CLI) can branch on. The CLI maps each to a
 * message, a hint and an exit code.
 */
export const ErrorCode = {
  /** A config file could not be parsed or an entry is invalid. */
  ConfigInvalid: 'config_invalid',
  /** A `${VAR}` without default refers to an unset variable. */
  ConfigUnsetVariable: 'config_unset_variable',
  /** The command line is wrong. */
  Usage: 'usage',
  /** A server name that is not configured. */
  UnknownServer: 'unknown_server',
  /** A tool name that is not registered. */
  UnknownTool: 'unknown_tool',
  /** A tool exists but cannot be called now (server reconnecting, failed, …). */
  ToolUnavailable: 'tool_unavailable',
  /** The approvals store could not be read or written. */
  ApprovalStore: 'approval_store',
  /** A host config file could not be written (`add`, `remove`). */
  ConfigWrite: 'config_write',
  /** A server needs authorisation before it can connect. */
  NeedsAuth: 'needs_auth',
  /** Connecting or listing failed. */
  ConnectFailed: 'connect_failed',
  /** A connect or list call took longer than its timeout. */
  Timeout: 'timeout',
  /** Duplicate tool names in one listing, or a name taken by another server. */
  ToolConflict: 'tool_conflict',
  /** A tool result broke the tool's declared `outputSchema`. */
  OutputContract: 'output_contract',
  /** The controller was disposed. */
  Disposed: 'disposed',
  /** A tool call that `permissions.ask` holds for approval was not approved. */
  ToolDenied: 'tool_denied',
  /** No running `watch` of the workspace took a request sent to it (CLI `reconnect`, `approve --session`). */
  NoWatch: 'no_watch',
} as const;

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** The one base class for errors this library raises on purpose. */
export class McpReconcilerError extends Error {
  /** Stable, machine-readable code. */
  readonly code: ErrorCode;
  /** What the user can do about it, one sentence; shown by the CLI. */
  readonly hint: string | undefined;
  /** Structured details (file, line, server, field, …). */
  readonly details: Readonly<Record<string, unknown>>;
  /**
   * Retrying the same thing cannot succeed (command not found, invalid URL, a
   * 4xx answer, a rejected tool listing): the supervisor sends the server
   * straight to `failed` instead of spending its backoff budget.
   */
  readonly permanent: boolean;

  constructor(
    code: ErrorCode,
    message: string,
    options: { hint?: string; details?: Record<string, unknown>; cause?: unknown; permanent?: boolean } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'McpReconcilerError';
    this.code = code;
    this.hint = options.hint;
    this.details = Object.freeze({ ...(options.details ?? {}) });
    this.permanent = options.permanent ?? false;
  }
}

/** True when `err` is an {@link McpReconcilerError} with the given code. */
export function hasCode(err: unknown, code: ErrorCode): err is McpReconcilerError {
  return err instanceof McpReconcilerError && err.code === code;
}

/** A short human message for any thrown value, without a stack trace. */
export function describeError(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
