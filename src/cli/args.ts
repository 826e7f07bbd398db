/**
 * Command-line arguments declared as data. Each option and positional is
 * declared once, with how it parses and what help says about it; `parseArgs`
 * definitions, usage lines, help rows and the positional-count check are all
 * derived from that declaration, so help and parsing cannot disagree.
 */
import type { ParseArgsConfig } from 'node:util';
import { ErrorCode, McpReconcilerError } from '../errors.js';

/** The program name, as help and hints spell it. */
export const BIN = 'mcp-reconciler';

interface OptionBase {
  /** One-letter form, e.g. `h` for `-h`. */
  short?: string;
  /** Other long names that parse as this option (their values are merged into it). */
  aliases?: readonly string[];
  /** What it does, for `--help` (defaults and "repeatable" are said here or derived). */
  help: string;
}

/** A switch: given or not. */
export interface FlagOption extends OptionBase {
  type: 'boolean';
}

/** An option that takes a value, e.g. `--timeout MS`. */
export interface ValueOption extends OptionBase {
  type: 'string';
  /** The value's name in help, e.g. `MS`, `FILE`, `a,b`. */
  value: string;
  /** May be given more than once; the values are collected in order. */
  multiple?: boolean;
}

/** One option's declaration. */
export type CliOption = FlagOption | ValueOption;

/** Options by long name (without `--`). */
export type CliOptions = Readonly<Record<string, CliOption>>;

/** One positional argument's declaration. */
export interface CliPositional {
  /** Its name in usage lines and errors, e.g. `SERVER`. */
  name: string;
  /** `required` ones come first, then `optional` ones, then at most one `variadic` (any number). */
  arity: 'required' | 'optional' | 'variadic';
  /** What it is, for `--help`. */
  help: string;
}

/** Option definitions in `node:util` `parseArgs` form. */
export type OptionDefs = NonNullable<ParseArgsConfig['options']>;

/** Parsed option values (global and the command's own). */
export type OptionValues = Record<string, string | boolean | (string | boolean)[] | undefined>;

/** The `parseArgs` definitions of `options`, aliases included. */
export function parseDefs(options: CliOptions): OptionDefs {
  const defs: OptionDefs = {};
  for (const [name, o] of Object.entries(options)) {
    const def = {
      type: o.type,
      ...(o.short !== undefined ? { short: o.short } : {}),
      ...(o.type === 'string' && o.multiple ? { multiple: true } : {}),
    };
    defs[name] = def;
    for (const alias of o.aliases ?? []) defs[alias] = { type: def.type, ...(def.multiple ? { multiple: true } : {}) };
  }
  return defs;
}

/** `values` with every alias's values moved to its option's name (the option's own first). */
export function foldAliases(values: OptionValues, options: CliOptions): OptionValues {
  const out = { ...values };
  for (const [name, o] of Object.entries(options)) {
    for (const alias of o.aliases ?? []) {
      const extra = out[alias];
      delete out[alias];
      if (extra === undefined) continue;
      const own = out[name];
      out[name] = Array.isArray(own) && Array.isArray(extra) ? [...own, ...extra] : (own ?? extra);
    }
  }
  return out;
}

/** The positional syntax for usage lines, e.g. `TOOL [JSON_ARGS]`. */
export function usageOf(positionals: readonly CliPositional[] = []): string {
  return positionals.map((p) => (p.arity === 'required' ? p.name : p.arity === 'optional' ? `[${p.name}]` : `[${p.name}...]`)).join(' ');
}

/** Help rows `[head, text]` for options, e.g. `['-h, --help', 'show help']`. */
export function optionRows(options: CliOptions): [string, string][] {
  return Object.entries(options).map(([name, o]) => {
    const head = `${o.short ? `-${o.short}, ` : ''}--${name}${o.type === 'string' ? ` ${o.value}` : ''}`;
    const repeatable = o.type === 'string' && o.multiple ? '; repeatable' : '';
    const aliases = o.aliases?.length ? ` (alias ${o.aliases.map((a) => `--${a}`).join(', ')})` : '';
    return [head, `${o.help}${repeatable}${aliases}`];
  });
}

/** Help rows `[name, text]` for positionals. */
export function positionalRows(positionals: readonly CliPositional[] = []): [string, string][] {
  return positionals.map((p) => [p.name, p.help]);
}

/** `rows` as indented two-column help lines, the second column starting at `width`. */
export function helpLines(rows: readonly (readonly [string, string])[], width: number): string[] {
  return rows.map(([head, text]) => `  ${head.padEnd(width)}${text}`);
}

/** The column width that fits every head in `rows` with at least three spaces after it. */
export function helpWidth(...rows: readonly (readonly [string, string])[][]): number {
  return Math.max(0, ...rows.flat().map(([head]) => head.length + 3));
}

const count = (n: number): string => `${n} argument${n === 1 ? '' : 's'}`;
const quoted = (args: readonly string[]): string => args.map((a) => JSON.stringify(a)).join(' ');

/**
 * Check `given` (the positionals after the verb) against `declared`; throws a
 * usage error (exit 2) naming what is missing or extra, with the usage line
 * and where the verb's help is.
 */
export function checkPositionals(verb: string, declared: readonly CliPositional[] = [], given: readonly string[]): void {
  const required = declared.filter((p) => p.arity === 'required');
  const max = declared.some((p) => p.arity === 'variadic') ? Infinity : declared.length;
  let message: string | undefined;
  if (given.length < required.length) {
    const missing = required.slice(given.length).map((p) => p.name);
    message = `${verb} needs ${required.map((p) => p.name).join(' and ')}, but ${
      given.length === 0 ? 'no arguments were given' : `got only ${count(given.length)} (${quoted(given)}), so ${missing.join(' and ')} ${missing.length === 1 ? 'is' : 'are'} missing`
    }`;
  } else if (given.length > max) {
    const takes = max === 0 ? 'no arguments' : `at most ${count(max)} (${usageOf(declared)})`;
    message = `${verb} takes ${takes}, but got ${count(given.length)}: ${quoted(given)}`;
  }
  if (message !== undefined) {
    const usage = [BIN, verb, usageOf(declared)].filter(Boolean).join(' ');
    throw new McpReconcilerError(ErrorCode.Usage, message, { hint: `usage: ${usage} [options]; see \`${BIN} ${verb} --help\`` });
  }
}
