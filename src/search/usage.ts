/**
 * How often each tool was called in a workspace, kept across runs (one 0600
 * JSON file per workspace beside the listing cache), so a tool budget can
 * expose the tools this workspace actually uses first.
 */
import { WorkspaceDoc } from '../util/workspace-doc.js';

const SAVE_DELAY_MS = 2_000;

/** Call counts by registered tool name. */
export class ToolUsage {
  /** Read from the file at first use: a host that never calls or searches does not pay for it at start. */
  private loaded: Map<string, number> | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** The write under way: writes queue behind it, so the file ends with the newest counts. */
  private writing: Promise<void> = Promise.resolve();
  private readonly doc: WorkspaceDoc | undefined;

  /** Counts live in `tool-usage/` beside the listing cache directory `dir`; `dir` false: in memory only. */
  constructor(dir: string | false, root: string, private readonly onError: (err: unknown) => void = () => {}) {
    this.doc = WorkspaceDoc.beside(dir, 'tool-usage', root);
  }

  private get counts(): Map<string, number> {
    if (!this.loaded) {
      this.loaded = new Map();
      // No file yet, or an unreadable or untrusted one: start counting afresh.
      for (const [name, n] of Object.entries(this.doc?.member('counts') ?? {})) if (typeof n === 'number' && n > 0) this.loaded.set(name, n);
    }
    return this.loaded;
  }

  /** Count one call of `name`. */
  record(name: string): void {
    this.counts.set(name, (this.counts.get(name) ?? 0) + 1);
    if (this.doc && !this.timer) {
      this.timer = setTimeout(() => void this.flush(), SAVE_DELAY_MS);
      this.timer.unref();
    }
  }

  /** The counts now (a snapshot). */
  snapshot(): ReadonlyMap<string, number> {
    return new Map(this.counts);
  }

  /** Drop the pending write: the counts move to another ToolUsage, which writes them. */
  cancel(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /**
   * Write the counts now, asynchronously: a gateway records a call on every
   * call, and a synchronous write every few seconds stalled its event loop
   * under load. Resolves when this write (and every one before it) is done.
   */
  flush(): Promise<void> {
    this.cancel();
    const doc = this.doc;
    // Never read means never counted: the file already holds these counts.
    if (!doc || !this.loaded) return this.writing;
    // The counts are read when the write starts, not when it was queued.
    this.writing = this.writing.then(() => doc.write({ counts: Object.fromEntries(this.counts) }, this.onError));
    return this.writing;
  }
}
