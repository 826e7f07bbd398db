/**
 * Shared bits of the hot-reload tests: a temp workspace with real config
 * files, controllers started with a real watcher on it, and the checks that
 * nothing was left behind.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { expect } from 'vitest';
import { createMcpController, type McpController } from '../../src/controller/controller.js';
import type { McpControllerEvents, McpControllerOptions, ServerStatus } from '../../src/controller/types.js';
import { fixturePath } from '../helpers/fixtures.js';
import { pidAlive, waitFor } from '../helpers/processes.js';

/** The controller's default debounce; tests never change it. */
export const DEBOUNCE_MS = 300;
/** "Nothing happened" = this long after the debounce with no reconcile. */
export const QUIET_MS = DEBOUNCE_MS + 900;
/** Generous bound for anything that involves spawning servers on a busy 2-core box. */
export const SLOW = 30_000;

/** A config entry that runs the basic fixture; `version` names its extra tool `v<version>_tool`. */
export function basic(version: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { command: process.execPath, args: [fixturePath('basic-server')], env: { TOOLS_VERSION: version }, ...extra };
}

/** A config entry that runs the slow fixture (answers after `delayMs`). */
export function slow(delayMs: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { command: process.execPath, args: [fixturePath('slow-server')], env: { START_DELAY_MS: String(delayMs) }, ...extra };
}

/** A temp workspace: user file (ungated), `.mcp.json` (project, gated), workspace settings (gated). */
export class Workspace {
  readonly root: string;
  readonly userFile: string;
  readonly projectFile: string;
  readonly settingsFile: string;
  readonly approvalsFile: string;

  constructor(prefix = 'mcpr-reload-') {
    // The real path: approvals are keyed by it and chokidar reports it.
    this.root = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
    this.userFile = join(this.root, 'user-settings.json');
    this.projectFile = join(this.root, '.mcp.json');
    this.settingsFile = join(this.root, '.mcp-reconciler', 'settings.json');
    this.approvalsFile = join(this.root, 'state', 'approvals.json');
  }

  /** Write `content` (an object as pretty JSON, or raw text) to `file`, creating its folder. */
  write(file: string, content: unknown): void {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, typeof content === 'string' ? content : `${JSON.stringify(content, null, 2)}\n`);
  }

  /** Write the user file with these servers and, optionally, other top-level keys. */
  user(servers: Record<string, unknown>, rest: Record<string, unknown> = {}): void {
    this.write(this.userFile, { ...rest, mcpServers: servers });
  }

  /** Write `.mcp.json` (project scope, gated) with these servers. */
  project(servers: Record<string, unknown>): void {
    this.write(this.projectFile, { mcpServers: servers });
  }

  /** Controller options on this workspace: real watcher, temp HOME, temp approvals store. */
  options(extra: Partial<McpControllerOptions> = {}): McpControllerOptions {
    return {
      cwd: this.root,
      userConfigPath: this.userFile,
      approvals: this.approvalsFile,
      env: { ...process.env, HOME: this.root, XDG_CONFIG_HOME: this.root },
      readyTimeoutMs: SLOW,
      killGraceMs: 500,
      ...extra,
    };
  }

  remove(): void {
    rmSync(this.root, { recursive: true, force: true });
  }
}

/** Every controller a test file started, with every PID it ever showed, for the final leak check. */
export class Harness {
  private readonly controllers: McpController[] = [];
  private readonly workspaces: Workspace[] = [];
  private readonly seenPids = new Set<number>();

  workspace(prefix?: string): Workspace {
    const ws = new Workspace(prefix);
    this.workspaces.push(ws);
    return ws;
  }

  /** Create a controller (not started); its PIDs are recorded on every status change. */
  create(ws: Workspace, extra: Partial<McpControllerOptions> = {}): McpController {
    const c = createMcpController(ws.options(extra));
    this.controllers.push(c);
    c.on('client-update', ({ status }) => this.record(status));
    c.on('server-state', () => this.record(c.status()));
    return c;
  }

  /** Create and start a controller. */
  async start(ws: Workspace, extra: Partial<McpControllerOptions> = {}): Promise<McpController> {
    const c = this.create(ws, extra);
    await c.start();
    this.record(c.status());
    return c;
  }

  /** A fresh workspace whose user file holds `servers`, and a controller on it, started; `rows` are their status rows once each is connected. */
  async connected<K extends string>(
    servers: Record<K, unknown>,
    extra: Partial<McpControllerOptions> = {},
  ): Promise<{ ws: Workspace; c: McpController; rows: Record<K, ServerStatus> }> {
    const ws = this.workspace();
    ws.user(servers);
    const c = await this.start(ws, extra);
    const rows = {} as Record<K, ServerStatus>;
    for (const name of Object.keys(servers) as K[]) rows[name] = await waitState(c, name, 'connected');
    return { ws, c, rows };
  }

  record(rows: ServerStatus[]): void {
    for (const r of rows) if (r.pid !== undefined) this.seenPids.add(r.pid);
  }

  /** Dispose everything, then fail when any PID a controller ever showed is still alive. */
  async cleanup(): Promise<void> {
    for (const c of this.controllers.splice(0)) {
      for (const pid of c.pids()) this.seenPids.add(pid);
      await c.dispose();
    }
    for (const ws of this.workspaces.splice(0)) ws.remove();
    const pids = [...this.seenPids];
    await waitFor(() => pids.every((p) => !pidAlive(p)), `server processes ${pids.join(', ')} to exit`, 10_000).catch(() => undefined);
    expect(pids.filter(pidAlive)).toEqual([]);
  }
}

/** The status row of `name`, or undefined. */
export function row(c: McpController, name: string): ServerStatus | undefined {
  return c.status().find((r) => r.name === name);
}

/** Wait until `name` is in `state` (and, for `connected`, has a PID and tools). */
export async function waitState(c: McpController, name: string, state: ServerStatus['state'], timeoutMs = SLOW): Promise<ServerStatus> {
  await waitFor(
    () => {
      const r = row(c, name);
      if (r?.state !== state) return false;
      return state !== 'connected' || (r.pid !== undefined && r.tools.length > 0);
    },
    `${name} to be ${state} (now ${JSON.stringify(row(c, name)?.state)})`,
    timeoutMs,
  );
  return row(c, name)!;
}

/** The sorted names of the registered entries (tools or prompts) of `server`. */
function namesOf(entries: ReadonlyArray<{ server: string; name: string }>, server: string): string[] {
  return entries
    .filter((e) => e.server === server)
    .map((e) => e.name)
    .sort();
}

/** Names of the registered tools of `server`. */
export function toolsOf(c: McpController, server: string): string[] {
  return namesOf(c.tools(), server);
}

/** Names of the registered prompts of `server`. */
export function promptsOf(c: McpController, server: string): string[] {
  return namesOf(c.prompts(), server);
}

/** Record every payload of `event` from now on. */
export function collect<K extends keyof McpControllerEvents>(c: McpController, event: K): McpControllerEvents[K][] {
  const out: McpControllerEvents[K][] = [];
  c.on(event, (p) => out.push(p));
  return out;
}

/** Wait for the reconcile count to pass `before` (a reconcile that sent something to the machines). */
export async function waitReconciled(c: McpController, before: number, what = 'a reconcile'): Promise<void> {
  await waitFor(() => c.reconciles > before, what, SLOW);
}

/** Make an edit with `write`, then wait until a reconcile has applied it. */
export async function reconciledAfter(c: McpController, what: string, write: () => void): Promise<void> {
  const before = c.reconciles;
  write();
  await waitReconciled(c, before, what);
}

/** Let the debounce expire and a quiet period pass, so that a reconcile that was going to happen has happened. */
export function quiet(ms = QUIET_MS): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
