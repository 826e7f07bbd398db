/**
 * The client side of the daemon's socket: find the daemon of this build,
 * start it when absent (detached, under a lock so two clients racing to
 * start it start one), and say hello.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, statSync } from 'node:fs';
import { createConnection, type Socket } from 'node:net';
import { ErrorCode, McpReconcilerError } from '../errors.js';
import { acquireFileLock } from '../util/file-lock.js';
import { checkPrivateDir, ensurePrivateDir, type DaemonPaths } from './paths.js';
import { DAEMON_PROTOCOL, readLine, writeLine, type DaemonHello, type DaemonWelcome } from './protocol.js';

/** How long a client waits for a daemon it started to listen. */
export const DAEMON_START_TIMEOUT_MS = 20_000;

/** A daemon process a client started: its pid, and whether it has exited (with its code). */
export interface SpawnedDaemon {
  pid: number | undefined;
  exited(): { code: number | null; signal: string | null } | undefined;
}

/**
 * Start the daemon of `bin` detached (its own session: a client's Ctrl-C or
 * exit does not reach it), with `env`, its output appended to the daemon log
 * (started afresh once it passed 1 MiB: a log must not grow for ever).
 */
export function spawnDetachedDaemon(paths: DaemonPaths, bin: string, env: NodeJS.ProcessEnv): SpawnedDaemon {
  ensurePrivateDir(paths.dir);
  let size = 0;
  try {
    size = statSync(paths.log).size;
  } catch {
    // no log yet
  }
  const log = openSync(paths.log, size > 1024 * 1024 ? 'w' : 'a', 0o600);
  let exit: { code: number | null; signal: string | null } | undefined;
  try {
    const child = spawn(process.execPath, [bin, 'daemon'], { detached: true, stdio: ['ignore', log, log], env, cwd: paths.dir });
    child.once('exit', (code, signal) => (exit = { code, signal }));
    child.once('error', (err) => (exit = { code: null, signal: err.message }));
    child.unref();
    return { pid: child.pid, exited: () => exit };
  } finally {
    closeSync(log);
  }
}

/** Connect to the unix socket at `path`; rejects with the errno error (ENOENT, ECONNREFUSED, …). */
export function connectSocket(path: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = createConnection(path);
    s.once('connect', () => {
      s.off('error', reject);
      resolve(s);
    });
    s.once('error', reject);
  });
}

/** Whether `err` means "no daemon listens there" (rather than a broken setup). */
function nobodyThere(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ECONNREFUSED';
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function logTail(file: string): string {
  try {
    const lines = readFileSync(file, 'utf8').trim().split('\n');
    return lines.slice(-5).join('\n');
  } catch {
    return '';
  }
}

/**
 * Connect to the daemon at `paths.socket`; when none answers and `spawn` is
 * given, start one with it (holding `paths.spawnLock`, and looking again
 * under the lock, so racing clients start one daemon between them) and wait
 * until it listens. Without `spawn`, rejects with a `connect_failed` error
 * saying no daemon runs.
 */
export async function connectDaemon(paths: DaemonPaths, spawn?: () => SpawnedDaemon, timeoutMs = DAEMON_START_TIMEOUT_MS): Promise<Socket> {
  if (existsSync(paths.dir)) checkPrivateDir(paths.dir);
  try {
    return await connectSocket(paths.socket);
  } catch (err) {
    if (!nobodyThere(err) || !spawn) throw notRunning(paths, err);
  }
  ensurePrivateDir(paths.dir);
  const release = await acquireFileLock(paths.spawnLock, { timeoutMs: timeoutMs + 5_000, staleMs: timeoutMs + 5_000 });
  try {
    try {
      return await connectSocket(paths.socket);
    } catch (err) {
      if (!nobodyThere(err)) throw notRunning(paths, err);
    }
    const child = spawn();
    const deadline = Date.now() + timeoutMs;
    for (let delay = 10; ; delay = Math.min(delay * 2, 100)) {
      try {
        return await connectSocket(paths.socket);
      } catch (err) {
        if (!nobodyThere(err)) throw notRunning(paths, err);
      }
      const exit = child.exited();
      if (exit) {
        const tail = logTail(paths.log);
        throw new McpReconcilerError(ErrorCode.ConnectFailed, `the mcp-reconciler daemon exited at its start (${exit.signal ?? `code ${exit.code}`})${tail ? `:\n${tail}` : ''}`, {
          hint: `see ${paths.log}; run \`mcp-reconciler daemon\` in a terminal to see why`,
        });
      }
      if (Date.now() > deadline) {
        throw new McpReconcilerError(ErrorCode.ConnectFailed, `the mcp-reconciler daemon (pid ${child.pid}) did not listen on ${paths.socket} within ${timeoutMs} ms`, {
          hint: `see ${paths.log}`,
        });
      }
      await sleep(delay);
    }
  } finally {
    await release();
  }
}

function notRunning(paths: DaemonPaths, cause: unknown): McpReconcilerError {
  const code = (cause as NodeJS.ErrnoException).code;
  return new McpReconcilerError(ErrorCode.ConnectFailed, nobodyThere(cause) ? `no mcp-reconciler daemon is running (${paths.socket})` : `cannot reach the mcp-reconciler daemon at ${paths.socket}: ${code ?? String(cause)}`, {
    hint: 'it starts with the first `mcp-reconciler serve --stdio --shared`, or run `mcp-reconciler daemon`',
    cause,
  });
}

/**
 * Send `hello` on a connected socket and read the welcome. A refusal
 * (another build, a bad request) rejects with its message and hint.
 */
export async function greet(socket: Socket, hello: DaemonHello): Promise<Extract<DaemonWelcome, { ok: true }>> {
  writeLine(socket, hello);
  let welcome: DaemonWelcome;
  try {
    welcome = JSON.parse(await readLine(socket)) as DaemonWelcome;
  } catch (err) {
    socket.destroy();
    throw new McpReconcilerError(ErrorCode.ConnectFailed, `the mcp-reconciler daemon closed the connection during the handshake: ${(err as Error).message}`, {
      hint: 'it may be stopping (idle); try again',
      cause: err,
    });
  }
  if (!welcome.ok) {
    socket.destroy();
    const code = welcome.exitCode === 2 ? ErrorCode.Usage : ErrorCode.ConnectFailed;
    throw new McpReconcilerError(code, welcome.message, welcome.hint ? { hint: welcome.hint } : {});
  }
  if (welcome.build !== hello.build) {
    // Never serve a session through a daemon of another build, even one that did not check.
    socket.destroy();
    throw new McpReconcilerError(ErrorCode.ConnectFailed, `the daemon at this socket is mcp-reconciler ${welcome.version} (build ${welcome.build}, pid ${welcome.pid}), not this build (${hello.build})`, {
      hint: 'stop it with `mcp-reconciler daemon --stop` run from its own installation, or kill that pid; the next session starts a daemon of this build',
    });
  }
  return welcome;
}

/** A hello of kind `kind` (status or stop) for this build. */
export function controlHello(build: string, kind: 'status' | 'stop'): DaemonHello {
  return { protocol: DAEMON_PROTOCOL, build, kind, pid: process.pid };
}
