import { join } from 'node:path';

/**
 * The library as a host gets it: the package's published entry (the bundle
 * in dist/lib, see rolldown.config.mjs), so that start-up time and RSS are
 * what an embedding host pays. The specifier is a variable so the typecheck
 * does not need a build.
 */
type Library = typeof import('../../src/index.js');

/**
 * `MCP_RECONCILER_BENCH_LIBRARY` points the controller side at another
 * build's entry (its `dist/lib/index.js`), so two builds can be measured
 * against the same raw host in one run (docs/performance.md).
 */
const ENTRY = process.env.MCP_RECONCILER_BENCH_LIBRARY ?? 'mcp-reconciler';

/**
 * Import the published entry point (or the build `MCP_RECONCILER_BENCH_LIBRARY`
 * names), or `entry` when given: another build's `dist/lib/index.js` that a
 * measurement runs beside this one (`--compare`).
 */
export async function loadLibrary(entry: string = ENTRY): Promise<Library> {
  return (await import(entry)) as Library;
}

/**
 * What every bench controller shares: `dir` as its cwd, one user-scope config
 * file, and approvals kept in `dir` (spread it, then add the measurement's own options).
 */
export function userConfigOptions(dir: string, configPath: string, approvalsFile = 'approvals.json'): { cwd: string; sources: { scope: 'user'; path: string }[]; approvals: string } {
  return { cwd: dir, sources: [{ scope: 'user', path: configPath }], approvals: join(dir, approvalsFile) };
}
