/**
 * How conformance/run.ts starts a conformance suite's bundle on this Node.
 *
 * The suites' bundles import `globSync` from `fs` (Node >= 22), used only by
 * their `tier-check` command; on Node 20 that import alone fails to link.
 * conformance/node20-hook.mjs fixes it with a module hook, but a hook runs on
 * a loader thread that every module resolution goes through: about 0.5 s of
 * CPU on each of the ~130 suite processes a full run starts. So on Node 20
 * the runner starts a patched copy instead, the bundle with that one import
 * binding replaced by a stub function, in a mirror of the package under
 * dist/conformance/suites/ whose other entries (package.json, node_modules,
 * requirements, …) are links to the package's own, so every import and file
 * the bundle reads resolves as it does from the package. When the bundle's
 * import is not in the expected form, the hook is used, as before.
 */
import * as fs from 'node:fs';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

/** The bundle with its `globSync` import binding replaced by a function that explains itself, or `undefined` when the import is not there as expected. */
export function withoutGlobSyncImport(bundle: string): string | undefined {
  const fsImport = /import\{([^}]*)\}from"(?:node:)?fs";?/.exec(bundle);
  if (!fsImport) return undefined;
  const bindings = fsImport[1]!.split(',');
  const index = bindings.findIndex((b) => /^\s*globSync(\s+as\s+[\w$]+)?\s*$/.test(b));
  if (index < 0) return undefined;
  const local = /as\s+([\w$]+)/.exec(bindings[index]!)?.[1] ?? 'globSync';
  bindings.splice(index, 1);
  const replacement = bindings.length > 0 ? `import{${bindings.join(',')}}from"fs";` : '';
  // A function declaration is hoisted: defined before any code of the module runs.
  const stub = `\nfunction ${local}(){throw new Error("fs.globSync needs Node >= 22; only the conformance tier-check command uses it, and it is not supported here.")}\n`;
  return bundle.slice(0, fsImport.index) + replacement + bundle.slice(fsImport.index + fsImport[0].length) + stub;
}

/** Mirror `pkgDir` at `mirrorDir` with `binRel` replaced by `patched`; everything else a link to the package's own. Safe to race with another runner doing the same. */
function writeMirror(pkgDir: string, binRel: string, patched: string, mirrorDir: string): void {
  const binFile = join(mirrorDir, binRel);
  const mirrored = (): boolean => existsSync(binFile) && readFileSync(binFile, 'utf8') === patched;
  if (mirrored()) return;
  const building = `${mirrorDir}.${process.pid}.tmp`;
  rmSync(building, { recursive: true, force: true });
  const link = (rel: string): void => {
    const from = join(pkgDir, rel);
    const to = join(building, rel);
    mkdirSync(dirname(to), { recursive: true });
    if (rel === binRel) writeFileSync(to, patched);
    else if (binRel.startsWith(`${rel}/`)) for (const name of readdirSync(from)) link(join(rel, name));
    else symlinkSync(from, to);
  };
  for (const name of readdirSync(pkgDir)) link(name);
  mkdirSync(dirname(mirrorDir), { recursive: true });
  // A stale mirror (another package version under the same name) goes; a fresh one another runner just wrote stays.
  if (existsSync(binFile) && !mirrored()) rmSync(mirrorDir, { recursive: true, force: true });
  try {
    renameSync(building, mirrorDir);
  } catch (err) {
    rmSync(building, { recursive: true, force: true });
    if (!mirrored()) throw err;
  }
}

/**
 * The node arguments that start the suite whose package is `pkgDir` and whose
 * CLI is `bin` (inside it): the bundle itself when this Node has
 * `fs.globSync`, else its patched copy (mirrored under `mirrorDir`), else the
 * bundle behind `hook`.
 */
export function suiteEntry(pkgDir: string, bin: string, mirrorDir: string, hook: string): string[] {
  if (typeof (fs as unknown as Record<string, unknown>).globSync === 'function') return [bin];
  const patched = withoutGlobSyncImport(readFileSync(bin, 'utf8'));
  if (patched === undefined) return ['--import', hook, bin];
  const binRel = relative(pkgDir, bin);
  writeMirror(pkgDir, binRel, patched, mirrorDir);
  return [join(mirrorDir, binRel)];
}
