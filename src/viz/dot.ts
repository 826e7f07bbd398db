/**
 * Graphviz DOT export. Compound states are `subgraph cluster_*`; an arrow from
 * or to a compound state is drawn to the cluster's border (`compound=true`,
 * `ltail`/`lhead`) through the cluster's initial pseudo-node. Targetless
 * transitions are listed inside their state (UML internal transitions).
 *
 * Element ids are predictable, so pages can style the rendered SVG:
 * a state (node or cluster) is `<g id="state-<xstate id>">` (e.g.
 * `state-server.live.connected`). Transitions between the same two states
 * share one arrow, `<g id="edge-<i>">` where `i` is the index of the first
 * of them in `graph.edges`.
 */
import { edgeLabel, rootOf, triggerLabel, type GraphEdge, type GraphNode, type MachineGraph } from './graph.js';

/** The SVG element id of a state node. */
export function stateElementId(stateId: string): string {
  return `state-${stateId}`;
}

/** The SVG element id of `graph.edges[index]`. */
export function edgeElementId(index: number): string {
  return `edge-${index}`;
}

const COLORS = {
  text: '#0f172a',
  muted: '#64748b',
  guard: '#1d4ed8',
  line: '#94a3b8',
  fill: '#f8fafc',
  cluster: '#f1f5f9',
  border: '#475569',
};

/** Escape text for a DOT HTML-like label. */
function html(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** Quote a DOT id / string attribute. */
function q(s: string): string {
  return `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

function small(s: string, color = COLORS.muted): string {
  return `<FONT POINT-SIZE="9" COLOR="${color}">${html(s)}</FONT>`;
}

/**
 * Lines shown under a state's name: activities and internal transitions
 * (full), internal transitions without actions (compact), nothing (outline).
 */
function detailLines(node: GraphNode, internal: readonly GraphEdge[], detail: DotDetail): string[] {
  if (detail === 'outline') return [];
  const out: string[] = [];
  if (detail === 'full') {
    if (node.entry) out.push(`entry / ${node.entry.join(', ')}`);
    if (node.exit) out.push(`exit / ${node.exit.join(', ')}`);
    for (const inv of node.invoke ?? []) out.push(`invoke ${inv}`);
  }
  for (const e of internal) out.push(edgeLabel(e, { actions: detail === 'full' }));
  return out;
}

function stateLabel(node: GraphNode, internal: readonly GraphEdge[], detail: DotDetail, title = node.key): string {
  const rows = [`<TR><TD><B>${html(title)}</B></TD></TR>`];
  for (const line of detailLines(node, internal, detail)) rows.push(`<TR><TD>${small(line)}</TD></TR>`);
  return `<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1">${rows.join('')}</TABLE>>`;
}

/**
 * The label of an arrow: per transition its trigger, its guard in blue and
 * (full detail) its actions in grey, each on its own line so labels stay narrow.
 */
function edgeHtml(edges: readonly GraphEdge[], detail: DotDetail): string {
  const lines: string[] = [];
  for (const edge of edges) {
    lines.push(`<FONT COLOR="${COLORS.text}">${html(triggerLabel(edge))}</FONT>`);
    if (edge.guard) lines.push(`<FONT COLOR="${COLORS.guard}">[${html(edge.guard)}]</FONT>`);
    if (detail === 'full' && edge.actions && edge.actions.length > 0) lines.push(small(`/ ${edge.actions.join(', ')}`));
  }
  return `<${lines.join('<BR/>')}>`;
}

const attrs = (a: Record<string, string | number>): string =>
  `[${Object.entries(a)
    .map(([k, v]) => `${k}=${typeof v === 'number' ? v : v.startsWith('<') ? v : q(v)}`)
    .join(', ')}]`;

/**
 * `full`: activities, guards and actions; `compact`: state names, triggers
 * and guards; `outline`: state names only, each arrow's transitions in its
 * tooltip (small enough to repeat once per server on a dashboard).
 */
export type DotDetail = 'full' | 'compact' | 'outline';

/** Options of {@link toDot}. */
export interface DotOptions {
  /** Default `full`. */
  detail?: DotDetail;
  /** Layout direction; default `LR`. */
  rankdir?: 'TB' | 'LR';
}

/** Render `graph` as a DOT `digraph` (ends with a newline). Deterministic for a given graph and options. */
export function toDot(graph: MachineGraph, options: DotOptions = {}): string {
  const detail = options.detail ?? 'full';
  // Without edge labels the layout is tight, so an outline can afford larger text in less space.
  const size = detail === 'outline' ? { graph: 13, node: 15, nodesep: 0.2, ranksep: 0.3 } : { graph: 11, node: 12, nodesep: 0.35, ranksep: 0.45 };
  const root = rootOf(graph);
  const byId = new Map(graph.nodes.map((n) => [n.id, n]));
  const isContainer = (n: GraphNode | undefined): boolean => n !== undefined && (n.type === 'compound' || n.type === 'parallel');
  const anchor = (id: string): string => `${id}.__initial`;
  const cluster = (id: string): string => `cluster_${id}`;
  const within = (id: string, ancestor: string): boolean => id === ancestor || id.startsWith(`${ancestor}.`);

  const internalOf = new Map<string, GraphEdge[]>();
  for (const e of graph.edges) if (e.internal) internalOf.set(e.source, [...(internalOf.get(e.source) ?? []), e]);

  const title = [`<B>${html(graph.id)}</B> machine`, ...(detail === 'full' ? detailLines(root, [], detail).map((l) => small(l)) : [])].join('<BR ALIGN="LEFT"/>');
  const lines: string[] = [
    `// ${graph.id} machine, generated from its definition by \`mcp-reconciler viz ${graph.id} --format dot\``,
    `digraph ${q(graph.id)} {`,
    `  graph ${attrs({ id: `chart-${graph.id}`, label: `<${title}<BR ALIGN="LEFT"/>>`, labelloc: 't', labeljust: 'l', compound: 'true', rankdir: options.rankdir ?? 'LR', newrank: 'true', fontname: 'Helvetica', fontsize: size.graph, fontcolor: COLORS.text, nodesep: size.nodesep, ranksep: size.ranksep, pad: 0.2, bgcolor: 'transparent' })};`,
    `  node ${attrs({ shape: 'box', style: 'rounded,filled', fillcolor: COLORS.fill, color: COLORS.border, fontname: 'Helvetica', fontsize: size.node, fontcolor: COLORS.text, margin: '0.12,0.05' })};`,
    `  edge ${attrs({ fontname: 'Helvetica', fontsize: 9, color: COLORS.line, arrowsize: 0.7 })};`,
  ];

  const writeChildren = (parent: GraphNode, depth: number): void => {
    const pad = '  '.repeat(depth);
    if (parent.initial) {
      lines.push(`${pad}${q(anchor(parent.id))} ${attrs({ id: `initial-${parent.id}`, shape: 'point', width: 0.12, color: COLORS.text, fillcolor: COLORS.text, label: '' })};`);
    }
    for (const child of graph.nodes.filter((n) => n.parent === parent.id)) {
      if (isContainer(child)) {
        lines.push(`${pad}subgraph ${q(cluster(child.id))} {`);
        lines.push(
          `${pad}  graph ${attrs({ id: stateElementId(child.id), class: 'state compound', label: stateLabel(child, internalOf.get(child.id) ?? [], detail), labeljust: 'l', style: 'rounded,filled', fillcolor: COLORS.cluster, color: COLORS.border, penwidth: 1 })};`,
        );
        writeChildren(child, depth + 1);
        lines.push(`${pad}}`);
      } else {
        const a: Record<string, string | number> = { id: stateElementId(child.id), class: 'state', label: stateLabel(child, internalOf.get(child.id) ?? [], detail) };
        if (child.final) a.peripheries = 2;
        lines.push(`${pad}${q(child.id)} ${attrs(a)};`);
      }
    }
  };

  // Root-level transitions apply in every state: they start at an "any state" pseudo-state.
  if (graph.edges.some((e) => e.source === root.id && !e.internal) || internalOf.has(root.id)) {
    lines.push(`  ${q(root.id)} ${attrs({ id: stateElementId(root.id), class: 'state any', label: stateLabel(root, internalOf.get(root.id) ?? [], detail, 'any state'), style: 'rounded,dashed', fillcolor: 'white' })};`);
  }
  writeChildren(root, 1);

  // Initial arrows, then transitions in graph order.
  for (const n of graph.nodes) {
    if (!n.initial) continue;
    const target = byId.get(n.initial);
    const a: Record<string, string | number> = { id: `initial-edge-${n.id}`, color: COLORS.text };
    if (isContainer(target)) a.lhead = cluster(n.initial);
    lines.push(`  ${q(anchor(n.id))} -> ${q(isContainer(target) ? anchor(n.initial) : n.initial)} ${attrs(a)};`);
  }
  // Transitions between the same two states share one arrow (one label line per transition), which
  // keeps the chart readable; the arrow's id is that of the first of them.
  const arrows = new Map<string, { first: number; edges: GraphEdge[] }>();
  graph.edges.forEach((e, i) => {
    if (e.internal) return;
    const key = `${e.source}\u0000${e.target}`;
    const arrow = arrows.get(key);
    if (arrow) arrow.edges.push(e);
    else arrows.set(key, { first: i, edges: [e] });
  });
  for (const { first, edges } of arrows.values()) {
    const e = edges[0]!;
    const source = byId.get(e.source);
    const target = byId.get(e.target);
    const kinds = [...new Set(edges.map((x) => x.kind))];
    const a: Record<string, string | number> = { id: edgeElementId(first), class: `transition ${kinds.join(' ')}` };
    if (detail === 'outline') a.tooltip = edges.map((x) => edgeLabel(x)).join('\n');
    else a.label = edgeHtml(edges, detail);
    let tail = e.source;
    let head = e.target;
    if (e.source !== root.id && isContainer(source)) {
      tail = anchor(e.source);
      if (!within(e.target, e.source)) a.ltail = cluster(e.source);
    }
    if (isContainer(target)) {
      head = anchor(e.target);
      if (!within(e.source, e.target)) a.lhead = cluster(e.target);
    }
    if (kinds.length === 1 && kinds[0] === 'always') a.style = 'dashed';
    lines.push(`  ${q(tail)} -> ${q(head)} ${attrs(a)};`);
  }
  lines.push('}');
  return `${lines.join('\n')}\n`;
}
