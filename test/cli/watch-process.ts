/**
 * `mcp-reconciler watch` as a subprocess of the built binary with NDJSON
 * output, for tests that talk to a running watch from another process.
 */
import { execFile, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { cliBin as cliMain } from '../helpers/fixtures.js';
import { descendantsOf, pidAlive, waitFor } from '../helpers/processes.js';

/** The built CLI entry point (`npm run build` first). */
export { cliMain };

/** One NDJSON line of the watch. */
export interface Line {
  event: string;
  [key: string]: unknown;
}

/** A running `watch` with its parsed stdout lines. */
export class WatchProcess {
  readonly child: ChildProcessWithoutNullStreams;
  readonly lines: Line[] = [];
  stderr = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Every process ever seen under the watch, for the no-orphans check. */
  readonly seen = new Set<number>();

  constructor(argv: string[], env: NodeJS.ProcessEnv) {
    this.child = spawn(process.execPath, [cliMain, 'watch', ...argv], { env, stdio: 'pipe' });
    let buf = '';
    this.child.stdout.setEncoding('utf8');
    this.child.stdout.on('data', (chunk: string) => {
      buf += chunk;
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const text = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (text.trim() !== '') this.lines.push(JSON.parse(text) as Line);
      }
      this.record();
    });
    this.child.stderr.setEncoding('utf8');
    this.child.stderr.on('data', (s: string) => (this.stderr += s));
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve({ code, signal })));
  }

  /** Remember the watch's current descendants. */
  record(): void {
    if (this.child.pid !== undefined && this.child.exitCode === null) for (const p of descendantsOf(this.child.pid)) this.seen.add(p);
  }

  /** Wait for a line after index `from` that matches, and return it. */
  async next(match: (l: Line) => boolean, what: string, from = 0, timeoutMs = 30_000): Promise<Line> {
    let found: Line | undefined;
    await waitFor(
      () => (found = this.lines.slice(from).find(match)) !== undefined || this.child.exitCode !== null,
      `${what} (stderr: ${this.stderr.slice(-500)})`,
      timeoutMs,
    );
    if (!found) throw new Error(`watch exited before ${what}: ${this.stderr}`);
    return found;
  }

  /** Stop with SIGINT (like Ctrl-C) and return how it exited. */
  async stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    this.record();
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGINT');
    return this.exited;
  }

  /** Kill whatever is left (after a failed test), then wait until every process seen is gone. */
  async cleanup(): Promise<number[]> {
    this.record();
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill('SIGKILL');
      await this.exited;
    }
    for (const pid of [...this.seen].filter(pidAlive)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    const seen = [...this.seen];
    await waitFor(() => seen.every((p) => !pidAlive(p)), 'every process of the watch to exit', 5_000).catch(() => undefined);
    return seen.filter(pidAlive);
  }
}

/** Run the built CLI once and capture its output and exit code. */
export function runBinary(argv: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [cliMain, ...argv], { env, timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      done({ code, stdout, stderr });
    });
  });
}
