/**
 * SVG export: the DOT export laid out by Graphviz compiled to WebAssembly
 * (`@viz-js/viz`), in-process — no browser, no `dot` binary, no network.
 */
import type { Viz } from '@viz-js/viz';
import { toDot, type DotOptions } from './dot.js';
import type { MachineGraph } from './graph.js';

let viz: Promise<Viz> | undefined;

/** One Graphviz instance per process: compiling the WASM module is the slow part. */
function graphviz(): Promise<Viz> {
  // Imported lazily: the WASM bundle is megabytes, and a host that never draws a
  // chart (most of them) should not carry it in memory.
  viz ??= import('@viz-js/viz').then((m) => m.instance()).catch((err: unknown) => {
    viz = undefined;
    throw err;
  });
  return viz;
}

/**
 * Render a DOT document to a standalone SVG document (XML declaration
 * included). Throws when Graphviz reports an error.
 */
export async function dotToSvg(dot: string): Promise<string> {
  const g = await graphviz();
  const result = g.render(dot, { format: 'svg', engine: 'dot' });
  if (result.status !== 'success') {
    const messages = result.errors.map((e) => `${e.level ?? 'error'}: ${e.message.trim()}`).join('; ');
    throw new Error(`Graphviz could not render the state chart: ${messages}`);
  }
  return result.output;
}

/** Render `graph` as SVG (see {@link toDot} for the element ids pages can style). */
export function toSvg(graph: MachineGraph, options: DotOptions = {}): Promise<string> {
  return dotToSvg(toDot(graph, options));
}
