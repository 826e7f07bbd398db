/**
 * Claude Code's own enable lists (docs/manage.md), read and written the way
 * Claude Code keeps them:
 *
 * - `~/.claude.json` `projects[<root>]`: `disabledMcpServers` (what its
 *   `/mcp` toggle writes; any server of the project), `disabledMcpjsonServers`,
 *   `enabledMcpjsonServers`, `enableAllProjectMcpServers` (`.mcp.json`
 *   servers only);
 * - the settings files `~/.claude/settings.json`, `<root>/.claude/settings.json`
 *   and `<root>/.claude/settings.local.json`: `disabledMcpjsonServers`,
 *   `enabledMcpjsonServers`, `enableAllProjectMcpServers`.
 *
 * A `disabledMcpjsonServers` entry in any of them rejects the server (Claude
 * Code's rule), so a disable list anywhere switches the server off here and
 * `why` names the file. The enable lists are read and kept for `config`;
 * they do not approve a server (this controller's approvals do).
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Scope } from '../../machines/types.js';
import { isPlainObject } from '../util/persist.js';
import { isSyntaxProblem, MAX_CONFIG_BYTES, parseText } from './parse.js';
import { rewriteFile } from './writers/file.js';
import { addMember, appendToArray, deleteMember, readMember, removeFromArray, setMember, TextEditError } from './writers/json-edit.js';
import { ErrorCode, McpReconcilerError } from '../errors.js';
import type { ClaudeSwitchList } from '../gating/compute.js';

export type { ClaudeSwitchList };

const NAME_LISTS = ['disabledMcpServers', 'disabledMcpjsonServers', 'enabledMcpjsonServers'] as const;
type NameList = (typeof NAME_LISTS)[number];

/** Claude Code's settings files that may hold the `…McpjsonServers` lists, lowest precedence first. */
export function claudeSettingsFiles(root: string, home: string): string[] {
  return [join(home, '.claude', 'settings.json'), join(root, '.claude', 'settings.json'), join(root, '.claude', 'settings.local.json')];
}

/**
 * The lists of `obj` (the object at `at` in `file`); `undefined` when it has
 * none. `disabledMcpServers` is read only in `~/.claude.json`'s project
 * entry (`at` not empty), where Claude Code keeps it.
 */
export function readClaudeLists(obj: Record<string, unknown>, file: string, at: readonly string[]): ClaudeSwitchList | undefined {
  const out: ClaudeSwitchList = { file, at: [...at] };
  let found = false;
  for (const key of NAME_LISTS) {
    if (key === 'disabledMcpServers' && at.length === 0) continue;
    const v = obj[key];
    if (Array.isArray(v)) {
      out[key] = v.filter((x): x is string => typeof x === 'string');
      found = true;
    }
  }
  if (typeof obj.enableAllProjectMcpServers === 'boolean') {
    out.enableAllProjectMcpServers = obj.enableAllProjectMcpServers;
    found = true;
  }
  return found ? out : undefined;
}

/** The lists of Claude Code settings file `path`; `undefined` when it is missing, unreadable or has none. */
export function readClaudeSettingsFile(path: string): ClaudeSwitchList | undefined {
  try {
    if (statSync(path).size > MAX_CONFIG_BYTES) return undefined;
    const parsed = parseText(readFileSync(path, 'utf8'), false);
    if (isSyntaxProblem(parsed) || !isPlainObject(parsed.value)) return undefined;
    return readClaudeLists(parsed.value, path, []);
  } catch {
    return undefined;
  }
}

/** Which list switches a server of `scope` off: `disabledMcpjsonServers` only covers `.mcp.json` (project) servers. */
function listsFor(scope: Scope): NameList[] {
  return scope === 'project' ? ['disabledMcpServers', 'disabledMcpjsonServers'] : ['disabledMcpServers'];
}

/** Who of `lists` switches server `name` (of `scope`) off, e.g. `disabledMcpServers in /home/me/.claude.json`; `undefined` when none does. */
export function claudeDisabledBy(lists: readonly ClaudeSwitchList[], name: string, scope: Scope): string | undefined {
  const by: string[] = [];
  for (const l of lists) for (const key of listsFor(scope)) if (l[key]?.includes(name)) by.push(`${key} in ${l.file}${l.at.length > 0 ? ` (${l.at.map((k) => `[${JSON.stringify(k)}]`).join('')})` : ''}`);
  return by.length > 0 ? by.join(' and ') : undefined;
}

/** What {@link writeClaudeSwitch} wrote. */
export interface ClaudeSwitchWrite {
  file: string;
  field: string;
  written: boolean;
  backup?: string;
}

/** `text` with `name` added to (or taken out of) the list `key` of the object at `at`; `undefined` when nothing changes. */
function edited(text: string, at: readonly string[], key: string, name: string, on: boolean): string | undefined {
  const current = readMember(text, at, key);
  const list = Array.isArray(current) ? current.filter((x): x is string => typeof x === 'string') : undefined;
  if (on) {
    if (!list?.includes(name)) return undefined;
    const next = list.filter((x) => x !== name);
    // Disable then enable gives the file back: a list we emptied goes, and so do the objects it leaves empty.
    return next.length === 0 ? pruneEmpty(deleteMember(text, at, key) ?? text, at) : removeFromArray(text, at, key, name);
  }
  if (list?.includes(name)) return undefined;
  // A member that is there but not a list is replaced; a list keeps its layout.
  return list === undefined ? (current === undefined ? addMember(text, at, key, [name]) : setMember(text, at, key, [name])) : appendToArray(text, at, key, name);
}

/** `text` without the objects on `at` that are now empty, innermost first (the top level stays). */
function pruneEmpty(text: string, at: readonly string[]): string {
  for (let depth = at.length; depth > 0; depth--) {
    const parent = at.slice(0, depth - 1);
    const obj = readMember(text, parent, at[depth - 1]!);
    if (!isPlainObject(obj) || Object.keys(obj).length > 0) break;
    text = deleteMember(text, parent, at[depth - 1]!) ?? text;
  }
  return text;
}

async function editList(file: string, at: readonly string[], key: string, name: string, on: boolean): Promise<ClaudeSwitchWrite> {
  const done = await rewriteFile(file, (text, exists) => {
    if (on && !exists) return { result: undefined };
    try {
      const next = edited(text, at, key, name, on);
      return next === undefined ? { result: undefined } : { text: next, result: undefined };
    } catch (err) {
      if (!(err instanceof TextEditError)) throw err;
      throw new McpReconcilerError(ErrorCode.ConfigInvalid, `cannot edit ${file}${err.line !== undefined ? `:${err.line}` : ''}: ${err.message}`, {
        hint: 'fix the file by hand (or restore it from its .bak), then run this again',
        details: { file, server: name },
      });
    }
  });
  return { file: done.file, field: key, written: done.written, ...(done.backup ? { backup: done.backup } : {}) };
}

/**
 * Switch server `name` (of `scope`) off or on in Claude Code's own field:
 * off adds it to `projects[<root>].disabledMcpServers` of `claudeJson`
 * (`disabledMcpjsonServers` for a `.mcp.json` server), as `/mcp` does; on
 * takes it out of every list in `lists` that switches it off, so no file
 * of Claude Code's still does. Minimal edits, backup, atomic, locked.
 */
export async function writeClaudeSwitch(options: { claudeJson: string; root: string; name: string; scope: Scope; on: boolean; lists: readonly ClaudeSwitchList[] }): Promise<ClaudeSwitchWrite[]> {
  const { name, scope, on } = options;
  if (!on) {
    const key = scope === 'project' ? 'disabledMcpjsonServers' : 'disabledMcpServers';
    return [await editList(options.claudeJson, ['projects', options.root], key, name, false)];
  }
  const out: ClaudeSwitchWrite[] = [];
  for (const l of options.lists) for (const key of listsFor(scope)) if (l[key]?.includes(name)) out.push(await editList(l.file, l.at, key, name, true));
  return out;
}
