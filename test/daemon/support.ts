/**
 * Shared setup of the daemon tests: a gateway test workspace whose
 * environment also gives the daemon a private runtime directory inside it,
 * the built bin run as a subprocess (the daemon's build identity is the bin's,
 * so every client here must be the bin), and the daemon's status.
 */
import { execFile, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect } from 'vitest';
import type { DaemonStatus } from '../../src/daemon/protocol.js';
import { cliMain, Workspace } from '../gateway/support.js';
import { pidAlive, waitFor } from '../helpers/processes.js';

/** A workspace with its own XDG_RUNTIME_DIR (so its own daemon) and a daemon idle timeout. */
export class DaemonWorkspace extends Workspace {
  readonly runtime: string;
  constructor(private readonly daemonIdleMs = 600_000) {
    super();
    this.runtime = join(this.dir, 'run');
  }

  override env(): NodeJS.ProcessEnv {
    return { ...super.env(), XDG_RUNTIME_DIR: this.runtime, MCP_RECONCILER_DAEMON_IDLE_TIMEOUT: String(this.daemonIdleMs) };
  }

  /** Run the built bin with `args`; resolves with its exit code and output. */
  cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    return new Promise((resolve) => {
      execFile(process.execPath, [cliMain, ...args], { env: this.env(), cwd: this.root, timeout: 60_000 }, (err, stdout, stderr) => {
        const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
        resolve({ code, stdout, stderr });
      });
    });
  }

  /** The daemon's status, or undefined when none runs. */
  async status(): Promise<DaemonStatus | undefined> {
    const run = await this.cli(['status', '--shared', '--json']);
    return run.code === 0 ? (JSON.parse(run.stdout) as DaemonStatus) : undefined;
  }

  /** Marked processes running `mcp-reconciler daemon`. */
  daemonPids(): number[] {
    return this.markedPids().filter((pid) => cmdline(pid).includes('\0daemon'));
  }

  /** Stop the daemon (`daemon --stop`), wait until every marked process is gone, and clean up: how many were left. */
  async shutdown(): Promise<number> {
    await this.cli(['daemon', '--stop']);
    await waitFor(() => this.markedPids().length === 0, 'the daemon and its servers to exit', 20_000).catch(() => undefined);
    return this.cleanup();
  }
}

/**
 * A DaemonWorkspace for the enclosing describe block: after its tests `release` runs (closing
 * the block's clients), then the daemon is stopped and not one of its processes may be left.
 */
export function daemonWorkspace(release: () => unknown = () => undefined, daemonIdleMs?: number): DaemonWorkspace {
  const ws = new DaemonWorkspace(daemonIdleMs);
  afterAll(async () => {
    await release();
    expect(await ws.shutdown(), 'processes left behind').toBe(0);
  });
  return ws;
}

/** Close each SDK client session, one that is already gone included. */
export async function closeAll(sessions: ReadonlyArray<{ client: { close(): Promise<void> } }>): Promise<void> {
  for (const s of sessions) await s.client.close().catch(() => undefined);
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return '';
  }
}

/** `serve --stdio --shared` spoken to in raw JSON-RPC lines (a client we can SIGKILL). */
export class RawShim {
  readonly child: ChildProcessWithoutNullStreams;
  private out = '';
  stderr = '';
  constructor(ws: DaemonWorkspace, extra: string[] = []) {
    this.child = spawn(process.execPath, [cliMain, 'serve', '--stdio', '--shared', ...extra, ...ws.args()], { env: ws.env(), stdio: 'pipe' });
    this.child.stdout.setEncoding('utf8');
    this.child.stdout.on('data', (c: string) => (this.out += c));
    this.child.stderr.setEncoding('utf8');
    this.child.stderr.on('data', (c: string) => (this.stderr += c));
  }

  send(message: unknown): void {
    this.child.stdin.write(`${JSON.stringify(message)}\n`);
  }

  /** Wait for the answer to request `id`. */
  async answer(id: number): Promise<Record<string, unknown>> {
    let found: Record<string, unknown> | undefined;
    await waitFor(() => {
      for (const line of this.out.split('\n')) {
        if (!line.trim()) continue;
        const m = JSON.parse(line) as Record<string, unknown>;
        if (m.id === id) found = m;
      }
      return found !== undefined;
    }, `the answer to request ${id} (stderr: ${this.stderr})`, 60_000);
    return found!;
  }

  /** initialize + initialized. */
  async initialize(): Promise<void> {
    this.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
    await this.answer(1);
    this.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  }

  alive(): boolean {
    return this.child.pid !== undefined && pidAlive(this.child.pid);
  }
}
