import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** What {@link findOwnPackage} found: the package's folder, version and bin map. */
export interface OwnPackage {
  dir: string;
  version: string;
  bin: Record<string, string>;
}

/**
 * The nearest `package.json` named `mcp-reconciler` at or above `dir`
 * (src/, dist/src/ and the bundles sit at different depths); `undefined`
 * when there is none. A package.json that does not parse is not ours.
 */
export function findOwnPackage(dir: string): OwnPackage | undefined {
  for (;;) {
    const candidate = join(dir, 'package.json');
    if (existsSync(candidate)) {
      try {
        const pkg = JSON.parse(readFileSync(candidate, 'utf8')) as { name?: string; version?: string; bin?: Record<string, string> };
        if (pkg.name === 'mcp-reconciler') return { dir, version: pkg.version ?? 'unknown', bin: pkg.bin ?? {} };
      } catch {
        // not ours; keep walking
      }
    }
    const up = dirname(dir);
    if (up === dir) return undefined;
    dir = up;
  }
}
