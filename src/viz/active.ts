/** Which state nodes of a chart are active, from a snapshot's state value. */
import type { StateValue } from 'xstate';

/**
 * The ids of every active state node for `value`, outermost first, e.g.
 * `activeStateIds('server', { live: { reconnecting: 'waiting' } })` →
 * `['server.live', 'server.live.reconnecting', 'server.live.reconnecting.waiting']`.
 * These are the ids `graphOf` gives nodes, so a page can highlight them in
 * the SVG (`state-<id>`). The root itself is not included.
 */
export function activeStateIds(machineId: string, value: StateValue): string[] {
  const out: string[] = [];
  const walk = (prefix: string, v: StateValue): void => {
    if (typeof v === 'string') {
      out.push(`${prefix}.${v}`);
      return;
    }
    for (const [key, inner] of Object.entries(v)) {
      out.push(`${prefix}.${key}`);
      if (inner !== undefined) walk(`${prefix}.${key}`, inner);
    }
  };
  walk(machineId, value);
  return out;
}
