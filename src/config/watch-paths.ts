/**
 * Files a config file depends on besides itself (docs/presets.md): an entry's
 * `envFile`, opencode's `{file:path}`, VS Code's `.vscode/settings.json`
 * behind `${config:…}`. A change to one of them changes the servers, so a
 * running controller must re-read the config when it changes, exactly as
 * when the config file itself is saved.
 *
 * The controller watches its source files with one watcher; `loadSource`
 * (given that watcher in `LoadOptions.watcher`) reports each source's extra
 * paths here, and the watcher's list becomes its original files plus every
 * source's current extra paths. The controller itself needs no other change.
 */

/** The part of the controller's config watcher (`src/watch/config-watcher.ts`) used here. */
export interface WatchedFileSet {
  /** The files watched now. */
  files(): string[];
  /** Replace the watched files. */
  setFiles(files: string[]): Promise<void>;
}

interface Followed {
  /** The watcher's own files, as they were before any extra path was added. */
  base: string[];
  /** Extra paths by source file. */
  bySource: Map<string, string[]>;
  /** The list last given to `setFiles`, joined, to skip no-op updates. */
  applied: string;
}

const followed = new WeakMap<WatchedFileSet, Followed>();

/**
 * Record `source`'s extra paths and bring the watcher's list up to date: its
 * original files plus every source's extra paths. Resolves once the new
 * watches are in place; a watcher error is left to the watcher's own
 * `onError` (the config still loads, it just would not reload on that file).
 */
export async function followExtraWatchPaths(watcher: WatchedFileSet, source: string, paths: readonly string[]): Promise<void> {
  let state = followed.get(watcher);
  if (state === undefined) {
    const base = watcher.files();
    state = { base, bySource: new Map(), applied: base.join('\n') };
    followed.set(watcher, state);
  }
  const mine = [...new Set(paths)].sort();
  if (mine.length === 0) state.bySource.delete(source);
  else state.bySource.set(source, mine);
  const base = new Set(state.base);
  const extra = [...new Set([...state.bySource.values()].flat())].filter((p) => !base.has(p)).sort();
  const all = [...state.base, ...extra];
  const key = all.join('\n');
  if (key === state.applied) return;
  state.applied = key;
  await watcher.setFiles(all).catch(() => undefined);
}
