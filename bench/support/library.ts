import { join } from 'node:path';

/**
 * The library as a host gets it: the package's published entry (the bundle
 * in dist/lib, see rolldown.config.mjs), so that start-up time and RSS are
 * what an embedding host pays. The specifier is a variable so the typecheck
 * does not need a build.
 */
type Library = typeof import('../../src/index.js');

const ENTRY = 'mcp-reconciler';

/** Import the published entry point. */
export async function loadLibrary(): Promise<Library> {
  return (await import(ENTRY)) as Library;
}

/**
 * What every bench controller shares: `dir` as its cwd, one user-scope config
 * file, and approvals kept in `dir` (spread it, then add the measurement's own options).
 */
export function userConfigOptions(dir: string, configPath: string, approvalsFile = 'approvals.json'): { cwd: string; sources: { scope: 'user'; path: string }[]; approvals: string } {
  return { cwd: dir, sources: [{ scope: 'user', path: configPath }], approvals: join(dir, approvalsFile) };
}
