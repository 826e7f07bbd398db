import type { ParseArgsConfig } from 'node:util';
import type { Preset } from '../config/presets.js';

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

/** Option definitions in `node:util` `parseArgs` form. */
export type OptionDefs = NonNullable<ParseArgsConfig['options']>;

/** Parsed option values (global and the command's own). */
export type OptionValues = Record<string, string | boolean | (string | boolean)[] | undefined>;

/** The global options after resolution (paths absolute, preset looked up). */
export interface GlobalOptions {
  /** `--cwd`, absolute: the workspace root. */
  root: string;
  preset: Preset;
  /** `--config` / `--mcp-config`: absolute paths, or inline JSON text starting with `{`. */
  configFiles: string[];
  /** `--user-config`: replaces the preset's user-scope file. */
  userConfig?: string;
  /** `--approvals`, else `MCP_RECONCILER_APPROVALS`, else the default path. */
  approvalsPath: string;
  /** `--allowed-mcp-server-names`; `undefined` when not given. */
  cliAllowedServerNames?: string[];
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
  /** Positional arguments after the command name. */
  positionals: string[];
}

/**
 * One CLI command. Adding a command = one file exporting a `CliCommand` and
 * one line in `commands/index.ts`.
 */
export interface CliCommand {
  name: string;
  /** One line for `--help`. */
  summary: string;
  /** Positional syntax shown in help, e.g. `SERVER`. */
  usage?: string;
  /** Options of this command only (global ones are added by main). */
  options?: OptionDefs;
  /** Help lines for `options`, e.g. `['--session   approve for this session only']`. */
  optionHelp?: string[];
  /** Returns the exit code; throw `McpReconcilerError` for user-facing failures. */
  run(ctx: CliContext): Promise<number>;
}
