import type { Scope } from '../../machines/types.js';
import type { ErrorCode } from '../errors.js';
import type { FormatName } from './formats.js';

/**
 * The top-level keys a source file may hold servers under: `mcpServers`,
 * `servers` (VS Code, SPEC §2.1), and the keys of other hosts' files
 * (`mcp_servers` Codex, `mcp` opencode, `context_servers` Zed).
 */
export type ServersKey = 'mcpServers' | 'servers' | 'mcp_servers' | 'mcp' | 'context_servers';

/** Both keys, in the order they are read. */
export const DEFAULT_SERVERS_KEYS: readonly ServersKey[] = ['mcpServers', 'servers'];

/**
 * One config file with its scope. The format follows the extension:
 * `.yml`/`.yaml` is YAML, anything else JSON with comments and trailing commas.
 */
export interface ConfigSource {
  scope: Scope;
  /** Absolute path of the file. */
  path: string;
  /** Keys read for servers; default the format's (both `mcpServers` and `servers` for the default format). */
  keys?: ServersKey[];
  /**
   * Where in the file the object holding the server keys is: a key path from
   * the top (Claude Code's local scope, `['projects', <root>]` in
   * `~/.claude.json`). Default the top level. A path that leads nowhere is
   * an empty source, not an error.
   */
  at?: readonly string[];
  /**
   * Whose file this is: how its entries, variables and transports are read
   * (see `formats.ts`). Default: judged from the path, else `default`.
   */
  format?: FormatName;
  /**
   * The workspace root, the value of the built-in `${workspaceFolder}`.
   * Presets fill it in; without it `${workspaceFolder}` is looked up in the env.
   */
  root?: string;
}

/** A problem found in one source file; it never crashes loading. */
export interface ConfigIssue {
  /** Path of the file, or `runtime` / `sdk` for entries added from code. */
  file: string;
  /** 1-based. */
  line?: number;
  /** 1-based. */
  column?: number;
  server?: string;
  /** The offending field, e.g. `args[1]` or `env.TOKEN`. */
  field?: string;
  message: string;
  /** `config_invalid` or `config_unset_variable`. */
  code?: ErrorCode;
  /** `warning`: nothing was dropped because of it (an unknown key, a field that is not applied). */
  severity?: 'warning';
}

/** `file:line:col: server "x" field "y": message`, for logs and the CLI. */
export function formatIssue(issue: ConfigIssue): string {
  let where = issue.file;
  if (issue.line !== undefined) where += `:${issue.line}`;
  if (issue.line !== undefined && issue.column !== undefined) where += `:${issue.column}`;
  const parts: string[] = [];
  if (issue.server !== undefined) parts.push(`server "${issue.server}"`);
  if (issue.field !== undefined) parts.push(`field "${issue.field}"`);
  const subject = parts.length > 0 ? `${parts.join(' ')}: ` : '';
  return `${where}: ${subject}${issue.message}`;
}

/** Whether `path` is read as YAML. */
export function isYamlPath(path: string): boolean {
  return /\.ya?ml$/i.test(path);
}
