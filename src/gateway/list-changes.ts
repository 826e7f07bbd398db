/**
 * A session's list changes, coalesced per tick: one reconcile can change
 * several servers at once, and the client hears each kind of change once.
 * Both protocol lanes (src/gateway/server.ts, src/gateway/modern.ts) use it.
 */
export class ListChanges<K extends string> {
  private readonly dirty = new Set<K>();
  private flushing: NodeJS.Immediate | undefined;

  /** `flush` gets the kinds marked since the last flush (never empty). */
  constructor(private readonly flush: (changed: ReadonlySet<K>) => void) {}

  /** `what` changed: flushed with whatever else changes in this tick. */
  mark(what: K): void {
    this.dirty.add(what);
    this.flushing ??= setImmediate(() => {
      this.flushing = undefined;
      const changed = new Set(this.dirty);
      this.dirty.clear();
      this.flush(changed);
    });
  }

  /** Drop what is pending; nothing is flushed after this (unless marked again). */
  close(): void {
    if (this.flushing) clearImmediate(this.flushing);
    this.flushing = undefined;
    this.dirty.clear();
  }
}

/** The list-change half of a session listener: each change marked on `changes`. */
export function listChangeListener(changes: { mark(what: 'tools' | 'prompts'): void }): { toolsChanged(): void; promptsChanged(): void } {
  return { toolsChanged: () => changes.mark('tools'), promptsChanged: () => changes.mark('prompts') };
}
