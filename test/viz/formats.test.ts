import { describe, expect, it } from 'vitest';
import type { AnyStateMachine } from 'xstate';
import { reconcilerMachine } from '../../machines/reconciler.machine.js';
import { serverMachine } from '../../machines/server.machine.js';
import { graphOf, renderChart, type MachineGraph } from '../../src/viz/index.js';
import { guardNamesOf, hasAlways, shownAs, statesOf } from './machine-facts.js';

const machines: [string, AnyStateMachine][] = [
  ['server', serverMachine],
  ['reconciler', reconcilerMachine],
];

/** The block (composite state / cluster) each declared id sits in, from indentation-free brace tracking. */
function mermaidBlocks(text: string): Map<string, string> {
  const where = new Map<string, string>();
  const stack = ['<root>'];
  for (const raw of text.split('\n').slice(1)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('%%') || line.startsWith('note ') || line.includes('-->')) continue;
    const open = /^state (\S+) \{$/.exec(line);
    if (open) {
      if (!where.has(open[1]!)) where.set(open[1]!, stack.at(-1)!);
      stack.push(open[1]!);
      continue;
    }
    if (line === '}') {
      stack.pop();
      continue;
    }
    const id = /^state "[^"]*" as (\S+)$/.exec(line)?.[1] ?? /^([A-Za-z0-9_]+)(?: :.*)?$/.exec(line)?.[1];
    if (id && !where.has(id)) where.set(id, stack.at(-1)!);
  }
  expect(stack, 'mermaid braces balance').toEqual(['<root>']);
  return where;
}

function dotBlocks(text: string): Map<string, string> {
  const where = new Map<string, string>();
  const stack = ['<root>'];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    const open = /^subgraph "cluster_([^"]+)" \{$/.exec(line);
    if (open) {
      where.set(open[1]!, stack.at(-1)!);
      stack.push(open[1]!);
      continue;
    }
    if (line === '}') {
      stack.pop();
      continue;
    }
    const node = /^"([^"]+)" \[/.exec(line);
    if (node && !where.has(node[1]!)) where.set(node[1]!, stack.at(-1)!);
  }
  expect(stack, 'dot braces balance').toEqual([]);
  return where;
}

describe.each(machines)('the %s machine', (name, machine) => {
  const states = statesOf(machine);
  const events = machine.events as string[];
  const guards = guardNamesOf(machine);

  it('has something to check (sanity of the independent walk)', () => {
    expect(states.length).toBeGreaterThan(1);
    expect(events.length).toBeGreaterThan(1);
    expect(guards.size + (name === 'reconciler' ? 1 : 0)).toBeGreaterThan(0);
  });

  it('JSON: every state node with its parent and type, every event, guard and delay', async () => {
    const graph = JSON.parse(await renderChart(machine, 'json')) as MachineGraph;
    expect(graph.id).toBe(machine.id);
    const nodes = new Map(graph.nodes.map((n) => [n.id, n]));
    expect(nodes.get(machine.root.id)?.parent).toBeNull();
    for (const s of states) {
      const n = nodes.get(s.id);
      expect(n, `node ${s.id}`).toBeDefined();
      expect(n!.key).toBe(s.key);
      expect(n!.parent).toBe(s.parentId ?? machine.root.id);
      expect(n!.type).toBe(s.type);
      if (s.type === 'final') expect(n!.final).toBe(true);
    }
    expect(graph.nodes).toHaveLength(states.length + 1);
    for (const event of events) {
      const edges = graph.edges.filter((e) => e.event === event);
      expect(edges.length, `edges for ${event}`).toBeGreaterThan(0);
      const { delay } = shownAs(machine, event);
      if (delay) expect(edges.every((e) => e.kind === 'after' && e.delay === delay)).toBe(true);
    }
    const edgeGuards = graph.edges.map((e) => e.guard ?? '').join('\n');
    for (const g of guards) expect(edgeGuards, `guard ${g}`).toContain(g);
    if (hasAlways(machine)) expect(graph.edges.some((e) => e.kind === 'always')).toBe(true);
    // Every edge points at real nodes.
    for (const e of graph.edges) {
      expect(nodes.has(e.source), e.source).toBe(true);
      expect(nodes.has(e.target), e.target).toBe(true);
    }
  });

  it('Mermaid: every state nested under its parent, every event, guard and delay on an edge', async () => {
    const text = await renderChart(machine, 'mermaid');
    expect(text.startsWith('stateDiagram-v2\n')).toBe(true);
    const keys = states.map((s) => s.key);
    expect(new Set(keys).size, 'state keys are unique, so Mermaid ids are the keys').toBe(keys.length);
    const blocks = mermaidBlocks(text);
    const keyOf = new Map(states.map((s) => [s.id, s.key]));
    for (const s of states) {
      expect(blocks.get(s.key), `block of ${s.key}`).toBe(s.parentId === null ? '<root>' : keyOf.get(s.parentId));
    }
    const edgeLines = text.split('\n').filter((l) => l.includes('-->') || / : /.test(l));
    for (const event of events) {
      const { text: shown } = shownAs(machine, event);
      expect(edgeLines.some((l) => new RegExp(`: ${shown.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?!\\w)`).test(l)), `event ${event} shown as "${shown}"`).toBe(true);
    }
    for (const g of guards) expect(text, `guard ${g}`).toMatch(new RegExp(`\\[[^\\]]*\\b${g}\\b`));
    for (const s of states.filter((x) => x.type === 'final')) expect(text).toContain(`${s.key} --> [*]`);
  });

  it('DOT: compound states are clusters holding their children, every event, guard and delay labelled', async () => {
    const text = await renderChart(machine, 'dot');
    expect(text).toMatch(/^\/\/ .*\ndigraph "/);
    const blocks = dotBlocks(text);
    for (const s of states) {
      const parent = s.parentId ?? '<root>';
      expect(blocks.get(s.id), `where ${s.id} is declared`).toBe(parent);
      if (s.type === 'compound' || s.type === 'parallel') expect(text).toContain(`subgraph "cluster_${s.id}"`);
      // Predictable element ids for pages that highlight states.
      expect(text).toContain(`id="state-${s.id}"`);
    }
    for (const event of events) expect(text, `event ${event}`).toContain(shownAs(machine, event).text);
    for (const g of guards) expect(text, `guard ${g}`).toContain(g);
  });

  it('SVG: well-formed, one group per state, every state name drawn', async () => {
    const svg = await renderChart(machine, 'svg');
    expect(svg).toMatch(/^<\?xml [^>]*\?>\s*<!DOCTYPE svg[^>]*>\s*(<!--[\s\S]*?-->\s*)*<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    expect(unbalancedTags(svg)).toEqual([]);
    const texts = [...svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]);
    for (const s of states) {
      expect(svg).toContain(`<g id="state&#45;${s.id}"`);
      expect(texts, `label of ${s.key}`).toContain(s.key);
    }
  });
});

describe('nesting in the server machine', () => {
  it('keeps reconnecting inside live, and waiting/attempting inside reconnecting', async () => {
    const graph = graphOf(serverMachine);
    const parent = (id: string) => graph.nodes.find((n) => n.id === id)?.parent;
    expect(parent('server.live.reconnecting')).toBe('server.live');
    expect(parent('server.live.reconnecting.waiting')).toBe('server.live.reconnecting');
    const mermaid = await renderChart(serverMachine, 'mermaid');
    expect(mermaid).toMatch(/state live \{[\s\S]*state reconnecting \{[\s\S]*\[\*\] --> waiting[\s\S]*\}[\s\S]*\}/);
  });

  it('draws the root-level REMOVE from an "any state" pseudo-state, and names guards with their parameters', async () => {
    const mermaid = await renderChart(serverMachine, 'mermaid');
    expect(mermaid).toContain('state "any state" as server_any');
    expect(mermaid).toContain('server_any --> removed : REMOVE');
    expect(mermaid).toContain('admission --> pending_approval : always [verdictIs(pending_approval)]');
    expect(mermaid).toContain('live --> admission : UPDATE [not(updateAdmitted)] / storeUpdate');
    expect(mermaid).toContain('waiting --> attempting : after retryDelay');
  });
});

describe('determinism', () => {
  it('renders the same text twice', async () => {
    for (const format of ['mermaid', 'dot', 'json', 'svg'] as const) {
      expect(await renderChart(serverMachine, format)).toBe(await renderChart(serverMachine, format));
    }
  });
});

/** Open tags without their close (a tiny well-formedness check; no XML parser is a dependency). */
function unbalancedTags(xml: string): string[] {
  const body = xml.replace(/<\?[\s\S]*?\?>/g, '').replace(/<!--[\s\S]*?-->/g, '').replace(/<!DOCTYPE[^>]*>/g, '');
  const stack: string[] = [];
  const problems: string[] = [];
  for (const m of body.matchAll(/<(\/?)([A-Za-z][\w:.-]*)[^>]*?(\/?)>/g)) {
    const [, closing, name, selfClosing] = m;
    if (selfClosing) continue;
    if (!closing) stack.push(name!);
    else if (stack.pop() !== name) problems.push(`</${name}>`);
  }
  return [...problems, ...stack];
}
