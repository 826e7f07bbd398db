interface Waiters {
  promise: Promise<void>;
  resolve: () => void;
  reject: (err: unknown) => void;
}

function waiters(): Waiters {
  let resolve!: () => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // Callers may drop the promise; an unobserved failure must not crash the host.
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

/**
 * Runs reloads one at a time and folds requests that arrive during a run into
 * exactly one follow-up run (SPEC §3.2: the final state equals the latest config).
 */
export class ReloadCoalescer {
  private readonly run: () => Promise<void>;
  /** The run in progress, if any. */
  private current: Promise<void> | undefined;
  /** Callers waiting for the follow-up run; set when a request arrived during a run. */
  private next: Waiters | undefined;
  private disposed = false;

  /** `run` does one full reload; it is never called concurrently with itself. */
  constructor(run: () => Promise<void>) {
    this.run = run;
  }

  /**
   * Ask for a reload. With none running, one starts now; during a run, one more
   * run is scheduled after it (shared by every request made meanwhile). The
   * promise settles with the outcome of the run that covers this request: it
   * rejects with that run's error. After {@link dispose} it resolves at once.
   */
  request(): Promise<void> {
    if (this.disposed) return Promise.resolve();
    if (this.current === undefined) {
      const w = waiters();
      this.start(w);
      return w.promise;
    }
    this.next ??= waiters();
    return this.next.promise;
  }

  /** Resolves when no run is in progress or scheduled (never rejects). */
  async idle(): Promise<void> {
    while (this.current !== undefined) await this.current;
  }

  /** Stop: no new run starts; pending follow-up callers resolve without a run. */
  dispose(): void {
    this.disposed = true;
    const next = this.next;
    this.next = undefined;
    next?.resolve();
  }

  private start(w: Waiters): void {
    const done = (async () => {
      try {
        await this.run();
        w.resolve();
      } catch (err) {
        w.reject(err);
      }
    })();
    this.current = done.then(() => {
      const next = this.next;
      this.next = undefined;
      if (next && !this.disposed) this.start(next);
      else this.current = undefined;
    });
  }
}
