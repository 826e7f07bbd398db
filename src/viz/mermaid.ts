/**
 * Mermaid `stateDiagram-v2` export. Compound states become composite states
 * (`state live { … }`); each transition is written in the innermost block that
 * holds both of its ends, because Mermaid creates a new state when a block
 * mentions one it does not contain. Transitions on the machine's root (they
 * apply in any state) start at an "any state" pseudo-state; targetless
 * transitions of atomic states are listed inside the state, like UML's
 * internal transitions.
 */
import { childrenOf, commonAncestor, edgeLabel, rootOf, type GraphEdge, type GraphNode, type MachineGraph } from './graph.js';

// Words Mermaid's state grammar treats specially; a state with such a key gets a path id.
const RESERVED = new Set(['state', 'note', 'end', 'direction', 'as', 'class', 'classdef', 'style', 'click', 'left', 'right', 'of', 'default']);

/** Mermaid forbids `:` `;` `#` in labels in places; they are replaced, nothing else changes. */
function text(s: string): string {
  return s.replace(/[:;#]/g, ' ').replace(/\s+/g, ' ').trim();
}

/**
 * Mermaid state ids: the key when it is unique in the machine and not a
 * keyword, otherwise the path from the root joined with `_`.
 */
function mermaidIds(graph: MachineGraph): Map<string, string> {
  const root = rootOf(graph);
  const keyCount = new Map<string, number>();
  for (const n of graph.nodes) keyCount.set(n.key, (keyCount.get(n.key) ?? 0) + 1);
  const ids = new Map<string, string>();
  for (const n of graph.nodes) {
    const plain = n.key.replace(/[^A-Za-z0-9_]/g, '_');
    const unique = keyCount.get(n.key) === 1 && plain === n.key && !RESERVED.has(n.key.toLowerCase());
    const path = n.id === root.id ? n.id : n.id.slice(root.id.length + 1);
    ids.set(n.id, n.id === root.id ? `${plain}_any` : unique ? n.key : path.replace(/[^A-Za-z0-9_]/g, '_'));
  }
  return ids;
}

/** `entry / …`, `exit / …` and `invoke …` lines of a state. */
function activities(node: GraphNode): string[] {
  const out: string[] = [];
  if (node.entry) out.push(`entry / ${node.entry.join(', ')}`);
  if (node.exit) out.push(`exit / ${node.exit.join(', ')}`);
  for (const inv of node.invoke ?? []) out.push(`invoke ${inv}`);
  return out;
}

/** Which block (state node id) a transition is written in. */
function blockOf(graph: MachineGraph, edge: GraphEdge, parentOf: Map<string, string | null>): string {
  let block = commonAncestor(graph, edge.source, edge.target);
  // A block cannot mention itself: an edge from or to a composite goes one level up.
  if (block === edge.source || block === edge.target) block = parentOf.get(block) ?? rootOf(graph).id;
  return block;
}

/** Render `graph` as a Mermaid `stateDiagram-v2` document (ends with a newline). */
export function toMermaid(graph: MachineGraph): string {
  const root = rootOf(graph);
  const ids = mermaidIds(graph);
  const id = (nodeId: string): string => ids.get(nodeId)!;
  const parentOf = new Map(graph.nodes.map((n) => [n.id, n.parent]));
  const isAtomic = (nodeId: string): boolean => {
    const n = graph.nodes.find((x) => x.id === nodeId);
    return n !== undefined && (n.type === 'atomic' || n.type === 'final');
  };

  // Targetless transitions of atomic states are drawn inside them; everything else is an arrow.
  const internalOf = new Map<string, GraphEdge[]>();
  const arrowsIn = new Map<string, GraphEdge[]>();
  for (const e of graph.edges) {
    if (e.internal && isAtomic(e.source)) {
      internalOf.set(e.source, [...(internalOf.get(e.source) ?? []), e]);
      continue;
    }
    const block = blockOf(graph, e, parentOf);
    arrowsIn.set(block, [...(arrowsIn.get(block) ?? []), e]);
  }

  const lines: string[] = ['stateDiagram-v2', `  %% ${graph.id} machine, generated from its definition by \`mcp-reconciler viz ${graph.id} --format mermaid\``];
  const rootHasArrows = graph.edges.some((e) => e.source === root.id);

  const writeBlock = (node: GraphNode, depth: number): void => {
    const pad = '  '.repeat(depth);
    if (node.id === root.id && rootHasArrows) lines.push(`${pad}state "any state" as ${id(root.id)}`);
    if (node.initial) lines.push(`${pad}[*] --> ${id(node.initial)}`);
    if (node.id === root.id) {
      // The machine's own activities have no state box to live in; a note on the initial state carries them.
      const notes = activities(root);
      if (notes.length > 0 && root.initial) lines.push(`${pad}note left of ${id(root.initial)} : ${text(`${graph.id} machine ${notes.join(' | ')}`)}`);
    }
    for (const child of childrenOf(graph, node.id)) {
      if (child.type === 'compound' || child.type === 'parallel') {
        lines.push(`${pad}state ${id(child.id)} {`);
        writeBlock(child, depth + 1);
        lines.push(`${pad}}`);
        // A composite's own text would be taken as a child state; its activities go in a note.
        const notes = activities(child);
        if (notes.length > 0) lines.push(`${pad}note right of ${id(child.id)} : ${text(notes.join(' | '))}`);
      } else {
        if (id(child.id) !== child.key) lines.push(`${pad}state "${text(child.key)}" as ${id(child.id)}`);
        else lines.push(`${pad}${id(child.id)}`);
        for (const line of activities(child)) lines.push(`${pad}${id(child.id)} : ${text(line)}`);
        for (const e of internalOf.get(child.id) ?? []) lines.push(`${pad}${id(child.id)} : ${text(edgeLabel(e))}`);
        if (child.final) lines.push(`${pad}${id(child.id)} --> [*]`);
      }
    }
    for (const e of arrowsIn.get(node.id) ?? []) {
      lines.push(`${pad}${id(e.source)} --> ${id(e.target)} : ${text(edgeLabel(e))}`);
    }
  };
  writeBlock(root, 1);
  return `${lines.join('\n')}\n`;
}
