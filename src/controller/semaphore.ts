/** A slot taken from a {@link Semaphore}; `release()` is idempotent. */
export interface Lease {
  release(): void;
}

/** Bounds how many async jobs run at once (used for connect concurrency). */
export class Semaphore {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly limit: number) {
    if (!(limit >= 1)) throw new RangeError(`semaphore limit must be >= 1, got ${limit}`);
  }

  /** Slots currently taken (for tests and diagnostics). */
  get inUse(): number {
    return this.active;
  }

  /** Run `job` once a slot is free; an aborted wait rejects without running it. */
  async run<T>(job: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const lease = await this.acquire(signal);
    try {
      return await job();
    } finally {
      lease.release();
    }
  }

  /**
   * Take a slot once one is free; the caller releases it, possibly before its
   * job ends. An aborted wait rejects and takes nothing.
   */
  async acquire(signal?: AbortSignal): Promise<Lease> {
    await this.take(signal);
    let held = true;
    return {
      release: () => {
        if (!held) return;
        held = false;
        this.release();
      },
    };
  }

  private take(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason ?? new Error('aborted'));
    if (this.active < this.limit) {
      this.active++;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const grant = (): void => {
        signal?.removeEventListener('abort', onAbort);
        this.active++;
        resolve();
      };
      const onAbort = (): void => {
        const i = this.waiting.indexOf(grant);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(signal?.reason ?? new Error('aborted'));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(grant);
    });
  }

  private release(): void {
    this.active--;
    const next = this.waiting.shift();
    if (next) next();
  }
}

/** Options of {@link holdWhileStarting}. */
export interface StartHoldOptions {
  /**
   * CPU time (clock ticks) used so far by a process and its descendants, or
   * undefined when it cannot be read (gone, or not Linux).
   */
  cpuTicks: (pid: number) => number | undefined;
  /** How often the CPU use of a started process is sampled, in ms. Default 50. */
  sampleMs?: number;
  /** Consecutive idle samples after which a started process counts as waiting, not starting. Default 2. */
  idleSamples?: number;
  /** Upper bound of a hold when CPU use can be read. Default 5000. */
  maxHoldMs?: number;
  /** Upper bound of a hold when it cannot (macOS, no /proc). Default 1000. */
  blindHoldMs?: number;
}

/** The hooks a connect attempt reports its start phase through; see {@link holdWhileStarting}. */
export interface StartHold {
  /** The server process is running as `pid`. */
  spawned(pid: number): void;
  /** The server answered `initialize`: its start is over. */
  initialized(): void;
  /** Give the slot back now (the attempt ended). Idempotent. */
  release(): void;
}

/** A tick is 10 ms (USER_HZ 100); "idle" allows a little noise (GC, a timer) below 20 % of one core. */
const IDLE_TICKS_PER_SAMPLE = (sampleMs: number): number => Math.max(1, Math.floor((sampleMs / 10) * 0.2));

/**
 * Hold a connect slot only through a server's CPU-heavy start, not through its
 * handshake (issue 10). Starting servers is CPU-bound, which is why the number
 * of concurrent starts is limited at all; a server that never answers
 * `initialize` but sits idle costs nothing, and holding its slot until the
 * connect timeout would starve every healthy server queued behind it.
 *
 * The slot goes back at the first of: the server answered `initialize`; its
 * process tree used (almost) no CPU for `idleSamples` samples in a row; the
 * hold reached `maxHoldMs` (`blindHoldMs` when CPU use cannot be read); or
 * {@link StartHold.release}. A light server answers `initialize` long before
 * any of the bounds, so it is not serialised more than with a slot held until
 * its listing is done.
 */
export function holdWhileStarting(lease: Lease, options: StartHoldOptions): StartHold {
  const sampleMs = options.sampleMs ?? 50;
  const idleSamples = options.idleSamples ?? 2;
  const idleTicks = IDLE_TICKS_PER_SAMPLE(sampleMs);
  let released = false;
  let sampler: NodeJS.Timeout | undefined;
  let cap = setTimeout(() => release(), options.blindHoldMs ?? 1_000);
  cap.unref();

  function release(): void {
    if (released) return;
    released = true;
    clearTimeout(cap);
    if (sampler) clearInterval(sampler);
    lease.release();
  }

  return {
    spawned(pid: number): void {
      if (released) return;
      const first = options.cpuTicks(pid);
      if (first === undefined) return; // blind: the short cap stays
      let last = first;
      clearTimeout(cap);
      cap = setTimeout(() => release(), options.maxHoldMs ?? 5_000);
      cap.unref();
      let idle = 0;
      sampler = setInterval(() => {
        const now = options.cpuTicks(pid);
        if (now === undefined) return release(); // the process is gone: its start is over either way
        idle = now - last <= idleTicks ? idle + 1 : 0;
        last = now;
        if (idle >= idleSamples) release();
      }, sampleMs);
      sampler.unref();
    },
    initialized: release,
    release,
  };
}
