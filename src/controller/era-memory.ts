/**
 * Which programs this controller found to speak only the 2025 revisions, so
 * that an edit of such a server's config that keeps the program (its `env`, a
 * filter, a timeout) opens with `initialize` at once instead of probing with
 * `server/discover` again (docs/protocol.md, "The era cache"). The listing
 * cache keeps the whole verdict per fingerprint (in memory too when its
 * directory is off); an edit changes the fingerprint, so without this every
 * reload of a 2025-era server would pay the probe's round trip (and a server
 * that quits on the probe a whole second start).
 */
import type { ProtocolVerdict } from '../cache/listing-cache.js';
import type { DesiredServer, ProtocolChoice } from '../../machines/types.js';
import { transportOf } from '../config/identity.js';

/** Programs kept; the oldest go first (a host that edits servers forever must not grow). */
const LIMIT = 512;

/**
 * What the server runs or reaches, without what cannot change the revision
 * it speaks: its `env`, `headers`, filters, timeouts. Undefined for
 * in-process servers (nothing to probe).
 */
function launchKey(entry: DesiredServer): string | undefined {
  const c = entry.config;
  const kind = transportOf(c);
  if (kind === 'stdio') return JSON.stringify([kind, c.command, c.args ?? [], c.cwd ?? '']);
  if (kind === 'http' || kind === 'sse') return JSON.stringify([kind, c.url]);
  return undefined;
}

/**
 * Only 2025 verdicts are carried over an edit: a modern one holds a
 * `server/discover` result (capabilities, instructions) that may depend on
 * what changed. Only verdicts of `auto` connects count: a pin says nothing
 * about what the server would choose. A stale verdict costs what a stale
 * cached one does: a server that now refuses `initialize` is probed afresh.
 */
export class EraMemory {
  private readonly legacy = new Set<string>();

  /** The era to open `entry` with under `auto` when the listing cache knows none. */
  get(entry: DesiredServer): ProtocolVerdict | undefined {
    const key = launchKey(entry);
    return key !== undefined && this.legacy.has(key) ? { era: 'legacy' } : undefined;
  }

  /** Remember what a connect of `entry` under `choice` negotiated. */
  remember(entry: DesiredServer, choice: ProtocolChoice, verdict: ProtocolVerdict): void {
    const key = launchKey(entry);
    if (choice !== 'auto' || key === undefined) return;
    this.legacy.delete(key);
    if (verdict.era !== 'legacy') return;
    this.legacy.add(key);
    if (this.legacy.size > LIMIT) this.legacy.delete(this.legacy.values().next().value!);
  }
}
