/**
 * Shared bits of the controller integration tests: a temp workspace per test,
 * controllers built with test-friendly options, and the no-orphans check that
 * every PID a controller ever spawned (and their descendants) is dead.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { runCliCaptured } from '../helpers/cli.js';
import { createMcpController, type McpController } from '../../src/controller/controller.js';
import type { McpControllerOptions, ServerStateName } from '../../src/controller/types.js';
import type { ServerConfig } from '../../machines/types.js';
import { fixturePath } from '../helpers/fixtures.js';
import { descendantsOf, pidAlive, waitFor } from '../helpers/processes.js';

/** A temp workspace: its root, a private HOME / XDG_CONFIG_HOME and an approvals file. */
export interface Workspace {
  root: string;
  home: string;
  approvals: string;
  env: NodeJS.ProcessEnv;
  /** Write `<root>/.mcp.json` (project scope, gated). */
  writeMcpJson(servers: Record<string, unknown>): string;
  /** Write the default preset's user-scope settings (`$XDG_CONFIG_HOME/mcp-reconciler/settings.json`). */
  writeUserSettings(doc: Record<string, unknown>): string;
}

/**
 * Tracks controllers and every PID they spawn; `cleanup()` disposes them and
 * fails the test file when any of those processes is still alive.
 */
export class Harness {
  private readonly controllers: McpController[] = [];
  private readonly dirs: string[] = [];
  private readonly seen = new Set<number>();

  /** A fresh temp workspace, removed by {@link cleanup}. */
  workspace(prefix = 'mcp-ctl-'): Workspace {
    const root = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
    this.dirs.push(root);
    const home = join(root, '.home');
    mkdirSync(home, { recursive: true });
    const env = { ...process.env, HOME: home, XDG_CONFIG_HOME: home };
    return {
      root,
      home,
      approvals: join(home, 'approvals.json'),
      env,
      writeMcpJson(servers) {
        const file = join(root, '.mcp.json');
        writeFileSync(file, JSON.stringify({ mcpServers: servers }, null, 2));
        return file;
      },
      writeUserSettings(doc) {
        const dir = join(home, 'mcp-reconciler');
        mkdirSync(dir, { recursive: true });
        const file = join(dir, 'settings.json');
        writeFileSync(file, JSON.stringify(doc, null, 2));
        return file;
      },
    };
  }

  /** A controller on `ws` with small timeouts, no watcher, and PID recording on every state change. */
  controller(ws: Workspace, extra: Partial<McpControllerOptions> = {}): McpController {
    const c = createMcpController({
      cwd: ws.root,
      approvals: ws.approvals,
      env: ws.env,
      watch: false,
      killGraceMs: 500,
      readyTimeoutMs: 30_000,
      connectTimeoutMs: 20_000,
      ...extra,
    });
    this.controllers.push(c);
    c.on('server-state', () => this.record(c));
    return c;
  }

  /** A controller on `ws` (default a fresh workspace) serving `servers` as runtime servers, started. */
  async running(
    servers: Record<string, ServerConfig>,
    extra: Partial<McpControllerOptions> = {},
    ws: Workspace = this.workspace(),
  ): Promise<{ ws: Workspace; c: McpController }> {
    const c = this.controller(ws, extra);
    for (const [name, config] of Object.entries(servers)) await c.addRuntimeServer(name, config);
    await c.start();
    return { ws, c };
  }

  /** A fresh workspace whose user settings are `settings`, and a controller on it, started, with each of their servers connected. */
  async connected(
    settings: { mcpServers: Record<string, unknown> } & Record<string, unknown>,
    extra: Partial<McpControllerOptions> = {},
    prefix?: string,
  ): Promise<{ ws: Workspace; c: McpController }> {
    const ws = this.workspace(prefix);
    ws.writeUserSettings(settings);
    const c = this.controller(ws, extra);
    await c.start();
    for (const name of Object.keys(settings.mcpServers)) await waitState(c, name, 'connected');
    return { ws, c };
  }

  /** Remember the controller's live PIDs and their descendants (grandchildren of wrappers). */
  record(c: McpController): void {
    for (const pid of c.pids()) {
      this.seen.add(pid);
      for (const d of descendantsOf(pid)) this.seen.add(d);
    }
  }

  /** Extra PIDs a test saw (a server's self-reported pid, say). */
  remember(...pids: number[]): void {
    for (const pid of pids) this.seen.add(pid);
  }

  /** Every PID recorded so far. */
  pids(): number[] {
    return [...this.seen];
  }

  /** Dispose every controller, then assert that no recorded process survives. */
  async cleanup(): Promise<void> {
    for (const c of this.controllers) this.record(c);
    await Promise.all(this.controllers.map((c) => c.dispose()));
    for (const c of this.controllers) expect(c.pids()).toEqual([]);
    const pids = this.pids();
    // Reaping may lag a moment behind SIGKILL.
    await waitFor(() => pids.every((p) => !pidAlive(p)), `processes ${pids.join(', ')} to be gone`, 5_000).catch(() => {});
    expect(pids.filter(pidAlive)).toEqual([]);
    for (const dir of this.dirs) rmSync(dir, { recursive: true, force: true });
  }
}

/** The row of `server` in `status()` (throws when absent). */
export function row(c: McpController, server: string) {
  const r = c.status().find((s) => s.name === server);
  if (!r) throw new Error(`no status row for "${server}" (rows: ${c.status().map((s) => s.name).join(', ')})`);
  return r;
}

/** Wait until `server` is in `state`. */
export async function waitState(c: McpController, server: string, state: ServerStateName, timeoutMs = 30_000): Promise<void> {
  await waitFor(
    () => c.status().some((s) => s.name === server && s.state === state),
    `"${server}" to be ${state} (now ${c.status().find((s) => s.name === server)?.state ?? 'absent'})`,
    timeoutMs,
  );
}

export { firstText, rejection } from '../helpers/results.js';

/** Registered tool names of the controller, sorted. */
export function toolNames(c: McpController): string[] {
  return c.tools().map((t) => t.name).sort();
}

/**
 * Watch `server` for a lost session from now on: the tool names any `tools-changed` removes (a
 * reconnect must not make the list flicker), and the last error each time it goes `reconnecting`.
 */
export function watchReconnects(c: McpController, server: string): { removed: string[]; reconnectErrors: Array<string | undefined> } {
  const removed: string[] = [];
  c.on('tools-changed', (e) => removed.push(...e.removed));
  const reconnectErrors: Array<string | undefined> = [];
  c.on('server-state', (e) => {
    if (e.name === server && e.state === 'reconnecting') reconnectErrors.push(row(c, server).lastError);
  });
  return { removed, reconnectErrors };
}

/** Wait until `server` is connected again on a generation after `generation`. */
export async function waitNewGeneration(c: McpController, server: string, generation: number): Promise<void> {
  await waitFor(() => {
    const r = row(c, server);
    return r.state === 'connected' && r.generation > generation;
  }, `"${server}" to connect on a generation after ${generation}`);
}

/**
 * A server that turns bad once the test creates `marker`: `sh` runs `ifMarked` when the file exists
 * (else `otherwise`), then execs fixture `fixture`.
 */
export function markerSwitched(marker: string, fixture: string, ifMarked: string, otherwise = ':'): ServerConfig {
  return { command: 'sh', args: ['-c', `if [ -e "${marker}" ]; then ${ifMarked}; else ${otherwise}; fi; exec "${process.execPath}" "${fixturePath(fixture)}"`] };
}

/** PIDs of running processes whose command line contains `needle` (for "nothing was started" checks). */
export function processesMatching(needle: string): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (cmdline.includes(needle) && pidAlive(Number(entry))) out.push(Number(entry));
    } catch {
      // gone while we looked
    }
  }
  return out;
}

/** Run the CLI in-process and capture what it prints. */
export const cli = runCliCaptured;
