import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkImports, LAYERS, type SourceFile } from './import-rules.js';
import { repoRoot, tsFiles } from './source-files.js';

// The layering of docs/architecture.md, checked on the real sources: no
// import cycles (between files or between folders), no import of a higher
// layer, and machines/ importing nothing but xstate and machines/.

function sources(dir: string): SourceFile[] {
  return tsFiles(dir).map((rel) => ({ path: rel, text: readFileSync(path.join(repoRoot, rel), 'utf8') }));
}

describe('import rules (docs/architecture.md)', () => {
  const files = [...sources('machines'), ...sources('src')];

  it('the real sources break none of them', () => {
    expect(checkImports(files)).toEqual([]);
  });

  it('every folder of src/ has a layer', () => {
    const folders = new Set(files.filter((f) => f.path.startsWith('src/')).map((f) => f.path.split('/').slice(0, 2).join('/').replace(/\.ts$/, '')));
    const missing = [...folders].filter((f) => !LAYERS.some((layer) => layer.includes(f)));
    expect(missing).toEqual([]);
  });

  it('fails on a planted cycle between two files', () => {
    const planted: SourceFile[] = [
      { path: 'src/config/a.ts', text: "import { b } from './b.js';" },
      { path: 'src/config/b.ts', text: "import { a } from './a.js';" },
    ];
    expect(checkImports(planted).join('\n')).toMatch(/cycle: src\/config\/a\.ts → src\/config\/b\.ts → src\/config\/a\.ts/);
  });

  it('fails on a planted cycle between folders', () => {
    const planted: SourceFile[] = [
      { path: 'src/config/a.ts', text: "import { b } from '../gating/b.js';" },
      { path: 'src/gating/b.ts', text: "import { c } from '../config/c.js';" },
      { path: 'src/config/c.ts', text: 'export const c = 1;' },
    ];
    expect(checkImports(planted).join('\n')).toMatch(/folder cycle/);
  });

  it('fails on a lower layer importing a higher one', () => {
    const planted: SourceFile[] = [{ path: 'src/registry/x.ts', text: "import type { McpController } from '../controller/controller.js';" }];
    expect(checkImports(planted)).toEqual([expect.stringMatching(/src\/registry\/x\.ts imports src\/controller\/controller\.ts: .*higher layer/)]);
  });

  it('fails on machines/ importing anything but xstate', () => {
    const planted: SourceFile[] = [
      { path: 'machines/x.ts', text: "import { readFileSync } from 'node:fs';\nimport { setup } from 'xstate';" },
      { path: 'machines/y.ts', text: "import { z } from '../src/util/z.js';" },
    ];
    const problems = checkImports(planted);
    expect(problems).toContainEqual(expect.stringMatching(/machines\/x\.ts imports node:fs/));
    expect(problems).toContainEqual(expect.stringMatching(/machines\/y\.ts imports src\/util\/z\.ts/));
    expect(problems).toHaveLength(2);
  });
});
