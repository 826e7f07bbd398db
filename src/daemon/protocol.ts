/**
 * The daemon's socket protocol. A connection opens with one JSON line from
 * the client (a {@link DaemonHello}) and one back from the daemon (a
 * {@link DaemonWelcome}); after a `session` welcome the connection carries
 * MCP (newline-delimited JSON-RPC, as over stdio) until either side closes.
 * `status` and `stop` connections end after the welcome.
 */
import type { Socket } from 'node:net';

/** How long a daemon with no session stays up by default: as long as an unused gateway server (GATEWAY_IDLE_TIMEOUT_MS). */
export const DAEMON_IDLE_TIMEOUT_MS = 300_000;

/** Environment variable with the idle timeout in ms of a daemon a client starts (it inherits the client's environment). */
export const DAEMON_IDLE_ENV = 'MCP_RECONCILER_DAEMON_IDLE_TIMEOUT';

/** Bumped when the hello or welcome changes shape. */
export const DAEMON_PROTOCOL = 1;

/**
 * How the shim describes its session: the command line it was given (parsed
 * option values, minus `--shared`), its working directory and environment,
 * so the daemon resolves the workspace exactly as `serve --stdio` would.
 */
export interface SessionRequest {
  /** Parsed option values of `serve` (global ones included). */
  values: Record<string, unknown>;
  /** The shim's resolved global options (paths absolute), its preset by name. */
  global: Record<string, unknown> & { preset: string };
  /** The shim's working directory (relative paths resolve against it). */
  cwd: string;
  env: Record<string, string | undefined>;
}

/** The first line a client sends. */
export type DaemonHello =
  | { protocol: number; build: string; kind: 'session'; pid: number; session: SessionRequest }
  | { protocol: number; build: string; kind: 'status' | 'stop'; pid: number };

/** The daemon's answer. `ok: false` ends the connection; `message` and `hint` are for the user. */
export type DaemonWelcome =
  | { ok: true; build: string; version: string; pid: number; workspace?: string; status?: DaemonStatus }
  | { ok: false; build: string; version: string; pid: number; message: string; hint?: string; exitCode?: number };

/** One session as `status --shared` shows it. */
export interface DaemonSessionInfo {
  id: string;
  /** The shim's process id (as it said in its hello). */
  pid: number;
  /** The MCP client's name and version from its `initialize`, once known. */
  client?: string;
  /** The servers it may use; absent for every server. */
  servers?: string[];
  /** Epoch ms. */
  since: number;
}

/** One workspace (controller) of the daemon. */
export interface DaemonWorkspaceInfo {
  key: string;
  root: string;
  sessions: DaemonSessionInfo[];
  servers: { name: string; state: string; pid?: number; heldBy: string[] }[];
}

/** What `status --shared` prints. */
export interface DaemonStatus {
  pid: number;
  build: string;
  version: string;
  socket: string;
  startedAt: number;
  idleTimeoutMs: number;
  workspaces: DaemonWorkspaceInfo[];
}

/** Largest hello or welcome line (the shim's environment travels in it). */
export const MAX_HANDSHAKE_BYTES = 1024 * 1024;

/**
 * Read one line from `socket` and stop reading; bytes after it are pushed
 * back (`unshift`) for whoever reads next. Rejects when the socket ends
 * first, or the line grows past {@link MAX_HANDSHAKE_BYTES}.
 */
export function readLine(socket: Socket): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (err: Error | undefined, line?: string, rest?: Buffer): void => {
      socket.off('data', onData);
      socket.off('end', onEnd);
      socket.off('close', onEnd);
      socket.off('error', onError);
      socket.pause();
      if (rest && rest.length > 0) socket.unshift(rest);
      if (err) reject(err);
      else resolve(line!);
    };
    const onData = (chunk: Buffer): void => {
      const nl = chunk.indexOf(0x0a);
      if (nl < 0) {
        chunks.push(chunk);
        size += chunk.length;
        if (size > MAX_HANDSHAKE_BYTES) done(new Error('handshake line too long'));
        return;
      }
      chunks.push(chunk.subarray(0, nl));
      done(undefined, Buffer.concat(chunks).toString('utf8'), chunk.subarray(nl + 1));
    };
    const onEnd = (): void => done(new Error('the connection closed during the handshake'));
    const onError = (err: Error): void => done(err);
    socket.on('data', onData);
    socket.once('end', onEnd);
    socket.once('close', onEnd);
    socket.once('error', onError);
  });
}

/** Write one JSON line. */
export function writeLine(socket: Socket, message: unknown): void {
  socket.write(`${JSON.stringify(message)}\n`);
}
