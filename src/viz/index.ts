/**
 * State-chart export of the real machines (SPEC §1): Mermaid, DOT, JSON and
 * SVG, all printed from one walk of the machine definition ({@link graphOf}).
 */
import type { AnyStateMachine } from 'xstate';
import { reconcilerMachine } from '../../machines/reconciler.machine.js';
import { serverMachine } from '../../machines/server.machine.js';
import { toDot, type DotOptions } from './dot.js';
import { graphOf } from './graph.js';
import { toJson } from './json.js';
import { toMermaid } from './mermaid.js';
import { toSvg } from './svg.js';

export { graphOf, edgeLabel, triggerLabel, guardName, actionName, type MachineGraph, type GraphNode, type GraphEdge, type EdgeKind } from './graph.js';
export { toDot, stateElementId, edgeElementId, type DotOptions, type DotDetail } from './dot.js';
export { toMermaid } from './mermaid.js';
export { toJson } from './json.js';
export { toSvg, dotToSvg } from './svg.js';
export { activeStateIds } from './active.js';

/** The machines the CLI and the dashboard can draw, by name. */
export const VIZ_MACHINES = { server: serverMachine, reconciler: reconcilerMachine } as const satisfies Record<string, AnyStateMachine>;

/** A drawable machine's name. */
export type VizMachineName = keyof typeof VIZ_MACHINES;

/** The export formats. */
export const VIZ_FORMATS = ['mermaid', 'dot', 'svg', 'json'] as const;

/** An export format. */
export type VizFormat = (typeof VIZ_FORMATS)[number];

/**
 * Render `machine` in `format` (what `mcp-reconciler viz` prints); the text
 * ends with one newline. `detail` applies to `dot` and `svg`.
 */
export async function renderChart(machine: AnyStateMachine, format: VizFormat, options: DotOptions = {}): Promise<string> {
  const graph = graphOf(machine);
  switch (format) {
    case 'mermaid':
      return toMermaid(graph);
    case 'dot':
      return toDot(graph, options);
    case 'json':
      return toJson(graph);
    case 'svg':
      return `${(await toSvg(graph, options)).trimEnd()}\n`;
  }
}
