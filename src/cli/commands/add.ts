import { addServer, describeTarget, EDIT_SCOPES, type EditResult, type EditScope, type ServerSpec } from '../../config/edit.js';
import { shellQuote } from '../../format/shell.js';
import { ErrorCode, McpReconcilerError } from '../../errors.js';
import type { CliCommand, CliContext, CliOptions, OptionValues } from '../command.js';

function usage(message: string, hint: string): McpReconcilerError {
  return new McpReconcilerError(ErrorCode.Usage, message, { hint });
}

function list(v: OptionValues[string]): string[] {
  return (Array.isArray(v) ? v : v === undefined ? [] : [v]).filter((x): x is string => typeof x === 'string');
}

function one(values: OptionValues, name: string): string | undefined {
  const all = list(values[name]);
  if (all.length > 1) throw usage(`--${name} is given more than once`, `give --${name} once`);
  return all[0];
}

/** `--scope`, checked against the names `add` and `remove` know. */
export function scopeOption(values: OptionValues): EditScope | undefined {
  const scope = one(values, 'scope');
  if (scope === undefined) return undefined;
  if (!(EDIT_SCOPES as readonly string[]).includes(scope)) throw usage(`unknown scope "${scope}"`, `use --scope ${EDIT_SCOPES.join(', ')}`);
  return scope as EditScope;
}

/** `K=V` pairs of `--env`, in order; a later K wins. */
function envPairs(items: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of items) {
    const eq = item.indexOf('=');
    if (eq <= 0) throw usage(`--env ${JSON.stringify(item)} is not KEY=VALUE`, "e.g. --env API_KEY='${API_KEY}' (single quotes keep ${…} for the host to expand)");
    Object.defineProperty(out, item.slice(0, eq), { value: item.slice(eq + 1), enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/** `Name: value` pairs of `--header`, in order. */
function headerPairs(items: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of items) {
    const colon = item.indexOf(':');
    const name = colon > 0 ? item.slice(0, colon).trim() : '';
    if (name === '' || /\s/.test(name)) throw usage(`--header ${JSON.stringify(item)} is not "Name: value"`, "e.g. --header 'Authorization: Bearer ${TOKEN}'");
    Object.defineProperty(out, name, { value: item.slice(colon + 1).trim(), enumerable: true, writable: true, configurable: true });
  }
  return out;
}

function spec(ctx: CliContext): ServerSpec {
  const [, ...rest] = ctx.positionals;
  let url = one(ctx.values, 'url');
  const transport = one(ctx.values, 'transport');
  if (transport !== undefined && transport !== 'http' && transport !== 'sse' && transport !== 'stdio') {
    throw usage(`unknown transport "${transport}"`, 'use --transport http or --transport sse with --url (a command is stdio)');
  }
  let command = rest;
  // `claude mcp add --transport http NAME URL`, as Claude Code takes it.
  if (url === undefined && (transport === 'http' || transport === 'sse') && rest.length === 1 && /^https?:\/\//i.test(rest[0]!)) {
    url = rest[0];
    command = [];
  }
  const env = envPairs(list(ctx.values.env));
  const headers = headerPairs(list(ctx.values.header));
  return {
    ...(command.length > 0 ? { command: command[0]!, args: command.slice(1) } : {}),
    ...(url !== undefined ? { url } : {}),
    ...(transport === 'http' || transport === 'sse' ? { transport } : {}),
    ...(Object.keys(env).length ? { env } : {}),
    ...(Object.keys(headers).length ? { headers } : {}),
  };
}

/** The lines after a successful add or remove. */
export function report(ctx: CliContext, verb: 'added' | 'removed', r: EditResult): void {
  if (ctx.global.json) {
    ctx.io.stdout.write(`${JSON.stringify(r)}\n`);
    return;
  }
  const lines = [`${verb} "${r.name}" ${verb === 'added' ? 'to' : 'from'} ${describeTarget({ path: r.file, keyPath: r.keyPath })} [${r.scope}]`];
  if (r.backup) lines.push(`previous version kept as ${r.backup}`);
  for (const note of r.notes ?? []) lines.push(`note: ${note}`);
  if (r.needsApproval) {
    lines.push(`it is in the project's own file, so it starts only once approved: mcp-reconciler approve ${shellQuote(r.name)} --cwd ${shellQuote(ctx.global.root)} (a running watch asks)`);
  }
  lines.push(verb === 'added' ? 'a running watch or serve of this workspace picks it up now' : 'a running watch or serve of this workspace stops it now');
  ctx.io.stdout.write(`${lines.join('\n')}\n`);
}

/** The context the library calls need, from the global options. */
export function editContext(ctx: CliContext): { preset: CliContext['global']['preset']; cwd: string; home: string; env: NodeJS.ProcessEnv; userConfigPath?: string } {
  return {
    preset: ctx.global.preset,
    cwd: ctx.global.root,
    home: ctx.global.home,
    env: ctx.io.env,
    ...(ctx.global.userConfig !== undefined ? { userConfigPath: ctx.global.userConfig } : {}),
  };
}

/** Options shared by `add` and `remove`. */
export const SCOPE_OPTION = {
  scope: { type: 'string', value: 'SCOPE', help: `which of the preset's files: ${EDIT_SCOPES.join(', ')} (project and workspace both mean the project's own file)` },
} as const satisfies CliOptions;

/**
 * Run one edit verb: the server name from the positionals, the scope option,
 * the edit itself, then its report. Shared by `add` and `remove`.
 */
export async function runEdit(
  ctx: CliContext,
  verb: 'added' | 'removed',
  edit: (args: ReturnType<typeof editContext> & { name: string; scope?: EditScope }) => Promise<EditResult>,
): Promise<number> {
  const [name] = ctx.positionals as [string];
  const scope = scopeOption(ctx.values);
  report(ctx, verb, await edit({ ...editContext(ctx), name, ...(scope ? { scope } : {}) }));
  return 0;
}

function run(ctx: CliContext): Promise<number> {
  return runEdit(ctx, 'added', (args) => addServer({ ...args, server: spec(ctx) }));
}

/** `add NAME -- COMMAND ARGS…` / `add NAME --url URL`: write a server into the preset's own file. */
export const addCommand: CliCommand = {
  name: 'add',
  summary: "add a server to the preset's own config file (in that host's format)",
  examples: [
    "mcp-reconciler add files -- npx -y @modelcontextprotocol/server-filesystem .     # a command, in the default scope",
    "mcp-reconciler add github --preset claude-code --scope user --env 'GITHUB_TOKEN=${GITHUB_TOKEN}' -- github-mcp",
    "mcp-reconciler add docs --preset vscode --url https://mcp.example.com/mcp --header 'Authorization: Bearer ${input:token}'",
  ],
  positionals: [
    { name: 'NAME', arity: 'required', help: 'the server name' },
    { name: 'COMMAND', arity: 'variadic', help: 'after `--`: the program to run and its arguments (omit with --url)' },
  ],
  options: {
    ...SCOPE_OPTION,
    env: { type: 'string', value: 'K=V', multiple: true, help: 'an environment variable of the server, written as given (quote ${VAR} so the shell leaves it)' },
    header: { type: 'string', value: 'HEADER', multiple: true, help: "an HTTP header of a remote server, 'Name: value', written as given" },
    url: { type: 'string', value: 'URL', help: 'a remote server instead of a command' },
    transport: { type: 'string', value: 'http|sse', help: 'how to reach --url (default http: streamable HTTP)' },
  },
  run,
};
