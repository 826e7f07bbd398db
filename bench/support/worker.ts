/**
 * Runner ↔ worker plumbing. Each measurement runs in fresh Node processes
 * (workers) so that the two sides of a comparison start from the same state
 * and a process's own RSS is the manager's own memory. A worker is the
 * measurement's own compiled file, forked with `--worker <json params>`; it
 * talks to the runner over the IPC channel.
 */
import { fork, spawnSync, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { benchEnv, killMarked, killMarkedSync, RUN_MARKER, WORKER_MARKER } from './proc.js';

/** A message between runner and worker. */
export interface WorkerMessage {
  type: string;
  data?: unknown;
}

/** What a worker body can use to talk to the runner. */
export interface WorkerIO {
  /** Send a message to the runner. */
  send(type: string, data?: unknown): void;
  /** Resolve with the data of the next runner message of `type`. */
  receive(type: string): Promise<unknown>;
}

/** Options of {@link Workers.start}. */
export interface StartOptions {
  /** Node flags for the worker (`--expose-gc`, `--cpu-prof`, …). */
  execArgv?: string[];
  /** The worker is killed (and the measurement fails) after this long. */
  timeoutMs: number;
}

/** A running worker as the runner sees it. */
export interface WorkerHandle<R> {
  readonly id: string;
  /** The body's return value; rejects when the worker fails, dies or times out. */
  readonly result: Promise<R>;
  /** Resolve with the data of the next worker message of `type`. */
  receive(type: string): Promise<unknown>;
  send(type: string, data?: unknown): void;
}

class Inbox {
  private readonly queued: WorkerMessage[] = [];
  private readonly waiting: Array<{ type: string; resolve: (data: unknown) => void; reject: (err: Error) => void }> = [];
  private failure: Error | undefined;

  push(msg: WorkerMessage): void {
    const i = this.waiting.findIndex((w) => w.type === msg.type);
    if (i >= 0) this.waiting.splice(i, 1)[0]!.resolve(msg.data);
    else this.queued.push(msg);
  }

  fail(err: Error): void {
    this.failure = err;
    for (const w of this.waiting.splice(0)) w.reject(err);
  }

  next(type: string): Promise<unknown> {
    const i = this.queued.findIndex((m) => m.type === type);
    if (i >= 0) return Promise.resolve(this.queued.splice(i, 1)[0]!.data);
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => this.waiting.push({ type, resolve, reject }));
  }
}

/**
 * Starts workers for one benchmark run and guarantees their cleanup: after a
 * worker ends (or is killed), every process carrying its marker is killed;
 * {@link stopAll} does the same for the whole run.
 */
export class Workers {
  private seq = 0;
  private readonly live = new Map<string, ChildProcess>();
  /** Processes a worker left behind after it ended, by worker id (should stay empty). */
  readonly leaks: Record<string, number> = {};
  /** Failed runs that were repeated, with their errors (see {@link run}). */
  readonly retried: string[] = [];

  constructor(readonly runId: string) {}

  /** Fork `script` (a compiled measurement file) as a worker with `params`. */
  start<R>(script: string, params: unknown, options: StartOptions): WorkerHandle<R> {
    const id = `${this.runId}-${++this.seq}`;
    const child = fork(script, ['--worker', JSON.stringify(params)], {
      env: benchEnv({ [RUN_MARKER]: this.runId, [WORKER_MARKER]: id }),
      execArgv: options.execArgv ?? [],
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    this.live.set(id, child);
    let output = '';
    const keep = (chunk: Buffer): void => {
      output = (output + chunk.toString('utf8')).slice(-8_000);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    const inbox = new Inbox();
    let outcome: { ok: true; data: R } | { ok: false; error: Error } | undefined;
    child.on('message', (msg: WorkerMessage) => {
      if (msg.type === 'result') outcome ??= { ok: true, data: msg.data as R };
      else if (msg.type === 'error') {
        const stack = (msg.data as { stack?: string } | undefined)?.stack ?? String(msg.data);
        outcome ??= { ok: false, error: new Error(`worker ${script} failed: ${stack}`) };
      } else inbox.push(msg);
    });
    const timer = setTimeout(() => {
      outcome ??= { ok: false, error: new Error(`worker ${script} timed out after ${options.timeoutMs} ms`) };
      child.kill('SIGKILL');
    }, options.timeoutMs);

    // Settled only after the worker is gone ('close': its IPC channel is drained too)
    // and whatever it left behind is killed, so the next run starts on a quiet machine.
    const result = new Promise<R>((resolve, reject) => {
      child.once('close', (code, signal) => {
        clearTimeout(timer);
        this.live.delete(id);
        void killMarked(WORKER_MARKER, id).then((n) => {
          if (n > 0) this.leaks[id] = n;
          const final = outcome ?? { ok: false, error: new Error(`worker ${script} exited (code ${code}, signal ${signal}) without a result\n${output}`) };
          inbox.fail(final.ok ? new Error(`worker ${script} has ended`) : final.error);
          if (final.ok) resolve(final.data);
          else reject(final.error);
        });
      });
    });
    result.catch(() => undefined);
    return {
      id,
      result,
      receive: (type) => inbox.next(type),
      send: (type, data) => {
        if (child.connected) child.send({ type, data });
      },
    };
  }

  /**
   * Start a worker and wait for its result; a failed run is repeated once and
   * recorded in {@link retried} (on a shared machine a concurrent rebuild of
   * `dist/` can break one server start). A second failure is thrown.
   */
  async run<R>(script: string, params: unknown, options: StartOptions): Promise<R> {
    try {
      return await this.start<R>(script, params, options).result;
    } catch (err) {
      this.retried.push(err instanceof Error ? err.message.split('\n')[0]! : String(err));
      return this.start<R>(script, params, options).result;
    }
  }

  /** Kill every worker still running and everything any process of this run started; returns how many were found. */
  async stopAll(): Promise<number> {
    for (const child of this.live.values()) child.kill('SIGKILL');
    return killMarked(RUN_MARKER, this.runId);
  }

  /** Synchronous variant for `exit` and signal handlers. */
  stopAllSync(): void {
    for (const child of this.live.values()) child.kill('SIGKILL');
    killMarkedSync(RUN_MARKER, this.runId);
  }
}

/**
 * Run `body` when this module was started as a worker (`node file.js --worker
 * <json>`); otherwise do nothing, so the runner can import the same file for
 * its orchestration half. The body's return value is sent as `result`; a
 * throw is sent as `error`. The process exits afterwards.
 */
export function runAsWorker<P, R>(moduleUrl: string, body: (params: P, io: WorkerIO) => Promise<R>): void {
  if (process.argv[1] !== fileURLToPath(moduleUrl) || process.argv[2] !== '--worker') return;
  const inbox = new Inbox();
  process.on('message', (msg: WorkerMessage) => inbox.push(msg));
  // The runner is gone: exit, so the 'exit' hooks (the controller's process
  // tracker) kill what this worker started.
  process.on('disconnect', () => process.exit(1));
  const io: WorkerIO = {
    send: (type, data) => process.send?.({ type, data }),
    receive: (type) => inbox.next(type),
  };
  const finish = (msg: WorkerMessage, code: number): void => {
    if (!process.send) process.exit(code);
    process.send(msg, () => process.exit(code));
  };
  const params = JSON.parse(process.argv[3] ?? '{}') as P;
  body(params, io).then(
    (data) => finish({ type: 'result', data }, 0),
    (err: unknown) => finish({ type: 'error', data: { stack: err instanceof Error ? (err.stack ?? err.message) : String(err) } }, 1),
  );
}

/**
 * For the standalone scripts (bench/start-allocation.ts, bench/client-update.ts):
 * run `script` with `args` in a fresh Node process with {@link benchEnv} and
 * parse the JSON it prints; a failed run throws with its stderr.
 */
export function runJsonWorker<T>(script: string, args: string[], label: string): T {
  const r = spawnSync(process.execPath, [script, ...args], { encoding: 'utf8', env: benchEnv({}), timeout: 300_000 });
  if (r.status !== 0) throw new Error(`${label} worker failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}
