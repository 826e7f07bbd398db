/**
 * `enable` / `disable` written into a host's own config file, in the field
 * that host reads (docs/manage.md): `"disabled": true` (Cline, Roo,
 * Windsurf, ours), `enabled = false` / `"enabled": false` (Codex, opencode,
 * Zed), and tool lists `disabledTools` (Roo, Windsurf), `disabled_tools`
 * (Codex), `excludeTools` (Gemini, Qwen, ours). The same minimal-edit writers
 * as `add`: every other byte stays, a backup is kept, the write is atomic
 * and locked; enabling removes what disabling added, so the pair gives the
 * file back byte for byte. A host with no such field gets `undefined` here,
 * and the caller keeps the switch in the workspace state file instead.
 */
import type { FormatName } from './formats.js';
import { parseSourceText } from './load.js';
import type { ConfigSource } from './sources.js';
import { rewriteFile } from './writers/file.js';
import { deleteMember, readMember, setMember, TextEditError } from './writers/json-edit.js';
import { deleteTomlKey, readTomlServer, setTomlKey } from './writers/toml-edit.js';
import { ErrorCode, McpReconcilerError } from '../errors.js';

/** The fields a host reads to switch a server or some of its tools off. */
export interface HostSwitches {
  /** `disabled: true`, or `enabled: false`. */
  server?: 'disabled' | 'enabled';
  /** A list of raw tool names the host hides. */
  tools?: 'excludeTools' | 'disabledTools' | 'disabled_tools';
}

/** Each format's switches, as its reader in formats.ts reads them. */
export const HOST_SWITCHES: Readonly<Record<FormatName, HostSwitches>> = {
  default: { server: 'disabled', tools: 'excludeTools' },
  cline: { server: 'disabled' },
  roo: { server: 'disabled', tools: 'disabledTools' },
  windsurf: { server: 'disabled', tools: 'disabledTools' },
  codex: { server: 'enabled', tools: 'disabled_tools' },
  opencode: { server: 'enabled' },
  zed: { server: 'enabled' },
  gemini: { tools: 'excludeTools' },
  qwen: { tools: 'excludeTools' },
  'claude-code': {},
  'claude-desktop': {},
  vscode: {},
  cursor: {},
};

/** Where one server's entry is: the file, the keys to the object of servers, its format. */
export interface EntryLocation {
  path: string;
  /** From the top of the file to the object holding the servers, e.g. `['mcpServers']`. */
  keyPath: string[];
  format: FormatName;
  scope: ConfigSource['scope'];
}

/** What {@link writeHostSwitch} did. */
export interface HostSwitchResult {
  /** The file (symlinks followed). */
  file: string;
  /** The field written, e.g. `disabled` or `disabledTools`. */
  field: string;
  /** Whether the file changed (it may already have said so). */
  written: boolean;
  backup?: string;
}

function isToml(format: FormatName): boolean {
  return format === 'codex';
}

function entryOf(loc: EntryLocation, text: string, name: string): Record<string, unknown> | undefined {
  const v = isToml(loc.format) ? readTomlServer(text, loc.keyPath, name) : readMember(text, loc.keyPath, name);
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

function setField(loc: EntryLocation, text: string, name: string, key: string, value: unknown): string {
  return isToml(loc.format) ? setTomlKey(text, loc.keyPath, name, key, value) : setMember(text, [...loc.keyPath, name], key, value);
}

function deleteField(loc: EntryLocation, text: string, name: string, key: string): string | undefined {
  return isToml(loc.format) ? deleteTomlKey(text, loc.keyPath, name, key) : deleteMember(text, [...loc.keyPath, name], key);
}

/** The new text, or `undefined` when the file already says so. */
function switched(loc: EntryLocation, text: string, name: string, on: boolean, tools: readonly string[] | undefined, sw: HostSwitches): string | undefined {
  const entry = entryOf(loc, text, name);
  if (entry === undefined) throw new TextEditError(`"${name}" is not in the file any more`);
  if (tools === undefined) {
    const key = sw.server!;
    const off = key === 'disabled' ? entry.disabled === true : entry.enabled === false;
    // Cline and Roo write `"disabled": false` on every entry; elsewhere the field goes, so disable then enable gives the file back.
    const spell = loc.format === 'cline' || loc.format === 'roo';
    if (on) return off ? (spell ? setField(loc, text, name, key, key === 'enabled') : deleteField(loc, text, name, key)) : undefined;
    return off ? undefined : setField(loc, text, name, key, key === 'disabled');
  }
  const key = sw.tools!;
  const current = Array.isArray(entry[key]) ? (entry[key] as unknown[]).filter((x): x is string => typeof x === 'string') : [];
  const next = on ? current.filter((t) => !tools.includes(t)) : [...current, ...tools.filter((t) => !current.includes(t))];
  if (next.length === current.length && next.every((t, i) => t === current[i])) return undefined;
  return next.length === 0 ? deleteField(loc, text, name, key) : setField(loc, text, name, key, next);
}

/** Throw unless the file now reads as asked (the host's reader is the judge). */
function checkReadBack(loc: EntryLocation, text: string, name: string, on: boolean, tools: readonly string[] | undefined): void {
  const source: ConfigSource = { scope: loc.scope, path: loc.path, format: loc.format, ...(loc.keyPath.length > 1 ? { at: loc.keyPath.slice(0, -1) } : {}) };
  const config = parseSourceText(text, source, {}, {}).servers[name];
  // Skipped for an unset variable: the switch is still where the host reads it.
  if (config === undefined) return;
  const ok = tools === undefined ? (config.disabled === true) === !on : tools.every((t) => (config.excludeTools ?? []).includes(t) === !on);
  if (!ok) {
    throw new McpReconcilerError(ErrorCode.ConfigInvalid, `the edit of "${name}" in ${loc.path} would not read back as ${on ? 'enabled' : 'disabled'}`, {
      hint: 'nothing was written; edit the entry by hand',
      details: { file: loc.path, server: name },
    });
  }
}

/**
 * Switch server `name` (or its `tools`) on or off in the host's own file,
 * in the field that host reads; `undefined` when the host has no such field
 * (keep the switch elsewhere). Throws `config_invalid` when the file cannot
 * be edited safely, `config_write` on I/O failures.
 */
export async function writeHostSwitch(loc: EntryLocation, name: string, on: boolean, tools?: readonly string[]): Promise<HostSwitchResult | undefined> {
  const sw = HOST_SWITCHES[loc.format];
  const field = tools === undefined ? sw.server : sw.tools;
  if (field === undefined) return undefined;
  const done = await rewriteFile(loc.path, (text, exists) => {
    if (!exists) throw new McpReconcilerError(ErrorCode.UnknownServer, `${loc.path} is gone`, { hint: 'run `mcp-reconciler config` to see where the server is now', details: { file: loc.path } });
    let next: string | undefined;
    try {
      next = switched(loc, text, name, on, tools, sw);
    } catch (err) {
      if (!(err instanceof TextEditError)) throw err;
      throw new McpReconcilerError(ErrorCode.ConfigInvalid, `cannot edit ${loc.path}${err.line !== undefined ? `:${err.line}` : ''}: ${err.message}`, {
        hint: 'fix the file by hand (or restore it from its .bak), then run this again',
        details: { file: loc.path, server: name },
      });
    }
    if (next !== undefined) checkReadBack(loc, next, name, on, tools);
    return next === undefined ? { result: undefined } : { text: next, result: undefined };
  });
  return { file: done.file, field, written: done.written, ...(done.backup ? { backup: done.backup } : {}) };
}

/**
 * Where `name`'s entry is in `source`'s file: the servers key (of the
 * format's keys) that holds it. `undefined` when the file does not have it
 * (or cannot be read).
 */
export function locateEntry(source: ConfigSource, text: string, name: string, keys: readonly string[]): EntryLocation | undefined {
  const format = source.format ?? 'default';
  for (const key of keys) {
    const loc: EntryLocation = { path: source.path, keyPath: [...(source.at ?? []), key], format, scope: source.scope };
    try {
      if (entryOf(loc, text, name) !== undefined) return loc;
    } catch {
      return undefined;
    }
  }
  return undefined;
}
