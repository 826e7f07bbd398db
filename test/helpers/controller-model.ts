/**
 * The abstract model of the whole controller (TESTING.md §2, way 2), shared by
 * the test that carries it out against the reconciler machine
 * (test/machines/reconciler.model.test.ts) and the one that carries it out
 * against a real controller with real processes
 * (test/controller/model.test.ts).
 *
 * Two servers: `a` comes from the user's settings (ungated), `b` from the
 * project's `.mcp.json` (gated). Each has two versions of its config.
 */
import { assign, setup, type SnapshotFrom } from 'xstate';
import { createTestModel } from 'xstate/graph';
import type { ServerStateName } from '../../machines/reason.js';

export type Name = 'a' | 'b';
export const NAMES: readonly Name[] = ['a', 'b'];

export interface ModelContext {
  present: Record<Name, boolean>;
  version: Record<Name, 0 | 1>;
  /** The stored decision for `b`: one record per name, bound to a version's hash (SPEC §4). */
  decision?: { version: 0 | 1; decision: 'approved' | 'rejected' };
  excluded: Name[];
  allowed?: Name[];
  /** The server that just crashed, so the model has a state after CRASH. */
  crashed?: Name;
}

export type ModelEvent =
  | { type: 'ADD_SERVER' | 'EDIT_SERVER' | 'REMOVE_SERVER' | 'EXCLUDE' | 'ALLOW_ONLY' | 'CRASH'; name: Name }
  | { type: 'APPROVE' | 'REJECT' };

/** Every event the model takes, for `createTestModel(model, { events })`. */
export const MODEL_EVENTS: ModelEvent[] = [
  ...(['ADD_SERVER', 'EDIT_SERVER', 'REMOVE_SERVER', 'EXCLUDE', 'ALLOW_ONLY', 'CRASH'] as const).flatMap((type) => NAMES.map((name) => ({ type, name }))),
  { type: 'APPROVE' },
  { type: 'REJECT' },
];

/** Every server state the model can expect (`absent`: not configured). */
const SERVER_STATES = ['absent', 'connected', 'excluded', 'not_allowed', 'pending_approval', 'rejected'];

/** What the model says a server's state is (`undefined`: not configured). */
export function expectedState(c: ModelContext, name: Name): ServerStateName | undefined {
  if (!c.present[name]) return undefined;
  if (c.excluded.includes(name)) return 'excluded';
  if (c.allowed && !c.allowed.includes(name)) return 'not_allowed';
  if (name === 'b') {
    if (c.decision?.version !== c.version.b) return 'pending_approval';
    if (c.decision.decision === 'rejected') return 'rejected';
  }
  return 'connected';
}

/** The server states the model can expect that no state of `states` does (`absent`: not configured); empty when all were met. */
export function serverStatesNotMet(states: Iterable<ModelContext>): string[] {
  const met = new Set<string>();
  for (const c of states) for (const n of NAMES) met.add(expectedState(c, n) ?? 'absent');
  return SERVER_STATES.filter((s) => !met.has(s));
}

/**
 * Servers a step from `prev` to `next` must leave alone: connected before and
 * after, with the same config version. A reconcile must not disconnect them.
 */
export function untouchedServers(prev: ModelContext, next: ModelContext): Name[] {
  return NAMES.filter((n) => expectedState(prev, n) === 'connected' && expectedState(next, n) === 'connected' && prev.version[n] === next.version[n]);
}

const toggle = (list: Name[], name: Name) => (list.includes(name) ? list.filter((n) => n !== name) : [...list, name].sort());
/** The server a named event is about. */
export const named = (event: ModelEvent) => (event as { name: Name }).name;

export const model = setup({
  types: { context: {} as ModelContext, events: {} as ModelEvent },
  guards: {
    absent: ({ context, event }) => !context.present[named(event)],
    present: ({ context, event }) => context.present[named(event)],
    connected: ({ context, event }) => expectedState(context, named(event)) === 'connected',
    bPresent: ({ context }) => context.present.b,
  },
}).createMachine({
  id: 'controllerModel',
  context: { present: { a: true, b: true }, version: { a: 0, b: 0 }, excluded: [] },
  initial: 'running',
  states: {
    running: {
      on: {
        ADD_SERVER: { guard: 'absent', actions: assign({ present: ({ context, event }) => ({ ...context.present, [named(event)]: true }), crashed: undefined }) },
        EDIT_SERVER: {
          guard: 'present',
          actions: assign({ version: ({ context, event }) => ({ ...context.version, [named(event)]: context.version[named(event)] ? 0 : 1 }), crashed: undefined }),
        },
        REMOVE_SERVER: { guard: 'present', actions: assign({ present: ({ context, event }) => ({ ...context.present, [named(event)]: false }), crashed: undefined }) },
        EXCLUDE: { actions: assign({ excluded: ({ context, event }) => toggle(context.excluded, named(event)), crashed: undefined }) },
        ALLOW_ONLY: {
          actions: assign({ allowed: ({ context, event }) => (context.allowed?.[0] === named(event) ? undefined : [named(event)]), crashed: undefined }),
        },
        APPROVE: { guard: 'bPresent', actions: assign({ decision: ({ context }) => ({ version: context.version.b, decision: 'approved' as const }), crashed: undefined }) },
        REJECT: { guard: 'bPresent', actions: assign({ decision: ({ context }) => ({ version: context.version.b, decision: 'rejected' as const }), crashed: undefined }) },
        CRASH: { guard: 'connected', actions: assign({ crashed: ({ event }) => named(event) }) },
      },
    },
  },
});

export type ModelSnapshot = SnapshotFrom<typeof model>;

/** The model with every event, ready for `getShortestPaths()`. */
export const testModel = createTestModel(model, { events: MODEL_EVENTS });

/** The model's initial context. */
export function initialContext(): ModelContext {
  return model.getInitialSnapshot(undefined as never).context;
}
