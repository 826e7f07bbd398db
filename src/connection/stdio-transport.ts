/**
 * A stdio client transport that spawns its server detached (a process-group
 * leader) through a {@link ProcessTracker}. The SDK's `StdioClientTransport`
 * cannot spawn detached, so it could not kill a server started by a launcher.
 * It is stdio-shaped for the SDK (`pid` and `stderr`), so the v2 client's
 * protocol probe runs in place on this one child: no sibling process is
 * spawned just to ask `server/discover` (docs/protocol.md).
 */
import type { ChildProcess } from 'node:child_process';
import { statSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import type { Readable } from 'node:stream';
import { serializeMessage, type JSONRPCMessage, type Transport } from '@modelcontextprotocol/client';
import { ErrorCode, McpReconcilerError } from '../errors.js';
import { drainMessages } from '../util/drain-messages.js';
import { MessageLines } from './message-lines.js';
import type { ProcessTracker } from './processes.js';

/** Options of a {@link StdioProcessTransport}. */
export interface StdioProcessTransportOptions {
  command: string;
  args?: readonly string[];
  /** The complete child environment (already scrubbed, see `childEnv`). */
  env: Record<string, string>;
  cwd: string;
  tracker: ProcessTracker;
  /** How much of the child's stderr to keep, in characters. Default 8192. */
  stderrLimit?: number;
  /** Called once the child runs (its `spawn` event), with its PID. */
  onSpawn?: (pid: number) => void;
  /** Every chunk the child writes to stderr (the server's log), besides the kept tail. */
  onStderr?: (chunk: Buffer) => void;
  /** Called once, at the child's first answer to a request (a result or an error): its start is over. */
  onAnswer?: (message: JSONRPCMessage) => void;
}

const DEFAULT_STDERR_LIMIT = 8 * 1024;
/** How much stderr goes into an error message. */
const STDERR_IN_MESSAGE = 2_000;

/** The last `limit` characters written to a stream, decoded as UTF-8. */
class TailBuffer {
  private text = '';
  private readonly decoder = new StringDecoder('utf8');
  constructor(private readonly limit: number) {}
  push(chunk: Buffer): void {
    this.text += this.decoder.write(chunk);
    if (this.text.length > this.limit) this.text = this.text.slice(-this.limit);
  }
  toString(): string {
    return this.text;
  }
}

function spawnError(command: string, err: NodeJS.ErrnoException): McpReconcilerError {
  if (err.code === 'ENOENT') {
    return new McpReconcilerError(ErrorCode.ConnectFailed, `command not found: "${command}" (spawn ENOENT)`, {
      hint: `Install "${command}" or fix "command" in the server config; it is looked up on PATH.`,
      details: { command, errno: err.code },
      cause: err,
    });
  }
  if (err.code === 'EACCES') {
    return new McpReconcilerError(ErrorCode.ConnectFailed, `command "${command}" is not executable (EACCES)`, {
      hint: `Check the file's permissions or point "command" at the right program.`,
      details: { command, errno: err.code },
      cause: err,
    });
  }
  return new McpReconcilerError(ErrorCode.ConnectFailed, `could not start "${command}": ${err.message}`, {
    details: { command, errno: err.code },
    cause: err,
  });
}

/**
 * MCP client transport over a child process's stdin/stdout. `onerror` reports
 * the exit (code or signal, plus the stderr tail) before `onclose` when the
 * child ends on its own; `close()` kills the whole process group and is
 * idempotent.
 */
export class StdioProcessTransport implements Transport {
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: (<T extends JSONRPCMessage>(message: T) => void) | undefined;

  private readonly options: StdioProcessTransportOptions;
  private onAnswer: ((message: JSONRPCMessage) => void) | undefined;
  private readonly readBuffer = new MessageLines();
  private readonly stderrBuffer: TailBuffer;
  private child: ChildProcess | undefined;
  private exit: { code: number | null; signal: NodeJS.Signals | null; byUs: boolean } | undefined;
  private closing = false;
  private closePromise: Promise<void> | undefined;
  private finished = false;

  constructor(options: StdioProcessTransportOptions) {
    this.options = options;
    this.onAnswer = options.onAnswer;
    this.stderrBuffer = new TailBuffer(options.stderrLimit ?? DEFAULT_STDERR_LIMIT);
  }

  /** PID of the child (the group leader), once spawned. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /**
   * The child's stderr stream (null before spawn). Also what makes the SDK
   * treat this transport as stdio: a probe timeout then means a 2025-era
   * server, not an outage.
   */
  get stderr(): Readable | null {
    return this.child?.stderr ?? null;
  }

  /** The last few KB the child wrote to stderr. */
  stderrTail(): string {
    return this.stderrBuffer.toString();
  }

  /** "exited with code 1; stderr: …" once the child has exited on its own, else undefined. */
  exitDescription(): string | undefined {
    if (!this.exit || this.exit.byUs) return undefined;
    const { code, signal } = this.exit;
    const how = signal ? `was killed by ${signal}` : `exited with code ${code ?? 'unknown'}`;
    const tail = this.stderrBuffer.toString().trim();
    const shown = tail.length > STDERR_IN_MESSAGE ? `…${tail.slice(-STDERR_IN_MESSAGE)}` : tail;
    return `process "${this.options.command}" ${how}${shown ? `; stderr: ${shown}` : ' (no stderr output)'}`;
  }

  /** Spawn the child; resolves once it is running, rejects with a clear message when it cannot start. */
  start(): Promise<void> {
    if (this.child || this.closing) return Promise.reject(new Error('StdioProcessTransport already started'));
    const { command, args = [], env, cwd, tracker } = this.options;
    try {
      if (!statSync(cwd).isDirectory()) throw new Error('not a directory');
    } catch {
      return Promise.reject(
        new McpReconcilerError(ErrorCode.ConnectFailed, `working directory "${cwd}" does not exist or is not a directory`, {
          hint: 'Fix "cwd" in the server config (a relative cwd is resolved against the workspace root).',
          details: { cwd },
        }),
      );
    }
    return new Promise<void>((resolve, reject) => {
      let child: ChildProcess;
      try {
        child = tracker.spawn(command, args, { env, cwd });
      } catch (err) {
        reject(err);
        return;
      }
      this.child = child;
      let spawned = false;
      child.once('spawn', () => {
        spawned = true;
        if (child.pid !== undefined) {
          try {
            this.options.onSpawn?.(child.pid);
          } catch {
            // an observer's failure is not the server's
          }
        }
        resolve();
      });
      child.on('error', (err: NodeJS.ErrnoException) => {
        if (!spawned) {
          reject(spawnError(command, err));
          this.finish(undefined);
        } else {
          this.onerror?.(err);
        }
      });
      child.stdout?.on('data', (chunk: Buffer) => this.onStdout(chunk));
      child.stderr?.on('data', (chunk: Buffer) => {
        this.stderrBuffer.push(chunk);
        this.options.onStderr?.(chunk);
      });
      // EPIPE after the child died: reported through exit/close, not as a crash.
      child.stdin?.on('error', () => {});
      child.stdout?.on('error', () => {});
      child.stderr?.on('error', () => {});
      child.once('exit', (code, signal) => {
        this.exit = { code, signal, byUs: this.closing };
        if (this.closing || child.pid === undefined) return;
        // The leader is gone; whatever it started must not outlive it.
        void tracker.killTree(child.pid).then(() => {
          child.stdout?.destroy();
          child.stderr?.destroy();
        });
      });
      child.once('close', () => {
        this.finish(this.closing ? undefined : new Error(this.exitDescription() ?? `process "${command}" closed its output`));
      });
    });
  }

  /** Write one message to the child's stdin. */
  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin;
    if (!stdin || !stdin.writable || this.closing || this.exit) return Promise.reject(new Error('Not connected'));
    return new Promise<void>((resolve, reject) => {
      stdin.write(serializeMessage(message), (err) => (err ? reject(err) : resolve()));
    });
  }

  /** Kill the child's process group (stdin end, SIGTERM, SIGKILL) and fire `onclose`. Idempotent. */
  close(): Promise<void> {
    this.closePromise ??= (async () => {
      this.closing = true;
      const child = this.child;
      if (child?.pid !== undefined) {
        await this.options.tracker.killTree(child.pid);
        // A member that escaped the group could still hold the pipes open.
        child.stdout?.destroy();
        child.stderr?.destroy();
      }
      this.finish(undefined);
    })();
    return this.closePromise;
  }

  private onStdout(chunk: Buffer): void {
    try {
      this.readBuffer.append(chunk);
    } catch (err) {
      this.onerror?.(err as Error);
      void this.close();
      return;
    }
    drainMessages(
      this.readBuffer,
      (m) => {
        if (this.onAnswer && ('result' in m || 'error' in m)) {
          const answered = this.onAnswer;
          this.onAnswer = undefined;
          answered(m);
        }
        this.onmessage?.(m);
      },
      (err) => this.onerror?.(err),
    );
  }

  private finish(error: Error | undefined): void {
    if (this.finished) return;
    this.finished = true;
    this.readBuffer.clear();
    if (error) this.onerror?.(error);
    this.onclose?.();
  }
}
