import type { ServerConfig } from '../../machines/types.js';
import { formatFieldPath } from './sources.js';

/** Where variable values come from. */
export interface ExpandContext {
  env: NodeJS.ProcessEnv;
  /** Built-in variables (e.g. `workspaceFolder`); they win over the env. */
  builtins?: Readonly<Record<string, string>>;
}

/** A `${VAR}` without default whose variable is unset, in one field. */
export interface UnsetVariable {
  /** e.g. `args[0]`, `env.TOKEN`. */
  field: string;
  /** The same as a path inside the entry: `['args', 0]`. */
  path: (string | number)[];
  variable: string;
}

// `${NAME}`, `${NAME:-default}`, and VS Code's `${env:NAME}`; the body is
// anything up to the first `}` so unknown forms (`${input:x}`) are reported.
const PATTERN = /\$\{([^}]*)\}/g;

function lookup(name: string, ctx: ExpandContext): string | undefined {
  const builtin = ctx.builtins?.[name];
  if (builtin !== undefined) return builtin;
  const bare = name.startsWith('env:') ? name.slice(4) : name;
  return ctx.env[bare];
}

/**
 * Expand `${VAR}` and `${VAR:-default}` in one string. As in a shell, the
 * default applies when the variable is unset or empty. Returns the names
 * that had no value and no default; the caller must not use the result then.
 */
export function expandString(value: string, ctx: ExpandContext): { value: string; missing: string[] } {
  const missing: string[] = [];
  const out = value.replace(PATTERN, (match, body: string) => {
    const sep = body.indexOf(':-');
    const name = sep >= 0 ? body.slice(0, sep) : body;
    const fallback = sep >= 0 ? body.slice(sep + 2) : undefined;
    const found = lookup(name, ctx);
    if (found !== undefined && (found !== '' || fallback === undefined)) return found;
    if (fallback !== undefined) return fallback;
    missing.push(name);
    return match;
  });
  return { value: out, missing };
}

/**
 * Expand variables in the fields Claude Code expands: `command`, `args`,
 * `env` values, `url`, `headers` values (and `cwd`). Every unset variable
 * without default is listed in `missing` with its field; the entry is then
 * unusable and the caller drops it.
 */
export function expandServerConfig(config: ServerConfig, ctx: ExpandContext): { config: ServerConfig; missing: UnsetVariable[] } {
  const missing: UnsetVariable[] = [];
  const one = (path: (string | number)[], v: string): string => {
    const r = expandString(v, ctx);
    for (const variable of r.missing) missing.push({ field: formatFieldPath(path)!, path, variable });
    return r.value;
  };
  const record = (field: string, rec: Record<string, string>): Record<string, string> =>
    Object.fromEntries(Object.entries(rec).map(([k, v]) => [k, one([field, k], v)]));

  const out: ServerConfig = { ...config };
  if (config.command !== undefined) out.command = one(['command'], config.command);
  if (config.args !== undefined) out.args = config.args.map((a, i) => one(['args', i], a));
  if (config.env !== undefined) out.env = record('env', config.env);
  if (config.url !== undefined) out.url = one(['url'], config.url);
  if (config.headers !== undefined) out.headers = record('headers', config.headers);
  if (config.cwd !== undefined) out.cwd = one(['cwd'], config.cwd);
  return { config: out, missing };
}
