/**
 * The daemon: one process per user and build that serves MCP sessions over
 * a unix socket, with one controller and server pool per workspace, so N
 * sessions of one workspace share one process per server (docs/daemon.md).
 *
 * Sessions keep their own scopes (the pool's); admission stays with the
 * workspace's controller, so the approval gate is checked here, in the
 * daemon, before any session's hold starts a server, and OAuth sign-in and
 * token refresh happen in this one process. A session ends when its
 * connection closes, however its client went (a SIGKILLed shim closes its
 * socket too): its holds are released and the servers' idle timeout applies.
 * With no session left for the idle timeout, the daemon exits.
 */
import { randomUUID } from 'node:crypto';
import { rmSync, chmodSync } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import type { McpController } from '../controller/controller.js';
import { describeError, ErrorCode, McpReconcilerError } from '../errors.js';
import type { GatewayPool } from '../gateway/pool.js';
import { inScope, type SessionScope } from '../gateway/scope.js';
import { serveStdio, type StdioGateway } from '../gateway/stdio.js';
import { withFileLock } from '../util/file-lock.js';
import { ensurePrivateDir, type BuildIdentity, type DaemonPaths } from './paths.js';
import { DAEMON_IDLE_TIMEOUT_MS, DAEMON_PROTOCOL, readLine, writeLine, type DaemonHello, type DaemonSessionInfo, type DaemonStatus, type DaemonWelcome, type SessionRequest } from './protocol.js';

export { DAEMON_IDLE_TIMEOUT_MS };

/** How long a client gets to send its hello. */
const HELLO_TIMEOUT_MS = 10_000;

/** One workspace's controller and pool, as the daemon's owner builds them. */
export interface DaemonWorkspace {
  controller: McpController;
  pool: GatewayPool;
  /** Close the pool and dispose the controller (servers stop). */
  dispose(): Promise<void>;
}

/** A session request resolved by the daemon's owner (the CLI): which workspace, which scope. */
export interface ResolvedSession {
  /** Sessions with the same key share one workspace (controller and pool). */
  key: string;
  /** The workspace root, for status. */
  root: string;
  scope: SessionScope;
  callTimeoutMs?: number;
  /** Build the workspace; called for the first session of `key` only. */
  create(): Promise<DaemonWorkspace>;
}

/** Options of {@link startDaemon}. */
export interface DaemonOptions {
  paths: DaemonPaths;
  build: BuildIdentity;
  /** Exit after this long with no session (and dispose a workspace after this long without one). */
  idleTimeoutMs?: number;
  /** Turn a shim's request into a workspace key and scope; throw an {@link McpReconcilerError} to refuse it. */
  resolve(request: SessionRequest): ResolvedSession;
  log(line: string): void;
}

/** A running daemon. */
export interface Daemon {
  status(): DaemonStatus;
  /** Resolves once the daemon closed (idle, `stop`, or {@link close}). */
  readonly closed: Promise<void>;
  /** Stop listening, end every session, dispose every workspace. Idempotent. */
  close(): Promise<void>;
}

interface LiveSession {
  info: DaemonSessionInfo;
  gateway: StdioGateway;
  socket: Socket;
  /** The session's scope, from the daemon's own resolution (the gateway's lanes each keep a copy). */
  scope: SessionScope | undefined;
}

interface LiveWorkspace {
  key: string;
  root: string;
  ready: Promise<DaemonWorkspace>;
  sessions: Map<string, LiveSession>;
  idle: NodeJS.Timeout | undefined;
}

/** Whether something accepts connections on `socket` now. */
export function socketAnswers(socket: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection(socket);
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/**
 * Start the daemon on `paths.socket`. Resolves to `undefined` when another
 * daemon already answers there (the caller exits quietly: one is enough).
 */
export async function startDaemon(options: DaemonOptions): Promise<Daemon | undefined> {
  const { paths, build, log } = options;
  const idleMs = options.idleTimeoutMs ?? DAEMON_IDLE_TIMEOUT_MS;
  ensurePrivateDir(paths.dir);
  const workspaces = new Map<string, LiveWorkspace>();
  const sockets = new Set<Socket>();
  const startedAt = Date.now();
  let closing: Promise<void> | undefined;
  let idleTimer: NodeJS.Timeout | undefined;
  let resolveClosed!: () => void;
  const closed = new Promise<void>((resolve) => (resolveClosed = resolve));

  const sessionCount = (): number => [...workspaces.values()].reduce((n, w) => n + w.sessions.size, 0);

  const status = (): DaemonStatus => ({
    pid: process.pid,
    build: build.id,
    version: build.version,
    socket: paths.socket,
    startedAt,
    idleTimeoutMs: idleMs,
    workspaces: [...workspaces.values()].map((w) => {
      const sessions = [...w.sessions.values()];
      const controller = settled.get(w.key)?.controller;
      return {
        key: w.key,
        root: w.root,
        sessions: sessions.map((s) => {
          // Only the 2025 lane has a handshake naming the client.
          const client = s.gateway.session?.server.getClientVersion();
          return { ...s.info, ...(client ? { client: `${client.name} ${client.version}` } : {}) };
        }),
        servers: (controller?.status() ?? [])
          .filter((r) => r.state !== 'removed')
          .map((r) => ({
            name: r.name,
            state: r.state,
            ...(r.pid !== undefined ? { pid: r.pid } : {}),
            heldBy: sessions.filter((s) => inScope(s.scope, r.name)).map((s) => s.info.id),
          })),
      };
    }),
  });
  /** Workspaces whose controller exists, for status (which must not wait). */
  const settled = new Map<string, DaemonWorkspace>();

  const welcome = (extra: Partial<DaemonWelcome> & { ok: boolean }): DaemonWelcome =>
    ({ build: build.id, version: build.version, pid: process.pid, ...extra }) as DaemonWelcome;

  const armIdle = (): void => {
    clearTimeout(idleTimer);
    idleTimer = undefined;
    if (closing || sessionCount() > 0) return;
    idleTimer = setTimeout(() => {
      if (sessionCount() === 0) {
        log(`no session for ${idleMs} ms: exiting`);
        void close();
      }
    }, idleMs);
  };

  const disposeWorkspace = async (w: LiveWorkspace): Promise<void> => {
    workspaces.delete(w.key);
    settled.delete(w.key);
    clearTimeout(w.idle);
    const ws = await w.ready.catch(() => undefined);
    await ws?.dispose().catch((err: unknown) => log(`disposing workspace ${w.root}: ${describeError(err)}`));
  };

  const openSession = async (socket: Socket, hello: Extract<DaemonHello, { kind: 'session' }>): Promise<void> => {
    let resolved: ResolvedSession;
    try {
      resolved = options.resolve(hello.session);
    } catch (err) {
      const usage = err instanceof McpReconcilerError && [ErrorCode.Usage, ErrorCode.ConfigInvalid, ErrorCode.ConfigUnsetVariable].includes(err.code as never);
      writeLine(socket, welcome({ ok: false, message: describeError(err), ...(err instanceof McpReconcilerError && err.hint ? { hint: err.hint } : {}), exitCode: usage ? 2 : 1 }));
      socket.end();
      return;
    }
    let w = workspaces.get(resolved.key);
    if (!w) {
      const live: LiveWorkspace = { key: resolved.key, root: resolved.root, sessions: new Map(), idle: undefined, ready: resolved.create() };
      w = live;
      workspaces.set(resolved.key, live);
      live.ready.then(
        (ws) => settled.set(live.key, ws),
        (err: unknown) => {
          log(`workspace ${live.root} did not start: ${describeError(err)}`);
          workspaces.delete(live.key);
        },
      );
      log(`workspace ${resolved.root} opened`);
    }
    clearTimeout(w.idle);
    w.idle = undefined;
    let ws: DaemonWorkspace;
    try {
      ws = await w.ready;
    } catch (err) {
      writeLine(socket, welcome({ ok: false, message: `the workspace ${resolved.root} could not be opened: ${describeError(err)}`, exitCode: 1 }));
      socket.end();
      return;
    }
    if (closing || socket.destroyed) {
      socket.destroy();
      return;
    }
    writeLine(socket, welcome({ ok: true, workspace: resolved.key }));
    const gateway = await serveStdio(ws.pool, {
      stdin: socket,
      stdout: socket,
      ...(resolved.scope !== undefined ? { scope: resolved.scope } : {}),
      ...(resolved.callTimeoutMs !== undefined ? { callTimeoutMs: resolved.callTimeoutMs } : {}),
    });
    // readLine paused the socket; the transport's data listener alone would not resume it.
    socket.resume();
    // The 2025 lane names its session only after the client's `initialize`; the daemon's own id is known now.
    const id = randomUUID();
    const info: DaemonSessionInfo = { id, pid: hello.pid, since: Date.now(), ...(resolved.scope ? { servers: [...resolved.scope].sort() } : {}) };
    const workspace = w;
    workspace.sessions.set(id, { info, gateway, socket, scope: resolved.scope });
    clearTimeout(idleTimer);
    idleTimer = undefined;
    log(`session ${id} (pid ${hello.pid}) opened on ${workspace.root}`);
    void gateway.closed.then(() => {
      socket.destroy();
      if (!workspace.sessions.delete(id)) return;
      log(`session ${id} (pid ${hello.pid}) closed`);
      if (workspace.sessions.size === 0 && workspaces.get(workspace.key) === workspace) {
        workspace.idle = setTimeout(() => {
          if (workspace.sessions.size === 0 && workspaces.get(workspace.key) === workspace) {
            log(`workspace ${workspace.root} unused for ${idleMs} ms: stopping its servers`);
            void disposeWorkspace(workspace);
          }
        }, idleMs);
      }
      armIdle();
    });
  };

  const onConnection = async (socket: Socket): Promise<void> => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    // A client that vanished mid-write is its session's end, not the daemon's problem.
    socket.on('error', () => socket.destroy());
    const timer = setTimeout(() => socket.destroy(), HELLO_TIMEOUT_MS);
    let hello: DaemonHello;
    try {
      hello = JSON.parse(await readLine(socket)) as DaemonHello;
    } catch {
      socket.destroy();
      return;
    } finally {
      clearTimeout(timer);
    }
    if (hello.protocol !== DAEMON_PROTOCOL || hello.build !== build.id) {
      writeLine(
        socket,
        welcome({
          ok: false,
          message: `this daemon (pid ${process.pid}) is mcp-reconciler ${build.version}, build ${build.id}; the client is build ${String(hello.build)}`,
          hint: 'each build starts its own daemon beside the others; make the client use its own daemon directory, or stop this one with `mcp-reconciler daemon --stop`',
          exitCode: 1,
        }),
      );
      socket.end();
      return;
    }
    if (hello.kind === 'status') {
      writeLine(socket, welcome({ ok: true, status: status() }));
      socket.end();
    } else if (hello.kind === 'stop') {
      writeLine(socket, welcome({ ok: true }));
      socket.end();
      log(`stop asked by pid ${hello.pid}`);
      void close();
    } else if (hello.kind === 'session') {
      await openSession(socket, hello);
    } else {
      socket.destroy();
    }
  };

  const server: Server = createServer((socket) => {
    onConnection(socket).catch((err: unknown) => {
      log(`connection: ${describeError(err)}`);
      socket.destroy();
    });
  });

  // Check for a live daemon and bind under a lock: two daemons started at once never both bind.
  const bound = await withFileLock(paths.bindLock, async () => {
    if (await socketAnswers(paths.socket)) return false;
    // A socket file nobody answers on is a dead daemon's (SIGKILL leaves it behind).
    rmSync(paths.socket, { force: true });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(paths.socket, () => {
        server.off('error', reject);
        resolve();
      });
    });
    chmodSync(paths.socket, 0o600);
    return true;
  });
  if (!bound) return undefined;
  log(`listening on ${paths.socket} (pid ${process.pid}, build ${build.id})`);

  const close = (): Promise<void> => {
    closing ??= (async () => {
      clearTimeout(idleTimer);
      server.close();
      rmSync(paths.socket, { force: true });
      const all = [...workspaces.values()];
      await Promise.allSettled(all.flatMap((w) => [...w.sessions.values()].map((s) => s.gateway.close())));
      for (const s of sockets) s.destroy();
      await Promise.allSettled(all.map((w) => disposeWorkspace(w)));
      resolveClosed();
    })();
    return closing;
  };
  armIdle();
  return { status, closed, close };
}
