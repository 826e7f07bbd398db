import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// Code comments cite docs/spec.md by section (`SPEC §5`) and never an issue
// number: every citation must resolve, or the reader is left with nothing.

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(path.join(repoRoot, dir), { withFileTypes: true })) {
    const rel = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...tsFiles(rel));
    else if (entry.name.endsWith('.ts')) out.push(rel);
  }
  return out;
}

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
