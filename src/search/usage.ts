/**
 * How often each tool was called in a workspace, kept across runs (one 0600
 * JSON file per workspace beside the listing cache), so a tool budget can
 * expose the tools this workspace actually uses first.
 */
import { WorkspaceDoc } from '../util/workspace-doc.js';

const SAVE_DELAY_MS = 2_000;

/** Call counts by registered tool name. */
export class ToolUsage {
  private readonly counts = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private readonly doc: WorkspaceDoc | undefined;

  /** Counts live in `tool-usage/` beside the listing cache directory `dir`; `dir` false: in memory only. */
  constructor(dir: string | false, root: string, private readonly onError: (err: unknown) => void = () => {}) {
    this.doc = WorkspaceDoc.beside(dir, 'tool-usage', root);
    // No file yet, or an unreadable or untrusted one: start counting afresh.
    for (const [name, n] of Object.entries(this.doc?.member('counts') ?? {})) if (typeof n === 'number' && n > 0) this.counts.set(name, n);
  }

  /** Count one call of `name`. */
  record(name: string): void {
    this.counts.set(name, (this.counts.get(name) ?? 0) + 1);
    if (this.doc && !this.timer) {
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
    this.doc?.write({ counts: Object.fromEntries(this.counts) }, this.onError);
  }
}
