import { randomBytes } from 'node:crypto';
import { link, open, readFile, rename, rm, stat } from 'node:fs/promises';
import { hostname } from 'node:os';
import { ErrorCode, McpReconcilerError, describeError } from '../errors.js';

/** Tuning of {@link acquireFileLock}. */
export interface FileLockOptions {
  /** Give up after waiting this long (default 10 s). */
  timeoutMs?: number;
  /** A lock older than this is considered abandoned and broken (default 10 s). */
  staleMs?: number;
}

export const DEFAULT_LOCK_TIMEOUT_MS = 10_000;
export const DEFAULT_LOCK_STALE_MS = 10_000;

/** What a lock file holds: who took it and when. */
interface LockInfo {
  pid: number;
  host: string;
  /** Epoch milliseconds. */
  at: number;
  /** Random, so a holder recognises its own lock on release. */
  token: string;
}

/** A lock file as seen on disk. `info` is missing while its creator is still writing it. */
interface Observed {
  raw: string;
  ino: number;
  mtimeMs: number;
  info?: LockInfo;
}

function errCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

function parseInfo(raw: string): LockInfo | undefined {
  try {
    const v = JSON.parse(raw) as Partial<LockInfo>;
    if (typeof v.pid === 'number' && typeof v.at === 'number' && typeof v.host === 'string' && typeof v.token === 'string') {
      return v as LockInfo;
    }
  } catch {
    // half-written or foreign content: judged by mtime instead
  }
  return undefined;
}

async function observe(path: string): Promise<Observed | undefined> {
  try {
    const [raw, st] = await Promise.all([readFile(path, 'utf8'), stat(path)]);
    const info = parseInfo(raw);
    return { raw, ino: st.ino, mtimeMs: st.mtimeMs, ...(info ? { info } : {}) };
  } catch (err) {
    if (errCode(err) === 'ENOENT') return undefined;
    throw err;
  }
}

/** Whether a process exists on this host. EPERM means it exists but belongs to someone else. */
function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errCode(err) === 'EPERM';
  }
}

function isStale(lock: Observed, staleMs: number, now: number): boolean {
  if (!lock.info) return now - lock.mtimeMs > staleMs;
  if (now - lock.info.at > staleMs) return true;
  // A pid is only meaningful on the host that wrote it (the file may be on a shared disk).
  return lock.info.host === hostname() && !processAlive(lock.info.pid);
}

/**
 * Remove an abandoned lock without removing a fresh one that replaced it
 * between our look and our removal: move it aside (atomic), check that what
 * moved is what we judged stale, and put it back if not.
 */
async function breakLock(path: string, judged: Observed): Promise<void> {
  const aside = `${path}.stale-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    await rename(path, aside);
  } catch (err) {
    if (errCode(err) === 'ENOENT') return; // someone else broke or released it
    throw err;
  }
  try {
    const moved = await observe(aside);
    if (moved && (moved.ino !== judged.ino || moved.raw !== judged.raw)) {
      await link(aside, path).catch(() => {
        // a newer lock already took the path; it stands
      });
    }
  } finally {
    await rm(aside, { force: true });
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Take an exclusive cross-process lock by creating `lockPath` with `O_EXCL`
 * (content: pid, host, time). A lock older than `staleMs`, or whose process
 * on this host is dead, is broken. While the lock is held elsewhere, retries
 * with jittered backoff until `timeoutMs`, then rejects with an
 * `approval_store` error naming the holder. Resolves to an idempotent
 * release function, which only removes the lock if it is still ours.
 */
export async function acquireFileLock(lockPath: string, options: FileLockOptions = {}): Promise<() => Promise<void>> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS;
  const staleMs = options.staleMs ?? DEFAULT_LOCK_STALE_MS;
  const deadline = Date.now() + timeoutMs;
  const info: LockInfo = { pid: process.pid, host: hostname(), at: 0, token: randomBytes(12).toString('hex') };
  let delayMs = 5;
  let holder: Observed | undefined;

  for (let first = true; ; first = false) {
    if (!first && Date.now() >= deadline) throw timeoutError(lockPath, timeoutMs, holder);
    let created = false;
    try {
      const fh = await open(lockPath, 'wx', 0o600);
      created = true;
      try {
        info.at = Date.now();
        await fh.writeFile(JSON.stringify(info));
      } finally {
        await fh.close();
      }
      return releaser(lockPath, info.token);
    } catch (err) {
      if (created) {
        await rm(lockPath, { force: true });
        throw lockError(lockPath, err);
      }
      if (errCode(err) !== 'EEXIST') throw lockError(lockPath, err);
    }

    holder = await observe(lockPath).catch((err: unknown) => {
      throw lockError(lockPath, err);
    });
    if (!holder) continue; // released between our attempt and our look: try again at once
    if (isStale(holder, staleMs, Date.now())) {
      await breakLock(lockPath, holder).catch((err: unknown) => {
        throw lockError(lockPath, err);
      });
      continue;
    }
    const remaining = deadline - Date.now();
    if (remaining <= 0) throw timeoutError(lockPath, timeoutMs, holder);
    // Jitter spreads out waiters that all saw the lock go at the same moment.
    await sleep(Math.min(remaining, delayMs * (0.5 + Math.random())));
    delayMs = Math.min(delayMs * 2, 100);
  }
}

function releaser(lockPath: string, token: string): () => Promise<void> {
  let done: Promise<void> | undefined;
  return () => {
    done ??= (async () => {
      const current = await observe(lockPath).catch(() => undefined);
      // Not ours any more (broken as stale after a very long hold): leave the new holder alone.
      if (current?.info?.token === token) await rm(lockPath, { force: true });
    })();
    return done;
  };
}

/** Run `fn` while holding the lock at `lockPath`; the lock is released however `fn` ends. */
export async function withFileLock<T>(lockPath: string, fn: () => Promise<T>, options: FileLockOptions = {}): Promise<T> {
  const release = await acquireFileLock(lockPath, options);
  try {
    return await fn();
  } finally {
    await release();
  }
}

function lockError(lockPath: string, cause: unknown): McpReconcilerError {
  return new McpReconcilerError(ErrorCode.ApprovalStore, `Could not take the lock ${lockPath}: ${describeError(cause)}`, {
    hint: `Check that the directory of ${lockPath} exists and is writable by you.`,
    details: { file: lockPath },
    cause,
  });
}

function timeoutError(lockPath: string, timeoutMs: number, holder: Observed | undefined): McpReconcilerError {
  const who = holder?.info ? ` (held by pid ${holder.info.pid} on ${holder.info.host} since ${new Date(holder.info.at).toISOString()})` : '';
  return new McpReconcilerError(
    ErrorCode.ApprovalStore,
    `Timed out after ${timeoutMs} ms waiting for the lock ${lockPath}${who}.`,
    {
      hint: `Another process is writing approvals; try again. If none is running, delete ${lockPath}.`,
      details: { file: lockPath, ...(holder?.info ? { pid: holder.info.pid } : {}) },
    },
  );
}
