/**
 * How often each tool was called in a workspace, kept across runs (one 0600
 * JSON file per workspace beside the listing cache), so a tool budget can
 * expose the tools this workspace actually uses first.
 */
import { join } from 'node:path';
import { readTrustedSync } from '../util/file-trust.js';
import { workspaceKey, writeFileAtomicSync } from '../util/persist.js';

const SAVE_DELAY_MS = 2_000;

/** Call counts by registered tool name. */
export class ToolUsage {
  private readonly counts = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private readonly file: string | undefined;

  /** Counts live in `tool-usage/` beside the listing cache directory `dir` (not inside it: that holds listings only); `dir` false: in memory only. */
  constructor(dir: string | false, root: string, private readonly onError: (err: unknown) => void = () => {}) {
    if (dir === false) return;
    this.file = join(dir, '..', 'tool-usage', `${workspaceKey(root)}.json`);
    try {
      // Counts decide which tools a model sees first: a file someone else could write is not used.
      const read = readTrustedSync(this.file);
      if (!('text' in read)) return;
      const doc = JSON.parse(read.text) as { counts?: Record<string, unknown> };
      for (const [name, n] of Object.entries(doc.counts ?? {})) if (typeof n === 'number' && n > 0) this.counts.set(name, n);
    } catch {
      // No file yet, or an unreadable one: start counting afresh.
    }
  }

  /** Count one call of `name`. */
  record(name: string): void {
    this.counts.set(name, (this.counts.get(name) ?? 0) + 1);
    if (this.file && !this.timer) {
      this.timer = setTimeout(() => this.save(), SAVE_DELAY_MS);
      this.timer.unref();
    }
  }

  /** The counts now (a snapshot). */
  snapshot(): ReadonlyMap<string, number> {
    return new Map(this.counts);
  }

  /** Write pending counts now (disposal). */
  save(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.file) return;
    try {
      writeFileAtomicSync(this.file, JSON.stringify({ version: 1, counts: Object.fromEntries(this.counts) }), { mkdir: true });
    } catch (err) {
      this.onError(err);
    }
  }
}
