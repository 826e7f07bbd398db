/**
 * Where the daemon lives: one private directory per user (the socket, its
 * locks, the log), and the checks that make a unix socket in it reachable by
 * that user only (docs/daemon.md, "Who may connect").
 *
 * Node exposes no SO_PEERCRED, so the daemon cannot ask the kernel who is at
 * the other end of a connection. Instead the socket sits in a directory that
 * is ours and mode 0700: connecting to a unix socket needs search permission
 * on its directory, so only this uid (and root) can reach it. Both sides
 * check the directory before use: the daemon before it listens, a client
 * before it connects (so it never talks to a socket someone else planted).
 */
import { createHash } from 'node:crypto';
import { chmodSync, lstatSync, mkdirSync, realpathSync, statSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { ErrorCode, McpReconcilerError } from '../errors.js';
import { appDir } from '../util/persist.js';

/** Environment variable naming the daemon's directory outright (tests, unusual setups). */
export const DAEMON_DIR_ENV = 'MCP_RECONCILER_DAEMON_DIR';

/**
 * The daemon's directory: `$MCP_RECONCILER_DAEMON_DIR`, else
 * `$XDG_RUNTIME_DIR/mcp-reconciler` (per-user, cleared at logout), else the
 * state directory's `daemon/` (`~/.local/state/mcp-reconciler/daemon`).
 */
export function daemonDir(env: NodeJS.ProcessEnv = process.env): string {
  const own = env[DAEMON_DIR_ENV];
  if (own && isAbsolute(own)) return own;
  const runtime = env.XDG_RUNTIME_DIR;
  if (runtime && isAbsolute(runtime)) return join(runtime, 'mcp-reconciler');
  return join(appDir('state', env), 'daemon');
}

/** What identifies one build of the program: a daemon serves only shims of its own build. */
export interface BuildIdentity {
  /** package.json's version. */
  version: string;
  /** The version plus a hash of the entry script's path, size and mtime: a rebuild is another build. */
  id: string;
}

/** The identity of the build whose entry script is `script` (the bin, `dist/cli/main.js`). */
export function buildIdentity(script: string, version: string): BuildIdentity {
  let stamp = script;
  try {
    const real = realpathSync(script);
    const st = statSync(real);
    stamp = `${real}\0${st.size}\0${st.mtimeMs}`;
  } catch {
    // no script on disk (in-process use): the version alone
  }
  const hash = createHash('sha256').update(stamp).digest('hex').slice(0, 10);
  return { version, id: `${version.replace(/[^A-Za-z0-9.+-]/g, '_')}-${hash}` };
}

/** The files of one build's daemon inside {@link daemonDir}. */
export interface DaemonPaths {
  dir: string;
  /** The unix socket: `daemon-<build>.sock`. One per build, so a newer shim starts its own daemon beside an older one. */
  socket: string;
  /** Held by the client that spawns the daemon, so two clients never start two. */
  spawnLock: string;
  /** Held by the daemon while it checks for a live peer and binds the socket. */
  bindLock: string;
  /** The daemon's stderr when a client started it. */
  log: string;
}

/** The paths of the daemon of build `buildId` in `dir`. */
export function daemonPaths(dir: string, buildId: string): DaemonPaths {
  const base = join(dir, `daemon-${buildId}`);
  return { dir, socket: `${base}.sock`, spawnLock: `${base}.spawn-lock`, bindLock: `${base}.bind-lock`, log: `${base}.log` };
}

function unsafe(dir: string, why: string): McpReconcilerError {
  return new McpReconcilerError(ErrorCode.ConfigInvalid, `the daemon directory ${dir} ${why}, so other users could reach the daemon's socket`, {
    hint: `remove ${dir} (it is recreated private), or set ${DAEMON_DIR_ENV} to a directory only you can open`,
  });
}

/**
 * Check that `dir` is a real directory (not a symlink) owned by this user
 * with no access for group or others; throws a config error saying what is
 * wrong otherwise. POSIX only: elsewhere it checks nothing.
 */
export function checkPrivateDir(dir: string): void {
  if (typeof process.getuid !== 'function') return;
  const st = lstatSync(dir);
  if (!st.isDirectory()) throw unsafe(dir, st.isSymbolicLink() ? 'is a symbolic link' : 'is not a directory');
  if (st.uid !== process.getuid()) throw unsafe(dir, `belongs to uid ${st.uid}, not to you (uid ${process.getuid()})`);
  if ((st.mode & 0o077) !== 0) throw unsafe(dir, `has mode ${(st.mode & 0o777).toString(8)}, not 700`);
}

/** Create `dir` private (0700) if missing, tighten a fresh one left by a umask, and check it. */
export function ensurePrivateDir(dir: string): void {
  let created: string | undefined;
  try {
    created = mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw new McpReconcilerError(ErrorCode.ConnectFailed, `cannot create the daemon directory ${dir}: ${(err as Error).message}`, {
      hint: `check that its parent is writable by you, or set ${DAEMON_DIR_ENV}`,
    });
  }
  if (created !== undefined) chmodSync(dir, 0o700);
  checkPrivateDir(dir);
}
