/**
 * What a machine definition contains, read straight from XState's state
 * nodes and raw config — independently of src/viz — so the export tests
 * compare the charts against the machine itself, not against a hand list.
 */
import type { AnyStateMachine } from 'xstate';

export interface StateFact {
  id: string;
  key: string;
  parentId: string | null;
  type: string;
}

interface RawNode {
  id: string;
  key: string;
  type: string;
  parent?: RawNode;
  states: Record<string, RawNode>;
  config: Record<string, unknown>;
}

/** Every state node below the root (the root itself excluded), depth first. */
export function statesOf(machine: AnyStateMachine): StateFact[] {
  const out: StateFact[] = [];
  const walk = (node: RawNode): void => {
    for (const child of Object.values(node.states)) {
      out.push({ id: child.id, key: child.key, parentId: node.parent === undefined ? null : node.id, type: child.type });
      walk(child);
    }
  };
  walk(machine.root as unknown as RawNode);
  return out;
}

/** What a diagram shows for an XState event type: `after <delay>`, `done <id>`, `error <id>`, or the event. */
export function shownAs(machine: AnyStateMachine, event: string): { text: string; delay?: string } {
  const ids = [machine.root.id, ...statesOf(machine).map((s) => s.id)];
  if (event.startsWith('xstate.after.')) {
    const rest = event.slice('xstate.after.'.length);
    const owner = ids.find((id) => rest.endsWith(`.${id}`));
    if (!owner) throw new Error(`cannot tell the delay of ${event}`);
    const delay = rest.slice(0, -(owner.length + 1));
    return { text: `after ${delay}`, delay };
  }
  if (event.startsWith('xstate.done.actor.')) return { text: `done ${event.slice('xstate.done.actor.'.length)}` };
  if (event.startsWith('xstate.error.actor.')) return { text: `error ${event.slice('xstate.error.actor.'.length)}` };
  return { text: event };
}

function asList(v: unknown): unknown[] {
  if (v === undefined) return [];
  return Array.isArray(v) ? v : [v];
}

/** Leaf guard names (through not/and/or) used anywhere in the raw config. */
export function guardNamesOf(machine: AnyStateMachine): Set<string> {
  const names = new Set<string>();
  const leaf = (g: unknown): void => {
    if (typeof g === 'string') names.add(g);
    else if (typeof g === 'function') {
      // xstate's not()/and()/or() carry their operands in `.guards`.
      const inner = (g as unknown as { guards?: unknown }).guards;
      if (Array.isArray(inner)) inner.forEach(leaf);
    }
    else if (g && typeof g === 'object' && typeof (g as { type?: unknown }).type === 'string') names.add((g as { type: string }).type);
  };
  const fromTransitions = (v: unknown): void => {
    for (const t of asList(v)) if (t && typeof t === 'object') leaf((t as { guard?: unknown }).guard);
  };
  const walk = (node: RawNode): void => {
    const c = node.config as { on?: Record<string, unknown>; always?: unknown; after?: Record<string, unknown>; invoke?: unknown };
    for (const t of Object.values(c.on ?? {})) fromTransitions(t);
    fromTransitions(c.always);
    for (const t of Object.values(c.after ?? {})) fromTransitions(t);
    for (const inv of asList(c.invoke)) {
      const i = inv as { onDone?: unknown; onError?: unknown };
      fromTransitions(i.onDone);
      fromTransitions(i.onError);
    }
    for (const child of Object.values(node.states)) walk(child);
  };
  walk(machine.root as unknown as RawNode);
  return names;
}

/** Whether any state of the machine has an eventless (`always`) transition. */
export function hasAlways(machine: AnyStateMachine): boolean {
  const walk = (node: RawNode): boolean =>
    node.config.always !== undefined || Object.values(node.states).some(walk);
  return walk(machine.root as unknown as RawNode);
}
