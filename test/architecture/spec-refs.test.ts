import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot, tsFiles } from './source-files.js';

// Code comments cite docs/spec.md by section (`SPEC §5`) and never an issue
// number: every citation must resolve, or the reader is left with nothing.

describe('citations in code comments', () => {
  const files = ['machines', 'src', 'test', 'bench', 'conformance'].flatMap(tsFiles);
  const sections = new Set([...readFileSync(path.join(repoRoot, 'docs/spec.md'), 'utf8').matchAll(/^#{2,3} (\d+(?:\.\d+)?)\.? /gm)].map((m) => m[1]));

  it('every SPEC § reference names a section of docs/spec.md', () => {
    const dangling: string[] = [];
    for (const file of files) {
      for (const m of readFileSync(path.join(repoRoot, file), 'utf8').matchAll(/SPEC §(\d+(?:\.\d+)?)/g)) {
        if (!sections.has(m[1]!)) dangling.push(`${file}: SPEC §${m[1]}`);
      }
    }
    expect(sections.size).toBeGreaterThan(10);
    expect(dangling).toEqual([]);
  });

  it('no comment cites an issue number', () => {
    const cited = files.filter((file) => file !== 'test/architecture/spec-refs.test.ts' && /\b[Ii]ssues? \d+\b/.test(readFileSync(path.join(repoRoot, file), 'utf8')));
    expect(cited).toEqual([]);
  });
});
