/**
 * The workspace state file: what `enable` / `disable` persist for servers
 * whose host has no field of its own for it (Claude Code, Claude Desktop,
 * VS Code, Cursor, Gemini's servers, runtime entries). One small JSON file
 * per workspace in the state directory, 0600, written atomically under a
 * lock; read back under the file-trust rule (docs/spec.md §4), a file that is
 * not trusted is reported and ignored.
 */
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { withFileLock } from '../util/file-lock.js';
import { readTrusted } from '../util/file-trust.js';
import { appDir, isPlainObject, workspaceKey, writeFileAtomic } from '../util/persist.js';
import { getOwn, setOwn } from '../util/own.js';
import { ErrorCode, McpReconcilerError, describeError } from '../errors.js';

/** What is switched off for one server. */
export interface ServerToggle {
  /** The whole server is off. */
  disabled?: boolean;
  /** These raw tool names are off. */
  disabledTools?: string[];
}

/** The file's content. */
export interface WorkspaceState {
  version: 1;
  servers: Record<string, ServerToggle>;
  /** Registered tool names the user answered "always allow" for (`permissions.ask`). */
  alwaysAllow?: string[];
}

/** `$XDG_STATE_HOME/mcp-reconciler/workspaces/<workspace hash>.json` (`~/.local/state/…`); pass the root's real path. */
export function defaultWorkspaceStatePath(root: string, env: NodeJS.ProcessEnv = process.env): string {
  return join(appDir('state', env), 'workspaces', `${workspaceKey(root)}.json`);
}

function empty(): WorkspaceState {
  return { version: 1, servers: {} };
}

function isNames(v: unknown): v is string[] {
  return Array.isArray(v) && v.every((x) => typeof x === 'string');
}

/** Parse the file's text; anything unexpected is dropped, never thrown. */
function parseState(text: string): WorkspaceState {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return empty();
  }
  const out = empty();
  const servers = isPlainObject(raw) && isPlainObject(raw.servers) ? raw.servers : {};
  for (const [name, t] of Object.entries(servers)) {
    if (!isPlainObject(t)) continue;
    const toggle: ServerToggle = {};
    if (t.disabled === true) toggle.disabled = true;
    if (isNames(t.disabledTools) && t.disabledTools.length > 0) toggle.disabledTools = [...new Set(t.disabledTools)];
    if (toggle.disabled || toggle.disabledTools) setOwn(out.servers, name, toggle);
  }
  if (isPlainObject(raw) && isNames(raw.alwaysAllow) && raw.alwaysAllow.length > 0) out.alwaysAllow = [...new Set(raw.alwaysAllow)].sort();
  return out;
}

/** What {@link WorkspaceStateFile.read} found. */
export interface WorkspaceStateRead {
  state: WorkspaceState;
  /** Why the file was ignored (not private, owned by someone else), with the fix. */
  problem?: string;
}

/** One workspace's state file. */
export class WorkspaceStateFile {
  constructor(readonly path: string) {}

  /** The state; an absent file is empty, an untrusted one is empty with the problem said. */
  async read(): Promise<WorkspaceStateRead> {
    let got;
    try {
      got = await readTrusted(this.path);
    } catch (err) {
      return { state: empty(), problem: `cannot read ${this.path}: ${describeError(err)}` };
    }
    if ('missing' in got) return { state: empty() };
    if ('untrusted' in got) return { state: empty(), problem: `${this.path} is ${got.untrusted.what}, so its enable/disable switches are ignored; fix: ${got.untrusted.fix}` };
    return { state: parseState(got.text) };
  }

  /** Change one server's toggle under the file's lock; an empty toggle removes the server's record. */
  async update(server: string, change: (current: ServerToggle) => ServerToggle): Promise<ServerToggle> {
    return this.write((state) => {
      const next = normalise(change({ ...(getOwn(state.servers, server) ?? {}) }));
      if (next.disabled || next.disabledTools) setOwn(state.servers, server, next);
      else delete state.servers[server];
      return next;
    });
  }

  /** Remember "always allow" for registered tool `tool`. */
  async allowAlways(tool: string): Promise<void> {
    await this.write((state) => {
      state.alwaysAllow = [...new Set([...(state.alwaysAllow ?? []), tool])].sort();
    });
  }

  /** Read, change and write the file under its lock. */
  private async write<T>(change: (state: WorkspaceState) => T): Promise<T> {
    try {
      await mkdir(dirname(this.path), { recursive: true, mode: 0o700 });
      return await withFileLock(`${this.path}.lock`, async () => {
        const { state, problem } = await this.read();
        if (problem) throw new McpReconcilerError(ErrorCode.ConfigWrite, problem, { hint: 'fix the file as said, then run this again', details: { file: this.path } });
        const result = change(state);
        await writeFileAtomic(this.path, `${JSON.stringify(state, null, 2)}\n`, { durable: true });
        return result;
      });
    } catch (err) {
      if (err instanceof McpReconcilerError && err.code === ErrorCode.ConfigWrite) throw err;
      throw new McpReconcilerError(ErrorCode.ConfigWrite, `cannot write ${this.path}: ${describeError(err)}`, {
        hint: 'check that the state directory is writable by you',
        details: { file: this.path },
        cause: err,
      });
    }
  }
}

function normalise(t: ServerToggle): ServerToggle {
  const out: ServerToggle = {};
  if (t.disabled) out.disabled = true;
  const tools = [...new Set(t.disabledTools ?? [])].sort();
  if (tools.length > 0) out.disabledTools = tools;
  return out;
}
