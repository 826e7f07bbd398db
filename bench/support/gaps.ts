/**
 * Samples a tool registry on a fixed period and records, per server, the
 * longest time its expected tools were not all registered. Resolution is the
 * sampling period; the longest interval between two samples is reported too,
 * because a stalled event loop can hide a gap shorter than the stall (though
 * no host in the same process could have seen that gap either).
 */

/** What {@link GapSampler.stop} reports. */
export interface GapReport {
  /** Longest gap of any watched server, ms (0 when none was ever missing). */
  longestMs: number;
  /** Servers that were missing in at least one sample. */
  serversWithGap: number;
  samples: number;
  /** Longest time between two consecutive samples, ms. */
  maxIntervalMs: number;
}

/** Periodic sampler of "are these servers' tools all registered?". */
export class GapSampler {
  private timer: NodeJS.Timeout | undefined;
  private readonly missingSince = new Map<string, number>();
  private readonly longest = new Map<string, number>();
  private samples = 0;
  private last: number | undefined;
  private maxInterval = 0;

  /**
   * @param expected server → tool names that must stay registered
   * @param read the currently registered tool names
   */
  constructor(
    private readonly expected: ReadonlyMap<string, readonly string[]>,
    private readonly read: () => ReadonlySet<string>,
    private readonly everyMs = 5,
  ) {}

  /** Take a sample now and then every `everyMs`. */
  start(): void {
    this.sample();
    this.timer = setInterval(() => this.sample(), this.everyMs);
  }

  /** Take a last sample and report. */
  stop(): GapReport {
    if (this.timer) clearInterval(this.timer);
    this.sample();
    const now = performance.now();
    for (const [server, since] of this.missingSince) this.bump(server, now - since);
    return {
      longestMs: Math.max(0, ...this.longest.values()),
      serversWithGap: this.longest.size,
      samples: this.samples,
      maxIntervalMs: this.maxInterval,
    };
  }

  private sample(): void {
    const now = performance.now();
    if (this.last !== undefined) this.maxInterval = Math.max(this.maxInterval, now - this.last);
    this.last = now;
    this.samples++;
    const names = this.read();
    for (const [server, tools] of this.expected) {
      const present = tools.every((t) => names.has(t));
      const since = this.missingSince.get(server);
      if (!present && since === undefined) this.missingSince.set(server, now);
      else if (present && since !== undefined) {
        this.missingSince.delete(server);
        this.bump(server, now - since);
      }
    }
  }

  private bump(server: string, gap: number): void {
    this.longest.set(server, Math.max(this.longest.get(server) ?? 0, gap));
  }
}
