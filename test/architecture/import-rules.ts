import path from 'node:path';

/** One source file: its repository-relative path (posix) and its text. */
export interface SourceFile {
  path: string;
  text: string;
}

/**
 * The layers of docs/architecture.md, lowest first. A module may import from
 * its own layer or a lower one; folders of one layer must not form a cycle.
 */
export const LAYERS: readonly (readonly string[])[] = [
  ['machines'],
  ['src/util', 'src/errors', 'src/format'],
  ['src/registry', 'src/gating'],
  ['src/config'],
  ['src/approvals', 'src/cache', 'src/search'],
  ['src/connection', 'src/auth'],
  ['src/watch'],
  ['src/controller'],
  ['src/gateway', 'src/dashboard', 'src/viz'],
  ['src/daemon', 'src/cluster'],
  ['src/cli'],
  ['src/index'],
];

const IMPORT = /(?:^|[\s;])(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

/** Every module specifier `text` imports or re-exports, static or dynamic. */
export function importsOf(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(IMPORT)) out.push((m[1] ?? m[2])!);
  return out;
}

/** `src/config/load.ts` → `src/config`; `src/index.ts` → `src/index`; `machines/x.ts` → `machines`. */
export function folderOf(file: string): string {
  const parts = file.split('/');
  if (parts[0] === 'machines') return 'machines';
  return parts.length > 2 ? parts.slice(0, 2).join('/') : file.replace(/\.ts$/, '');
}

function layerOf(folder: string): number {
  return LAYERS.findIndex((layer) => layer.includes(folder));
}

function resolveRelative(from: string, spec: string): string {
  return path.posix.normalize(path.posix.join(path.posix.dirname(from), spec)).replace(/\.js$/, '.ts');
}

/** Strongly connected components with more than one node (or a self loop), by Tarjan's algorithm. */
function cycles(graph: ReadonlyMap<string, ReadonlySet<string>>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || graph.get(v)?.has(v)) out.push(component.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return out;
}

/** One path around a component, for the message: `a → b → a`. */
function describeCycle(component: readonly string[], graph: ReadonlyMap<string, ReadonlySet<string>>): string {
  const members = new Set(component);
  const start = component[0]!;
  const pathTaken = [start];
  const seen = new Set([start]);
  let at = start;
  for (;;) {
    const nexts = [...(graph.get(at) ?? [])].filter((n) => members.has(n)).sort();
    const back = nexts.find((n) => n === start);
    const fresh = nexts.find((n) => !seen.has(n));
    if (fresh === undefined || (back !== undefined && pathTaken.length > 1)) {
      pathTaken.push((back ?? nexts[0])!);
      return pathTaken.join(' → ');
    }
    pathTaken.push(fresh);
    seen.add(fresh);
    at = fresh;
  }
}

/**
 * Every broken rule among `files`, as a sentence; empty when none is: a cycle
 * between files, a cycle between folders, an import of a higher layer, and a
 * machine importing anything but `xstate` and `machines/`.
 */
export function checkImports(files: readonly SourceFile[]): string[] {
  const problems: string[] = [];
  const fileGraph = new Map<string, Set<string>>();
  const folderGraph = new Map<string, Set<string>>();
  for (const file of files) {
    const edges = new Set<string>();
    fileGraph.set(file.path, edges);
    const from = folderOf(file.path);
    if (!folderGraph.has(from)) folderGraph.set(from, new Set());
    for (const spec of importsOf(file.text)) {
      const relative = spec.startsWith('.');
      if (from === 'machines') {
        const target = relative ? resolveRelative(file.path, spec) : spec;
        if (!(spec === 'xstate' || spec.startsWith('xstate/') || (relative && target.startsWith('machines/')))) {
          problems.push(`${file.path} imports ${target}: machines/ may import only xstate and machines/`);
        }
      }
      if (!relative) continue;
      const target = resolveRelative(file.path, spec);
      edges.add(target);
      const to = folderOf(target);
      if (to === from) continue;
      folderGraph.get(from)!.add(to);
      const fromLayer = layerOf(from);
      const toLayer = layerOf(to);
      if (from !== 'machines' && fromLayer >= 0 && toLayer > fromLayer) {
        problems.push(`${file.path} imports ${target}: ${to} is in a higher layer than ${from} (docs/architecture.md)`);
      }
    }
  }
  for (const component of cycles(fileGraph)) problems.push(`import cycle: ${describeCycle(component, fileGraph)}`);
  for (const component of cycles(folderGraph)) problems.push(`folder cycle: ${describeCycle(component, folderGraph)}`);
  return problems;
}
