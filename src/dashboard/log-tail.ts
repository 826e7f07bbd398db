/**
 * The last lines of every server's log (docs/manage.md "logs"), kept live for
 * the dashboard's cards: one follower of `controller.logs(name, { follow })`
 * per server while someone watches, a short ring of records each, and one
 * change notice per server per burst of records.
 */
import type { McpController } from '../controller/controller.js';
import type { LogRecord } from '../controller/server-logs.js';

/** How many records a card shows. */
export const TAIL_SIZE = 20;

/** How often a followed log is checked for growth. */
const POLL_MS = 250;

interface Follower {
  abort: AbortController;
  records: LogRecord[];
  notice: NodeJS.Immediate | undefined;
}

/** Live tails of the logs of a controller's servers. */
export class LogTails {
  private readonly followers = new Map<string, Follower>();

  constructor(
    private readonly controller: McpController,
    private readonly onChange: (server: string, records: LogRecord[]) => void,
    private readonly size = TAIL_SIZE,
  ) {}

  /** Follow exactly the logs of `names`: start the new ones, stop the others. */
  sync(names: Iterable<string>): void {
    const wanted = new Set(names);
    for (const [name, f] of this.followers) {
      if (!wanted.has(name)) this.stop(name, f);
    }
    for (const name of wanted) if (!this.followers.has(name)) this.start(name);
  }

  /** The tails known now, by server. */
  snapshot(): Record<string, LogRecord[]> {
    const out: Record<string, LogRecord[]> = Object.create(null) as Record<string, LogRecord[]>;
    for (const [name, f] of this.followers) if (f.records.length > 0) out[name] = [...f.records];
    return out;
  }

  /** Stop every follower. */
  close(): void {
    for (const [name, f] of this.followers) this.stop(name, f);
  }

  private stop(name: string, f: Follower): void {
    f.abort.abort();
    if (f.notice) clearImmediate(f.notice);
    this.followers.delete(name);
  }

  private start(name: string): void {
    const f: Follower = { abort: new AbortController(), records: [], notice: undefined };
    this.followers.set(name, f);
    const run = async (): Promise<void> => {
      for await (const r of this.controller.logs(name, { follow: true, signal: f.abort.signal, pollMs: POLL_MS })) {
        if (f.abort.signal.aborted) return;
        f.records.push(r);
        if (f.records.length > this.size) f.records.splice(0, f.records.length - this.size);
        // A whole file read at once is one notice, not one per line.
        f.notice ??= setImmediate(() => {
          f.notice = undefined;
          if (!f.abort.signal.aborted) this.onChange(name, [...f.records]);
        });
      }
    };
    // Logs are best effort: an unreadable log leaves the card without a tail.
    run().catch(() => undefined);
  }
}
