import { statSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { createRequire } from 'node:module';
import type * as Chokidar from 'chokidar';

type FSWatcher = Chokidar.FSWatcher;

// Loaded when the first watch starts: hosts that never watch (one-shot CLI
// commands, benchmarks, `watch: false`) do not pay for it.
const requireLazy = createRequire(import.meta.url);
let chokidar: typeof Chokidar | undefined;
const watch = (...args: Parameters<typeof Chokidar.watch>): FSWatcher => (chokidar ??= requireLazy('chokidar') as typeof Chokidar).watch(...args);

/** Options of {@link watchConfigFiles}. */
export interface ConfigWatcherOptions {
  /** The config source files to watch; they and their directories need not exist yet. */
  files: string[];
  /** Quiet period that ends a burst of saves (trailing debounce). Default 300 ms. */
  debounceMs?: number;
  /** Upper bound on how long a continuous burst can delay `onChange`. Default 2000 ms. */
  maxWaitMs?: number;
  /** Paths whose events never count (the approvals store, our own writes). Asked per event. */
  ignore?: (path: string) => boolean;
  /** Called once per burst with the (sorted, absolute) listed files that changed. */
  onChange: (changed: string[]) => void;
  /** Watcher failures and exceptions thrown by `onChange`/`ignore`. */
  onError?: (err: Error) => void;
}

/** A running watcher from {@link watchConfigFiles}. */
export interface ConfigWatcher {
  /** Resolves when the file system watches are in place; events before it may be missed. */
  ready: Promise<void>;
  /** Replace the watched files; resolves when the new watches are in place. Reports nothing by itself. */
  setFiles(files: string[]): Promise<void>;
  /** The files watched now (absolute, as last given). */
  files(): string[];
  /** Stop watching. Idempotent, memoised; no `onChange` is called after it is invoked. */
  close(): Promise<void>;
}

const DEFAULT_DEBOUNCE_MS = 300;
const DEFAULT_MAX_WAIT_MS = 2_000;
/** Bound on re-resolving while directories appear/disappear under us. */
const MAX_REBUILD_ROUNDS = 8;

interface DirWatch {
  watcher: FSWatcher;
  /** Basenames inside the directory that matter: listed files or the next directory down. */
  names: ReadonlySet<string>;
  /** The listed files whose events this directory watch delivers. */
  files: ReadonlySet<string>;
}

interface Plan {
  /** watched directory → relevant child names */
  dirs: Map<string, Set<string>>;
  /** listed file → directory that is watched for it */
  anchorOf: Map<string, string>;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/**
 * Where to watch for `file`: its parent directory when it exists, else the
 * nearest existing ancestor, watching for the next missing path component.
 */
function planFor(files: readonly string[]): Plan {
  const dirs = new Map<string, Set<string>>();
  const anchorOf = new Map<string, string>();
  for (const file of files) {
    let child = file;
    let dir = dirname(file);
    while (!isDirectory(dir) && dirname(dir) !== dir) {
      child = dir;
      dir = dirname(dir);
    }
    let names = dirs.get(dir);
    if (!names) dirs.set(dir, (names = new Set()));
    names.add(basename(child));
    anchorOf.set(file, dir);
  }
  return { dirs, anchorOf };
}

function sameNames(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  return a.size === b.size && [...a].every((n) => b.has(n));
}

function toError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

/**
 * Watch config source files for saves, creations and deletions (SPEC §3.2).
 *
 * - Each file's parent directory is watched at depth 0, filtered to the listed
 *   names, so creating or deleting a listed file counts and sibling files do
 *   not. When the directory does not exist yet, the nearest existing ancestor
 *   is watched for the next missing component; when it appears the watch moves
 *   down (and back up when it is deleted). Files found after such a move are
 *   reported as changed, so `mkdir -p dir && write dir/file` is never missed.
 * - Atomic saves (write temp + rename over, or rename away + write) are folded
 *   into one change by chokidar's `atomic` option.
 * - Events are coalesced with a trailing debounce: every event restarts the
 *   `debounceMs` timer; a burst longer than `maxWaitMs` is flushed anyway, so
 *   a file written continuously still reloads. One `onChange` per burst.
 * - Errors go to `onError`; nothing is thrown from a watcher callback.
 */
export function watchConfigFiles(opts: ConfigWatcherOptions): ConfigWatcher {
  const debounceMs = opts.debounceMs ?? DEFAULT_DEBOUNCE_MS;
  const maxWaitMs = Math.max(opts.maxWaitMs ?? DEFAULT_MAX_WAIT_MS, debounceMs);
  let files: string[] = [...new Set(opts.files.map((f) => resolve(f)))];
  const watches = new Map<string, DirWatch>();
  const pending = new Set<string>();
  let debounceTimer: NodeJS.Timeout | undefined;
  let maxWaitTimer: NodeJS.Timeout | undefined;
  let closed = false;
  let closing: Promise<void> | undefined;
  // Rebuilds run one at a time; each waits for the previous one.
  let rebuildChain: Promise<void> = Promise.resolve();

  const reportError = (err: unknown): void => {
    if (closed) return;
    try {
      opts.onError?.(toError(err));
    } catch {
      // an error handler that throws must not break the watcher
    }
  };

  const flush = (): void => {
    clearTimeout(debounceTimer);
    clearTimeout(maxWaitTimer);
    debounceTimer = maxWaitTimer = undefined;
    if (closed || pending.size === 0) return;
    const changed = [...pending].sort();
    pending.clear();
    try {
      opts.onChange(changed);
    } catch (err) {
      reportError(err);
    }
  };

  const mark = (file: string): void => {
    if (closed) return;
    try {
      if (opts.ignore?.(file)) return;
    } catch (err) {
      reportError(err);
      return;
    }
    pending.add(file);
    clearTimeout(debounceTimer);
    debounceTimer = setTimeout(flush, debounceMs);
    maxWaitTimer ??= setTimeout(flush, maxWaitMs);
  };

  const openWatch = (dir: string, names: ReadonlySet<string>, listed: ReadonlySet<string>): Promise<DirWatch> => {
    const watcher = watch(dir, {
      depth: 0,
      ignoreInitial: true,
      atomic: true,
      // Only the directory itself and the names that matter are tracked at all.
      ignored: (p: string) => p !== dir && !(dirname(p) === dir && names.has(basename(p))),
    });
    const entry: DirWatch = { watcher, names, files: listed };
    watcher.on('all', (event, path) => {
      if (closed) return;
      const abs = resolve(path);
      if (event === 'addDir' || event === 'unlinkDir') {
        // A directory on the way to a listed file appeared or vanished: move the watch.
        void scheduleRebuild(true).catch(() => undefined);
        return;
      }
      if (listed.has(abs)) mark(abs);
      // A deleted file may be the first sign that its directory went away.
      if (event === 'unlink') void scheduleRebuild(true).catch(() => undefined);
    });
    watcher.on('error', (err) => reportError(err));
    return new Promise<DirWatch>((res) => {
      watcher.once('ready', () => res(entry));
    });
  };

  /** Bring the directory watches in line with the file list and the file system. */
  const rebuild = async (report: boolean): Promise<void> => {
    for (let round = 0; round < MAX_REBUILD_ROUNDS && !closed; round++) {
      const plan = planFor(files);
      const moved: string[] = [];
      const opened: Promise<void>[] = [];
      const stale: DirWatch[] = [];
      for (const [dir, names] of plan.dirs) {
        const listed = new Set(files.filter((f) => plan.anchorOf.get(f) === dir));
        const current = watches.get(dir);
        if (current && sameNames(current.names, names) && sameNames(current.files, listed)) continue;
        for (const f of listed) if (!current?.files.has(f)) moved.push(f);
        // Open the new watch before closing the old one so no event slips between.
        opened.push(
          openWatch(dir, names, listed).then((entry) => {
            if (current) stale.push(current);
            watches.set(dir, entry);
          }),
        );
      }
      for (const [dir, entry] of watches) {
        if (plan.dirs.has(dir)) continue;
        stale.push(entry);
        watches.delete(dir);
      }
      await Promise.all(opened);
      await Promise.all(stale.map((w) => w.watcher.close()));
      if (closed) return;
      // A file that was created together with its directory produced no event
      // of its own on the new watch; report every file whose watch moved.
      if (report) for (const f of moved) mark(f);
      if (opened.length === 0 && stale.length === 0) return;
    }
  };

  const scheduleRebuild = (report: boolean): Promise<void> => {
    const run = rebuildChain.then(() => rebuild(report));
    rebuildChain = run.catch(reportError);
    return run;
  };

  const ready = scheduleRebuild(false);
  // `ready` is also observed by the chain's catch; keep an unobserved rejection quiet.
  ready.catch(() => undefined);

  return {
    ready,
    files: () => [...files],
    async setFiles(next: string[]): Promise<void> {
      if (closed) return;
      files = [...new Set(next.map((f) => resolve(f)))];
      for (const f of [...pending]) if (!files.includes(f)) pending.delete(f);
      await scheduleRebuild(false);
    },
    close(): Promise<void> {
      if (closing) return closing;
      closed = true;
      clearTimeout(debounceTimer);
      clearTimeout(maxWaitTimer);
      pending.clear();
      closing = (async () => {
        // Let an in-flight rebuild finish so the watches it opens are closed too.
        await rebuildChain.catch(() => undefined);
        const all = [...watches.values()];
        watches.clear();
        await Promise.all(all.map((w) => w.watcher.close()));
      })();
      return closing;
    },
  };
}
