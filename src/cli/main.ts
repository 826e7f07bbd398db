#!/usr/bin/env node
import { realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { defaultApprovalsPath } from '../approvals/store.js';
import { FORMAT_NAMES, isFormatName } from '../config/formats.js';
import { defaultInputsPath } from '../config/input-store.js';
import { presets, resolvePreset } from '../config/presets.js';
import { ErrorCode, McpReconcilerError, describeError } from '../errors.js';
import { findOwnPackage } from '../util/own-package.js';
import { BIN, checkPositionals, foldAliases, helpLines, helpWidth, optionRows, parseDefs, positionalRows, usageOf, type CliOptions, type OptionDefs, type OptionValues } from './args.js';
import type { CliCommand, CliIo, GlobalOptions } from './command.js';
import { commands as defaultCommands } from './commands/index.js';
import { terminalSafeIo } from './output.js';
import { isInlineConfig } from '../config/reader.js';

/** Options every command accepts. */
export const GLOBAL_OPTIONS = {
  cwd: { type: 'string', value: 'DIR', help: 'workspace root (default: the current directory)' },
  preset: { type: 'string', value: 'NAME', help: 'config layout (default: default)' },
  config: { type: 'string', value: 'FILE|JSON', multiple: true, aliases: ['mcp-config'], help: 'extra config in cli scope' },
  'user-config': { type: 'string', value: 'FILE', help: 'use FILE as the user-scope config' },
  // Not `--format`: that is viz's output format (SPEC §10).
  'config-format': { type: 'string', value: 'NAME', help: 'read --config files in this host format (default: the preset’s, else judged per file)' },
  approvals: { type: 'string', value: 'FILE', help: 'approvals store (default: $MCP_RECONCILER_APPROVALS or ~/.config/mcp-reconciler/approvals.json)' },
  inputs: { type: 'string', value: 'FILE', help: 'remembered ${input:…} answers (default: $MCP_RECONCILER_INPUTS or ~/.config/mcp-reconciler/inputs.json)' },
  'allowed-mcp-server-names': { type: 'string', value: 'a,b', multiple: true, help: 'only these servers may connect (upper bound)' },
  profile: { type: 'string', value: 'NAME', help: 'use this profile of the settings files (its servers and tools only)' },
  json: { type: 'boolean', help: 'machine-readable output' },
  help: { type: 'boolean', short: 'h', help: 'show help' },
  version: { type: 'boolean', short: 'v', help: 'show the version' },
} as const satisfies CliOptions;

function usageError(message: string, hint = `run \`${BIN} --help\` for usage`): McpReconcilerError {
  return new McpReconcilerError(ErrorCode.Usage, message, { hint });
}

const headOf = (c: CliCommand): string => [c.name, usageOf(c.positionals)].filter(Boolean).join(' ');

function generalHelp(commands: readonly CliCommand[]): string {
  const rows = commands.map((c): [string, string] => [headOf(c), c.summary]);
  const global = optionRows(GLOBAL_OPTIONS);
  return [
    `Usage: ${BIN} <command> [options]`,
    '',
    'Keeps a workspace’s MCP servers in the state their config asks for.',
    '',
    'Commands:',
    ...helpLines(rows, helpWidth(rows)),
    '',
    'Global options:',
    ...helpLines(global, helpWidth(global)),
    '',
    `Presets: ${Object.keys(presets).join(', ')}`,
    'Exit codes: 0 ok, 1 runtime failure, 2 usage or config error.',
    `Run \`${BIN} <command> --help\` for a command's options and examples.`,
    '',
  ].join('\n');
}

function commandHelp(c: CliCommand): string {
  const args = positionalRows(c.positionals);
  const own = optionRows(c.options ?? {});
  const global = optionRows(GLOBAL_OPTIONS);
  // The command's own arguments and options share a column; the long global names get theirs.
  const width = helpWidth(args, own);
  const section = (title: string, lines: string[]): string[] => (lines.length > 0 ? [`${title}:`, ...lines, ''] : []);
  return [
    `Usage: ${BIN} ${headOf(c)} [options]`,
    '',
    c.summary,
    '',
    ...section('Arguments', helpLines(args, width)),
    ...section('Options', helpLines(own, width)),
    ...section('Examples', (c.examples ?? []).map((l) => `  ${l}`)),
    ...section('Global options', helpLines(global, helpWidth(global))),
  ].join('\n');
}

function version(): string {
  return findOwnPackage(dirname(fileURLToPath(import.meta.url)))?.version ?? 'unknown';
}

function strings(v: OptionValues[string]): string[] {
  if (v === undefined) return [];
  return (Array.isArray(v) ? v : [v]).filter((x): x is string => typeof x === 'string');
}

function resolveGlobal(values: OptionValues, io: CliIo): GlobalOptions {
  const root = resolve(io.cwd, strings(values.cwd)[0] ?? '.');
  let isDir = false;
  try {
    isDir = statSync(root).isDirectory();
  } catch {
    // reported below
  }
  if (!isDir) throw usageError(`--cwd: "${root}" is not a directory`, 'pass an existing workspace directory');
  const preset = resolvePreset(strings(values.preset)[0] ?? 'default');
  // `--mcp-config` values are folded into `config` (its alias) by the parse.
  const configFiles = strings(values.config).map((f) => (isInlineConfig(f) ? f : resolve(io.cwd, f)));
  const userConfig = strings(values['user-config'])[0];
  const format = strings(values['config-format'])[0];
  if (format !== undefined && !isFormatName(format)) throw usageError(`unknown format "${format}"`, `use one of: ${FORMAT_NAMES.join(', ')}`);
  const approvals = strings(values.approvals)[0] ?? io.env.MCP_RECONCILER_APPROVALS;
  const inputs = strings(values.inputs)[0] ?? io.env.MCP_RECONCILER_INPUTS;
  const allowedRaw = strings(values['allowed-mcp-server-names']);
  const allowed = allowedRaw.length > 0 ? allowedRaw.flatMap((s) => s.split(',')).map((s) => s.trim()).filter(Boolean) : undefined;
  return {
    root,
    preset,
    configFiles,
    userConfig: userConfig === undefined ? undefined : resolve(io.cwd, userConfig),
    ...(format !== undefined ? { format } : {}),
    approvalsPath: approvals ? resolve(io.cwd, approvals) : defaultApprovalsPath(io.env),
    inputsPath: inputs ? resolve(io.cwd, inputs) : defaultInputsPath(io.env),
    cliAllowedServerNames: allowed,
    ...((profile) => (profile !== undefined ? { profile } : {}))(strings(values.profile)[0]),
    json: values.json === true,
    home: io.env.HOME || io.env.USERPROFILE || homedir(),
  };
}

function parse(argv: string[], options: OptionDefs, strict: boolean): { values: OptionValues; positionals: string[] } {
  try {
    const r = parseArgs({ args: argv, options, strict, allowPositionals: true });
    return { values: r.values as OptionValues, positionals: r.positionals };
  } catch (err) {
    // parseArgs messages end with advice about `--`; the first sentence is the useful part.
    const first = describeError(err).split(/\.\s/)[0]!.replace(/\.$/, '');
    throw usageError(first);
  }
}

function exitCodeOf(err: unknown): number {
  if (!(err instanceof McpReconcilerError)) return 1;
  const config: string[] = [ErrorCode.Usage, ErrorCode.ConfigInvalid, ErrorCode.ConfigUnsetVariable];
  return config.includes(err.code) ? 2 : 1;
}

/**
 * Run the CLI with `argv` (without `node` and the script) against `io`, and
 * return the exit code: 0 ok, 1 runtime failure, 2 usage or config error.
 * Never throws and never prints a stack trace unless `MCP_RECONCILER_DEBUG=1`.
 */
export async function runCli(argv: string[], io: CliIo, commands: readonly CliCommand[] = defaultCommands): Promise<number> {
  // Names, tool descriptions and server stderr are attacker-controlled text: no printer may pass ESC/BEL/CSI to the terminal.
  io = terminalSafeIo(io);
  try {
    // First pass only finds the command name; every command's options are known
    // so a value-taking option before the command does not swallow it.
    const all: OptionDefs = parseDefs(GLOBAL_OPTIONS);
    for (const c of commands) Object.assign(all, parseDefs(c.options ?? {}));
    const pre = parse(argv, all, false);
    const name = pre.positionals[0];
    if (name === undefined) {
      if (pre.values.version === true) {
        io.stdout.write(`${version()}\n`);
        return 0;
      }
      if (pre.values.help === true) {
        io.stdout.write(generalHelp(commands));
        return 0;
      }
      throw usageError('no command given');
    }
    const command = commands.find((c) => c.name === name);
    if (!command) {
      throw usageError(`unknown command "${name}"`, `commands: ${commands.map((c) => c.name).join(', ')}; run \`${BIN} --help\``);
    }
    const declared: CliOptions = { ...GLOBAL_OPTIONS, ...command.options };
    const parsed = parse(argv, parseDefs(declared), true);
    const values = foldAliases(parsed.values, declared);
    if (values.help === true) {
      io.stdout.write(commandHelp(command));
      return 0;
    }
    // Usage before anything else: a wrong count must not load the workspace or start servers.
    const positionals = parsed.positionals.slice(1);
    checkPositionals(command.name, command.positionals, positionals);
    const global = resolveGlobal(values, io);
    return await command.run({ io, global, values, positionals });
  } catch (err) {
    io.stderr.write(`error: ${describeError(err)}\n`);
    const hint = err instanceof McpReconcilerError ? err.hint : undefined;
    if (hint) io.stderr.write(`hint: ${hint}\n`);
    if (io.env.MCP_RECONCILER_DEBUG === '1' && err instanceof Error && err.stack) io.stderr.write(`${err.stack}\n`);
    return exitCodeOf(err);
  }
}

function isMain(): boolean {
  const script = process.argv[1];
  if (!script) return false;
  try {
    return import.meta.url === pathToFileURL(realpathSync(script)).href;
  } catch {
    return false;
  }
}

if (isMain()) {
  const code = await runCli(process.argv.slice(2), {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    cwd: process.cwd(),
    stdin: process.stdin,
    isTTY: process.stdout.isTTY === true && process.stdin.isTTY === true,
  });
  process.exitCode = code;
  // Everything is disposed by now; a stray handle (a paused stdin, a keep-alive socket)
  // must not keep a finished command hanging.
  setTimeout(() => process.exit(code), 1_000).unref();
  process.stdin.unref?.();
}
