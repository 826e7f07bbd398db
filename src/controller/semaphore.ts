/** A slot taken from a {@link Semaphore}; `release()` is idempotent. */
export interface Lease {
  release(): void;
  /** Report how much CPU the job's start took (ms), for a semaphore that adapts its limit to it. */
  observeStartCpu?(ms: number): void;
}

/**
 * Adapting the limit to how heavy starts are (docs/performance.md): a start that takes
 * 250 ms of CPU and one that takes 25 ms should not get the same limit. The
 * limit aims at {@link budgetMsPerCore} ms of start work in flight per core:
 * enough to keep every core busy, few enough that heavy starts do not thrash
 * each other (50 Node servers started at once each take ~8 % more CPU).
 */
export interface AdaptiveLimit {
  cores: number;
  /** Start CPU per core the limit aims at. Default 500 (2 × cores slots for 250 ms starts). */
  budgetMsPerCore?: number;
  /** Upper bound of the limit. Default 64. */
  max?: number;
}

const EWMA_WEIGHT = 0.3;

/** Bounds how many async jobs run at once (used for connect concurrency). */
export class Semaphore {
  private active = 0;
  private readonly waiting: Array<() => void> = [];
  private current: number;
  /** Moving average of the reported start CPU, ms. */
  private startCpuMs: number | undefined;

  /**
   * @param limit the bound; with `adaptive`, the lowest the bound goes (it
   *   rises while the reported starts are light).
   */
  constructor(
    private readonly limit: number,
    private readonly adaptive?: AdaptiveLimit,
  ) {
    if (!(limit >= 1)) throw new RangeError(`semaphore limit must be >= 1, got ${limit}`);
    this.current = limit;
  }

  /** Slots currently taken (for tests and diagnostics). */
  get inUse(): number {
    return this.active;
  }

  /** The bound now (the fixed limit, or where the adaptive one stands). */
  get currentLimit(): number {
    return this.current;
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
      ...(this.adaptive ? { observeStartCpu: (ms: number) => this.observe(ms) } : {}),
    };
  }

  private observe(ms: number): void {
    const a = this.adaptive;
    if (!a || !(ms >= 0)) return;
    this.startCpuMs = this.startCpuMs === undefined ? ms : this.startCpuMs + EWMA_WEIGHT * (ms - this.startCpuMs);
    const budget = a.cores * (a.budgetMsPerCore ?? 500);
    // A start too short to measure (below one 10 ms tick) counts as one tick.
    const target = Math.floor(budget / Math.max(this.startCpuMs, 10));
    this.current = Math.min(a.max ?? 64, Math.max(this.limit, target));
    while (this.active < this.current && this.waiting.length > 0) this.waiting.shift()!();
  }

  private take(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason ?? new Error('aborted'));
    if (this.active < this.current) {
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
    // Below the bound only: after the adaptive bound fell, slots drain before new grants.
    if (this.active < this.current) this.waiting.shift()?.();
  }
}

/** Options of {@link holdWhileStarting}. */
export interface StartHoldOptions {
  /**
   * CPU time (clock ticks) used so far by a process and its descendants, or
   * undefined when it cannot be read (gone, or not Linux).
   */
  cpuTicks: (pid: number) => number | undefined;
  /**
   * The reading taken once, when the server first answered a request, to tell the
   * adaptive bound what its start cost; default `cpuTicks`. It runs on every
   * start's critical path, so it may be a cheaper approximation of the tree.
   */
  startCpuTicks?: (pid: number) => number | undefined;
  /**
   * Ticks the process alone has been busy: on a CPU, and where the reading
   * can tell, waiting for one. Cheaper to read than its tree; when given,
   * the tree is read only while the process itself is idle (a busy process
   * means a busy start, whatever its children do).
   */
  ownBusyTicks?: (pid: number) => number | undefined;
  /**
   * Whether the process or its tree is running or waiting for a CPU right
   * now, read only when the other readings say idle: on a loaded machine a
   * starting server can wait for a core longer than the idle samples, and
   * taking that wait for idleness hands its slot on, which starts more
   * servers on a machine with no core for them. Default: never.
   */
  runnable?: (pid: number) => boolean;
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
  /**
   * The server answered its first request (`initialize`, or the `server/discover`
   * probe before it): its start is over.
   */
  initialized(): void;
  /** Give the slot back now (the attempt ended). Idempotent. */
  release(): void;
}

/** A tick is 10 ms (USER_HZ 100); "idle" allows a little noise (GC, a timer) below 20 % of one core. */
const IDLE_TICKS_PER_SAMPLE = (sampleMs: number): number => Math.max(1, Math.floor((sampleMs / 10) * 0.2));

/**
 * Hold a connect slot only through a server's CPU-heavy start, not through its
 * handshake (docs/performance.md, "The connect limit on a loaded machine").
 * Starting servers is CPU-bound, which is why the number of concurrent
 * starts is limited at all; a server that never answers
 * `initialize` but sits idle costs nothing, and holding its slot until the
 * connect timeout would starve every healthy server queued behind it.
 *
 * The slot goes back at the first of: the server answered its first request; its
 * process tree used (almost) no CPU for `idleSamples` samples in a row while
 * not waiting for a CPU either (see `runnable`); the
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
  // Read once it answers, to report what its start cost: from its birth, as it was spawned just now.
  let spawnedPid: number | undefined;
  let cap: NodeJS.Timeout | undefined = setTimeout(() => release(), options.blindHoldMs ?? 1_000);
  cap.unref();

  function release(): void {
    if (released) return;
    released = true;
    clearTimeout(cap);
    if (sampler) clearInterval(sampler);
    // The hooks outlive the hold (a connection keeps its transport's spawn hook): not the timers.
    sampler = undefined;
    cap = undefined;
    lease.release();
  }

  return {
    spawned(pid: number): void {
      if (released) return;
      // A process that cannot be read keeps the blind cap. Its own reading, not its tree's:
      // reading /proc/<pid>/task while the exec settles is slow.
      const own = options.ownBusyTicks ?? options.cpuTicks;
      const first = own(pid);
      if (first === undefined) return; // blind: the short cap stays
      spawnedPid = pid;
      clearTimeout(cap);
      cap = setTimeout(() => release(), options.maxHoldMs ?? 5_000);
      cap.unref();
      let lastOwn = first;
      // The tree's reading at the previous sample, when it was read then.
      let lastTree: number | undefined;
      let ownIdle = 0;
      let idle = 0;
      sampler = setInterval(() => {
        const now = own(pid);
        if (now === undefined) return release(); // the process is gone: its start is over either way
        ownIdle = now - lastOwn <= idleTicks && !(options.runnable?.(pid) ?? false) ? ownIdle + 1 : 0;
        lastOwn = now;
        if (ownIdle === 0) {
          idle = 0;
          lastTree = undefined;
          return;
        }
        if (!options.ownBusyTicks) {
          idle = ownIdle;
        } else if (ownIdle >= idleSamples || lastTree !== undefined) {
          // Idle alone for a while, but a launcher's server may be the busy one: from now on
          // compare the tree over each interval (a process that starts fast never gets here).
          const tree = options.cpuTicks(pid);
          if (tree === undefined) return release();
          idle = lastTree !== undefined && tree - lastTree <= idleTicks ? idle + 1 : 0;
          lastTree = tree;
          if (idle >= 1) return release();
          return;
        }
        if (idle >= idleSamples) release();
      }, sampleMs);
      sampler.unref();
    },
    initialized: () => {
      if (!released && spawnedPid !== undefined) {
        const now = (options.startCpuTicks ?? options.cpuTicks)(spawnedPid);
        // Clock ticks are 10 ms (USER_HZ 100).
        if (now !== undefined) lease.observeStartCpu?.(now * 10);
      }
      release();
    },
    release,
  };
}
