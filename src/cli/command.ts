import type { FormatName } from '../config/formats.js';
import type { Preset } from '../config/presets.js';
import { ErrorCode, McpReconcilerError } from '../errors.js';
import type { CliOptions, CliPositional, OptionValues } from './args.js';

export type { CliOption, CliOptions, CliPositional, OptionValues } from './args.js';

/** Where a CLI run reads and writes; `runCli` takes it so tests can run in-process. */
export interface CliIo {
  stdout: { write(chunk: string): unknown };
  stderr: { write(chunk: string): unknown };
  env: NodeJS.ProcessEnv;
  /** The directory relative paths on the command line are resolved against. */
  cwd: string;
  /** Input for interactive commands (`watch`); default none. */
  stdin?: NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?: (mode: boolean) => unknown };
  /** Whether stdout and stdin are a terminal (live view and key prompts). */
  isTTY?: boolean;
  /** Ends long-running commands (`watch`) like Ctrl-C does; in-process callers use it instead of signals. */
  signal?: AbortSignal;
}

/** The global options after resolution (paths absolute, preset looked up). */
export interface GlobalOptions {
  /** `--cwd`, absolute: the workspace root. */
  root: string;
  preset: Preset;
  /** `--config` / `--mcp-config`: absolute paths, or inline JSON text starting with `{`. */
  configFiles: string[];
  /** `--user-config`: replaces the preset's user-scope file. */
  userConfig?: string;
  /** `--format`: the host format of `--config` files (default: the preset's, else judged per file). */
  format?: FormatName;
  /** `--approvals`, else `MCP_RECONCILER_APPROVALS`, else the default path. */
  approvalsPath: string;
  /** `--inputs`, else `MCP_RECONCILER_INPUTS`, else `~/.config/mcp-reconciler/inputs.json`: remembered `${input:…}` answers. */
  inputsPath?: string;
  /** `--allowed-mcp-server-names`; `undefined` when not given. */
  cliAllowedServerNames?: string[];
  /** `--profile`: the settings profile in use. */
  profile?: string;
  json: boolean;
  /** The user's home directory (from the env, for presets). */
  home: string;
}

/** What a command's `run` gets. */
export interface CliContext {
  io: CliIo;
  global: GlobalOptions;
  /** All parsed option values, including the command's own `options`. */
  values: OptionValues;
  /**
   * Positional arguments after the command name; their count already matches
   * the command's `positionals` declaration (main checks it before `run`).
   */
  positionals: string[];
}

/**
 * One CLI command. Adding a command = one file exporting a `CliCommand` and
 * one line in `commands/index.ts`. Its `positionals` and `options` are the
 * only description of its arguments: parsing, the count check, the usage
 * line and `--help` are all derived from them (src/cli/args.ts).
 */
export interface CliCommand {
  name: string;
  /** One line for `--help`. */
  summary: string;
  /** Positional arguments, in order; none when absent (extra ones are a usage error). */
  positionals?: readonly CliPositional[];
  /** Options of this command only (global ones are added by main). */
  options?: CliOptions;
  /** Example command lines for `<verb> --help`, each with a `# what it does` comment. */
  examples?: string[];
  /** Returns the exit code; throw `McpReconcilerError` for user-facing failures. */
  run(ctx: CliContext): Promise<number>;
}

/** The `SERVER` argument of the verbs that act on one server: `help` says which servers qualify. */
export function serverPositional(help: string): CliPositional {
  return { name: 'SERVER', arity: 'required', help };
}

/** Upper bound of every `--timeout MS`: 24 h (larger values overflow Node's timers). */
export const MAX_TIMEOUT_MS = 24 * 60 * 60 * 1000;

/**
 * The value of a `--timeout MS` style option as milliseconds, `undefined`
 * when not given. Throws a usage error (exit 2) unless it is a whole number
 * from 1 to {@link MAX_TIMEOUT_MS}.
 */
export function parseTimeoutMs(values: OptionValues, option = 'timeout'): number | undefined {
  const raw = values[option];
  if (raw === undefined) return undefined;
  const text = typeof raw === 'string' ? raw.trim() : '';
  const n = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(n) || n < 1 || n > MAX_TIMEOUT_MS) {
    throw new McpReconcilerError(ErrorCode.Usage, `--${option} must be a whole number of milliseconds from 1 to ${MAX_TIMEOUT_MS} (24 h), not ${JSON.stringify(String(raw))}`, {
      hint: `e.g. --${option} 30000 for 30 seconds`,
    });
  }
  return n;
}
