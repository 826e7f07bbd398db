/** JSON export: the walked graph itself, for tools that draw or check charts their own way. */
import type { MachineGraph } from './graph.js';

/**
 * Render `graph` as pretty-printed JSON (ends with a newline):
 * `{ id, nodes: [{ id, key, parent, type, initial?, final?, … }], edges: [{ source, target, event, kind, guard?, delay?, actions?, … }] }`.
 */
export function toJson(graph: MachineGraph): string {
  return `${JSON.stringify(graph, null, 2)}\n`;
}
