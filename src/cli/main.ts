#!/usr/bin/env node
import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { defaultApprovalsPath } from '../approvals/store.js';
import { FORMAT_NAMES, isFormatName } from '../config/formats.js';
import { defaultInputsPath } from '../config/input-store.js';
import { presets, resolvePreset } from '../config/presets.js';
import { ErrorCode, McpReconcilerError, describeError } from '../errors.js';
import type { CliCommand, CliIo, GlobalOptions, OptionDefs, OptionValues } from './command.js';
import { commands as defaultCommands } from './commands/index.js';
import { terminalSafeIo } from './output.js';
import { isInlineConfig } from '../config/reader.js';

const BIN = 'mcp-reconciler';

/** Options every command accepts. */
export const GLOBAL_OPTIONS = {
  cwd: { type: 'string' },
  preset: { type: 'string' },
  config: { type: 'string', multiple: true },
  'mcp-config': { type: 'string', multiple: true },
  'user-config': { type: 'string' },
  // Not `--format`: that is viz's output format (SPEC §10).
  'config-format': { type: 'string' },
  approvals: { type: 'string' },
  inputs: { type: 'string' },
  'allowed-mcp-server-names': { type: 'string', multiple: true },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
} as const satisfies OptionDefs;

const GLOBAL_HELP = [
  '--cwd DIR                        workspace root (default: the current directory)',
  '--preset NAME                    config layout (default: default)',
  '--config FILE|JSON               extra config in cli scope; repeatable (alias --mcp-config)',
  '--user-config FILE               use FILE as the user-scope config',
  '--config-format NAME             read --config files in this host format (default: the preset’s, else judged per file)',
  '--approvals FILE                 approvals store (default: $MCP_RECONCILER_APPROVALS or ~/.config/mcp-reconciler/approvals.json)',
  '--inputs FILE                    remembered ${input:…} answers (default: $MCP_RECONCILER_INPUTS or ~/.config/mcp-reconciler/inputs.json)',
  '--allowed-mcp-server-names a,b   only these servers may connect (upper bound)',
  '--json                           machine-readable output',
  '-h, --help                       show help',
  '-v, --version                    show the version',
];

function usageError(message: string, hint = `run \`${BIN} --help\` for usage`): McpReconcilerError {
  return new McpReconcilerError(ErrorCode.Usage, message, { hint });
}

function generalHelp(commands: readonly CliCommand[]): string {
  const heads = commands.map((c) => c.name + (c.usage ? ` ${c.usage}` : ''));
  // Wide enough for the longest `command USAGE`, so a summary never runs into it.
  const width = Math.max(22, ...heads.map((h) => h.length + 2));
  const rows = commands.map((c, i) => `  ${heads[i]!.padEnd(width)}${c.summary}`);
  return [
    `Usage: ${BIN} <command> [options]`,
    '',
    'Keeps a workspace’s MCP servers in the state their config asks for.',
    '',
    'Commands:',
    ...rows,
    '',
    'Global options:',
    ...GLOBAL_HELP.map((l) => `  ${l}`),
    '',
    `Presets: ${Object.keys(presets).join(', ')}`,
    'Exit codes: 0 ok, 1 runtime failure, 2 usage or config error.',
    `Run \`${BIN} <command> --help\` for a command's options and examples.`,
    '',
  ].join('\n');
}

function commandHelp(c: CliCommand): string {
  return [
    `Usage: ${BIN} ${c.name}${c.usage ? ` ${c.usage}` : ''} [options]`,
    '',
    c.summary,
    '',
    ...(c.optionHelp && c.optionHelp.length > 0 ? ['Options:', ...c.optionHelp.map((l) => `  ${l}`), ''] : []),
    ...(c.examples && c.examples.length > 0 ? ['Examples:', ...c.examples.map((l) => `  ${l}`), ''] : []),
    'Global options:',
    ...GLOBAL_HELP.map((l) => `  ${l}`),
    '',
  ].join('\n');
}

function version(): string {
  // Walk up from this file to the package's own package.json (src/ and dist/src/ differ in depth).
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, 'package.json');
    if (existsSync(candidate)) {
      try {
        const pkg = JSON.parse(readFileSync(candidate, 'utf8')) as { name?: string; version?: string };
        if (pkg.name === BIN && pkg.version) return pkg.version;
      } catch {
        // not ours; keep walking
      }
    }
    const up = dirname(dir);
    if (up === dir) return 'unknown';
    dir = up;
  }
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
  const configFiles = [...strings(values.config), ...strings(values['mcp-config'])].map((f) => (isInlineConfig(f) ? f : resolve(io.cwd, f)));
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
    const all: OptionDefs = { ...GLOBAL_OPTIONS };
    for (const c of commands) Object.assign(all, c.options ?? {});
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
    const { values, positionals } = parse(argv, { ...GLOBAL_OPTIONS, ...command.options }, true);
    if (values.help === true) {
      io.stdout.write(commandHelp(command));
      return 0;
    }
    const global = resolveGlobal(values, io);
    return await command.run({ io, global, values, positionals: positionals.slice(1) });
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
