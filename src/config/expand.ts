import type { ServerConfig } from '../../machines/types.js';
import { getOwn } from '../util/own.js';
import { formatFieldPath } from './field-path.js';

/**
 * What a host does with an unset variable: `error` drops the server (Claude
 * Code), `keep` leaves the text as written (Gemini CLI), `empty` substitutes
 * `""` (VS Code).
 */
export type UnsetRule = 'error' | 'keep' | 'empty';

/**
 * How one host expands variables in its config file. The default (no
 * `syntax` in the context) is Claude Code's: `${VAR}`, `${VAR:-default}`,
 * and VS Code's `${env:VAR}`, all unset-is-an-error.
 */
export interface VariableSyntax {
  /** `none`: strings are used as written; `braces`: `${…}`; `braces-and-bare`: `${…}` and `$NAME`; `opencode`: `{env:NAME}` and `{file:path}`. */
  style: 'none' | 'braces' | 'braces-and-bare' | 'opencode';
  /** `${VAR:-default}` (shell, Claude Code). */
  defaults: boolean;
  /** `${env:NAME}` (VS Code, Cursor, Roo, Windsurf). */
  envPrefix: boolean;
  /** A plain `${NAME}` (or `$NAME`) whose variable is unset. */
  unset: UnsetRule;
  /** An unset `${env:NAME}`. */
  envUnset: UnsetRule;
  /** Whether `${input:id}` and `${config:key}` are host variables (VS Code). */
  inputs: boolean;
}

/** Where variable values come from. */
export interface ExpandContext {
  env: NodeJS.ProcessEnv;
  /** Built-in variables (e.g. `workspaceFolder`); they win over the env. */
  builtins?: Readonly<Record<string, string>>;
  /** The host's rules; default Claude Code's (see {@link VariableSyntax}). */
  syntax?: VariableSyntax;
  /** The answer to `${input:id}`, or `undefined` when there is none yet. */
  input?(id: string): string | undefined;
  /** The value of `${config:key}` (a host setting), or `undefined`. */
  config?(key: string): string | undefined;
  /** The contents of `{file:path}` (opencode), or `undefined` when unreadable. */
  file?(path: string): string | undefined;
}

/** A variable without a value (and without a default) in one field. */
export interface UnsetVariable {
  /** e.g. `args[0]`, `env.TOKEN`. */
  field: string;
  /** The same as a path inside the entry: `['args', 0]`. */
  path: (string | number)[];
  /** As written inside the braces: `TOKEN`, `input:api-key`, `config:x.y`, `file:~/t`. */
  variable: string;
}

/** The rules used when a context names none: Claude Code's, plus `${env:NAME}`. */
export const DEFAULT_SYNTAX: Readonly<VariableSyntax> = Object.freeze({
  style: 'braces',
  defaults: true,
  envPrefix: true,
  unset: 'error',
  envUnset: 'error',
  inputs: false,
});

// The body is anything up to the first `}`, so unknown forms (`${input:x}`)
// are seen and reported rather than passed on half-expanded.
const BRACES = /\$\{([^}]*)\}/g;
// Gemini CLI's form: `$NAME` or `${anything}` (no `:-` defaults).
const BRACES_AND_BARE = /\$(?:([A-Za-z_]\w*)|\{([^}]+)\})/g;
const OPENCODE = /\{(env|file):([^}]+)\}/g;

function envValue(name: string, ctx: ExpandContext): string | undefined {
  // Own properties only: `${toString}` must be unset, not Object.prototype.toString.
  const value = getOwn(ctx.env, name);
  return typeof value === 'string' ? value : undefined;
}

function builtin(name: string, ctx: ExpandContext): string | undefined {
  const value = ctx.builtins ? getOwn(ctx.builtins, name) : undefined;
  return typeof value === 'string' ? value : undefined;
}

/** `undefined`: no value and the rule says error; the caller records it as missing. */
function unsetValue(rule: UnsetRule, match: string): string | undefined {
  return rule === 'keep' ? match : rule === 'empty' ? '' : undefined;
}

function resolveBody(body: string, match: string, ctx: ExpandContext, syntax: VariableSyntax): string | undefined {
  const sep = syntax.defaults ? body.indexOf(':-') : -1;
  const name = sep >= 0 ? body.slice(0, sep) : body;
  const fallback = sep >= 0 ? body.slice(sep + 2) : undefined;
  let found = builtin(name, ctx);
  let rule = syntax.unset;
  if (found === undefined) {
    if (syntax.inputs && name.startsWith('input:')) {
      // An input has no "unset" rule: the host asks for it, so an answer is required.
      found = ctx.input?.(name.slice(6));
      rule = 'error';
    } else if (syntax.inputs && name.startsWith('config:')) {
      found = ctx.config?.(name.slice(7));
      rule = 'error';
    } else if (syntax.envPrefix && name.startsWith('env:')) {
      found = envValue(name.slice(4), ctx);
      rule = syntax.envUnset;
    } else {
      found = envValue(name, ctx);
    }
  }
  // As in a shell, the default applies when the variable is unset or empty.
  if (found !== undefined && (found !== '' || fallback === undefined)) return found;
  if (fallback !== undefined) return fallback;
  return unsetValue(rule, match);
}

/**
 * Expand variables in one string by the host's rules (`ctx.syntax`, default
 * {@link DEFAULT_SYNTAX}). Returns the names that had no value where the
 * host treats that as an error; the caller must not use the result then.
 */
export function expandString(value: string, ctx: ExpandContext): { value: string; missing: string[] } {
  const syntax = ctx.syntax ?? DEFAULT_SYNTAX;
  const missing: string[] = [];
  if (syntax.style === 'none') return { value, missing };
  if (syntax.style === 'opencode') {
    const out = value.replace(OPENCODE, (match, kind: string, arg: string) => {
      // opencode substitutes "" for an unset variable; an unreadable file is an error there too.
      if (kind === 'env') return envValue(arg, ctx) ?? '';
      const text = ctx.file?.(arg);
      if (text === undefined) missing.push(`file:${arg}`);
      return text ?? match;
    });
    return { value: out, missing };
  }
  const pattern = syntax.style === 'braces' ? BRACES : BRACES_AND_BARE;
  const out = value.replace(pattern, (match, a: string | undefined, b: string | undefined) => {
    const body = syntax.style === 'braces' ? a! : (a ?? b)!;
    const resolved = resolveBody(body, match, ctx, syntax);
    if (resolved !== undefined) return resolved;
    const sep = syntax.defaults ? body.indexOf(':-') : -1;
    missing.push(sep >= 0 ? body.slice(0, sep) : body);
    return match;
  });
  return { value: out, missing };
}

/**
 * Expand variables in the fields Claude Code expands: `command`, `args`,
 * `env` values, `url`, `headers` values (and `cwd`, `envFile`). Every variable
 * without a value that the host treats as an error is listed in `missing`
 * with its field; the entry is then unusable and the caller drops it.
 */
export function expandServerConfig<C extends ServerConfig & { envFile?: string }>(config: C, ctx: ExpandContext): { config: C; missing: UnsetVariable[] } {
  const missing: UnsetVariable[] = [];
  const one = (path: (string | number)[], v: string): string => {
    const r = expandString(v, ctx);
    for (const variable of r.missing) missing.push({ field: formatFieldPath(path)!, path, variable });
    return r.value;
  };
  const record = (field: string, rec: Record<string, string>): Record<string, string> =>
    Object.fromEntries(Object.entries(rec).map(([k, v]) => [k, one([field, k], v)]));

  const out: C = { ...config };
  if (config.command !== undefined) out.command = one(['command'], config.command);
  if (config.args !== undefined) out.args = config.args.map((a, i) => one(['args', i], a));
  if (config.env !== undefined) out.env = record('env', config.env);
  if (config.url !== undefined) out.url = one(['url'], config.url);
  if (config.headers !== undefined) out.headers = record('headers', config.headers);
  if (config.cwd !== undefined) out.cwd = one(['cwd'], config.cwd);
  if (config.envFile !== undefined) out.envFile = one(['envFile'], config.envFile);
  // OAuth secrets belong in the environment, not the file (docs/oauth.md).
  if (config.oauth !== undefined) {
    const oauth = { ...config.oauth };
    for (const key of ['clientId', 'clientSecret', 'privateKey'] as const) {
      const v = oauth[key];
      if (v !== undefined) oauth[key] = one(['oauth', key], v);
    }
    out.oauth = oauth;
  }
  return { config: out, missing };
}
