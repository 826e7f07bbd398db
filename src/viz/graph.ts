/**
 * The generic walker behind every state-chart export: it reads a machine's
 * real definition (`machine.root` and its state nodes) into a plain graph of
 * nodes and edges, so the diagrams can never drift from the code. The
 * per-format files (mermaid.ts, dot.ts, svg.ts, json.ts) only print this graph.
 */
import type { AnyStateMachine } from 'xstate';

/** The kind of a state node, as XState names it. */
export type NodeType = 'atomic' | 'compound' | 'parallel' | 'final' | 'history';

/** One state node. `id` is XState's state node id (`server.live.connected`). */
export interface GraphNode {
  id: string;
  /** The node's key in its parent (`connected`). */
  key: string;
  /** The parent's id; `null` for the machine's root node. */
  parent: string | null;
  type: NodeType;
  /** Id of the initial child state (compound nodes). */
  initial?: string;
  /** Present and `true` on final states. */
  final?: true;
  description?: string;
  /** Actions run on entry / exit, by name. */
  entry?: string[];
  exit?: string[];
  /** Ids of the actors this state invokes. */
  invoke?: string[];
}

/**
 * How a transition is triggered: a plain event, an eventless `always`
 * transition, a delay (`after`), or an invoked actor finishing (`done`) or
 * failing (`error`).
 */
export type EdgeKind = 'event' | 'always' | 'after' | 'done' | 'error';

/** One transition. */
export interface GraphEdge {
  /** Id of the state node that declares the transition. */
  source: string;
  /** Id of the target; equals `source` for a targetless (actions-only) transition. */
  target: string;
  /**
   * The XState event type that triggers it (`UPDATE`,
   * `xstate.done.actor.connect`, `xstate.after.retryDelay.server.live.reconnecting.waiting`),
   * or `always` for an eventless transition.
   */
  event: string;
  kind: EdgeKind;
  /** The guard by name, with parameters and combinators: `verdictIs(disabled)`, `and(a, b)`, `not(x)`. */
  guard?: string;
  /** The delay key of an `after` transition (`retryDelay`, or a number of ms as text). */
  delay?: string;
  /** The invoke id of a `done` / `error` transition. */
  invoke?: string;
  /** Actions by name (`assign` for inline assigns). */
  actions?: string[];
  /** A targetless transition: runs its actions, stays in the state, exits nothing. */
  internal?: true;
}

/** A machine as nodes and edges, in document order. */
export interface MachineGraph {
  /** The machine id (`server`, `reconciler`). */
  id: string;
  nodes: GraphNode[];
  edges: GraphEdge[];
}

/** The parts of an XState `StateNode` the walker reads (kept structural so any machine fits). */
interface StateNodeLike {
  id: string;
  key: string;
  type: NodeType;
  description?: string;
  parent?: StateNodeLike;
  states: Record<string, StateNodeLike>;
  config: { initial?: unknown };
  entry: unknown[];
  exit: unknown[];
  transitions: Map<string, TransitionLike[]>;
  always?: TransitionLike[];
  after: { eventType: string; delay: string | number }[];
  invoke: { id: string }[];
}

interface TransitionLike {
  target?: readonly StateNodeLike[];
  guard?: unknown;
  actions: readonly unknown[];
  reenter?: boolean;
}

const DONE_PREFIX = 'xstate.done.actor.';
const ERROR_PREFIX = 'xstate.error.actor.';

/** A guard as text: string names stay, `{ type, params }` shows its parameter values, combinators nest. */
export function guardName(guard: unknown): string | undefined {
  if (guard === undefined || guard === null) return undefined;
  if (typeof guard === 'string') return guard;
  if (typeof guard === 'function') {
    const fn = guard as { name?: string; guards?: unknown[] };
    // xstate's not()/and()/or() are functions named after themselves carrying `.guards`.
    if (Array.isArray(fn.guards)) return `${fn.name || 'guard'}(${fn.guards.map((g) => guardName(g) ?? '?').join(', ')})`;
    return fn.name || 'inline';
  }
  if (typeof guard === 'object') {
    const { type, params } = guard as { type?: unknown; params?: unknown };
    const name = typeof type === 'string' ? type : 'inline';
    const shown = paramsText(params);
    return shown === undefined ? name : `${name}(${shown})`;
  }
  return String(guard);
}

/** Static params as `a` or `a, b` (values only, they read better); dynamic ones are not shown. */
function paramsText(params: unknown): string | undefined {
  if (params === undefined || typeof params === 'function' || params === null) return undefined;
  if (typeof params !== 'object') return String(params);
  const values = Object.values(params as Record<string, unknown>);
  if (values.length === 0) return undefined;
  return values.map((v) => (typeof v === 'object' ? JSON.stringify(v) : String(v))).join(', ');
}

/** An action as text: its name, or `assign` / `raise` / … for XState's built-ins. */
export function actionName(action: unknown): string {
  if (typeof action === 'string') return action;
  const type = (action as { type?: unknown } | null)?.type;
  if (typeof type === 'string') return type.startsWith('xstate.') ? type.slice('xstate.'.length) : type;
  if (typeof action === 'function') return action.name || 'inline';
  return 'inline';
}

/**
 * XState implements `after` with an entry `raise` and an exit `cancel` of the
 * `xstate.after.*` event; the delayed edge already shows them, so they are left out.
 */
function isDelayPlumbing(action: unknown): boolean {
  const a = action as { type?: unknown; id?: unknown; sendId?: unknown } | null;
  if (!a) return false;
  const id = a.type === 'xstate.raise' ? a.id : a.type === 'xstate.cancel' ? a.sendId : undefined;
  return typeof id === 'string' && id.startsWith('xstate.after.');
}

function names(actions: readonly unknown[]): string[] | undefined {
  const shown = actions.filter((a) => !isDelayPlumbing(a));
  return shown.length > 0 ? shown.map(actionName) : undefined;
}

function initialOf(node: StateNodeLike): string | undefined {
  const initial = node.config.initial;
  if (typeof initial !== 'string') return undefined;
  return node.states[initial]?.id;
}

/**
 * Read a machine's real definition into a {@link MachineGraph}: every state
 * node, recursively from `machine.root`, and every transition — `on`
 * (including the root's own), `always`, `after` (named by delay key) and the
 * `onDone` / `onError` of invoked actors — with guards and actions by name.
 * Edges keep XState's priority order within a node.
 */
export function graphOf(machine: AnyStateMachine): MachineGraph {
  const nodes: GraphNode[] = [];
  const edges: GraphEdge[] = [];

  const visit = (node: StateNodeLike): void => {
    const out: GraphNode = { id: node.id, key: node.key, parent: node.parent?.id ?? null, type: node.type };
    const initial = initialOf(node);
    if (initial !== undefined) out.initial = initial;
    if (node.type === 'final') out.final = true;
    if (node.description) out.description = node.description;
    const entry = names(node.entry);
    if (entry) out.entry = entry;
    const exit = names(node.exit);
    if (exit) out.exit = exit;
    if (node.invoke.length > 0) out.invoke = node.invoke.map((i) => i.id);
    nodes.push(out);

    const delays = new Map(node.after.map((a) => [a.eventType, String(a.delay)]));
    const add = (event: string, t: TransitionLike, kind: EdgeKind, extra: Partial<GraphEdge>): void => {
      const targets = t.target && t.target.length > 0 ? t.target : undefined;
      for (const target of targets ?? [node]) {
        const edge: GraphEdge = { source: node.id, target: target.id, event, kind, ...extra };
        const guard = guardName(t.guard);
        if (guard !== undefined) edge.guard = guard;
        const actions = names(t.actions);
        if (actions) edge.actions = actions;
        if (!targets) edge.internal = true;
        edges.push(edge);
      }
    };
    for (const t of node.always ?? []) add('always', t, 'always', {});
    for (const [event, list] of node.transitions) {
      const delay = delays.get(event);
      for (const t of list) {
        if (delay !== undefined) add(event, t, 'after', { delay });
        else if (event.startsWith(DONE_PREFIX)) add(event, t, 'done', { invoke: event.slice(DONE_PREFIX.length) });
        else if (event.startsWith(ERROR_PREFIX)) add(event, t, 'error', { invoke: event.slice(ERROR_PREFIX.length) });
        else add(event, t, 'event', {});
      }
    }
    for (const child of Object.values(node.states)) visit(child);
  };

  visit(machine.root as unknown as StateNodeLike);
  return { id: machine.id, nodes, edges };
}

/**
 * The short trigger text shown on a diagram edge: `UPDATE`, `always`,
 * `after retryDelay`, `done connect`, `error connect`.
 */
export function triggerLabel(edge: GraphEdge): string {
  switch (edge.kind) {
    case 'always':
      return 'always';
    case 'after':
      return /^\d+$/.test(edge.delay ?? '') ? `after ${edge.delay}ms` : `after ${edge.delay}`;
    case 'done':
      return `done ${edge.invoke}`;
    case 'error':
      return `error ${edge.invoke}`;
    default:
      return edge.event;
  }
}

/** The full edge label: `TRIGGER [guard] / action, action`. */
export function edgeLabel(edge: GraphEdge, options: { actions?: boolean } = {}): string {
  let label = triggerLabel(edge);
  if (edge.guard) label += ` [${edge.guard}]`;
  if (options.actions !== false && edge.actions && edge.actions.length > 0) label += ` / ${edge.actions.join(', ')}`;
  return label;
}

/** Children of `id` in document order. */
export function childrenOf(graph: MachineGraph, id: string): GraphNode[] {
  return graph.nodes.filter((n) => n.parent === id);
}

/** The root node (the machine itself). */
export function rootOf(graph: MachineGraph): GraphNode {
  const root = graph.nodes.find((n) => n.parent === null);
  if (!root) throw new Error(`graph "${graph.id}" has no root node`);
  return root;
}

/** Ids from the root down to `id`, both included. */
export function ancestry(graph: MachineGraph, id: string): string[] {
  const byId = new Map(graph.nodes.map((n) => [n.id, n]));
  const out: string[] = [];
  for (let n = byId.get(id); n; n = n.parent === null ? undefined : byId.get(n.parent)) out.unshift(n.id);
  return out;
}

/** The deepest node that contains both `a` and `b` (a node contains itself). */
export function commonAncestor(graph: MachineGraph, a: string, b: string): string {
  const pa = ancestry(graph, a);
  const pb = ancestry(graph, b);
  let common = pa[0] ?? rootOf(graph).id;
  for (let i = 0; i < Math.min(pa.length, pb.length) && pa[i] === pb[i]; i++) common = pa[i]!;
  return common;
}
