/**
 * conformance/suite-entry.ts: on Node 20 the runner starts a copy of each
 * conformance bundle with its `fs.globSync` import replaced by a stub, so no
 * module hook (and its loader thread) runs in each of the ~130 suite
 * processes. The copy must run as the bundle does: same CLI, same files.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { suiteEntry, withoutGlobSyncImport } from '../../conformance/suite-entry.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const HOOK = join(ROOT, 'conformance', 'node20-hook.mjs');
const require = createRequire(join(ROOT, 'package.json'));
const pkgDir = (name: string): string => dirname(require.resolve(`${name}/package.json`));

describe('withoutGlobSyncImport', () => {
  it('drops the globSync binding from the fs import and defines it as a function that explains itself', () => {
    const patched = withoutGlobSyncImport('import{existsSync as i,globSync as a,mkdtempSync as o}from"fs";a();')!;
    expect(patched).toMatch(/^import\{existsSync as i,mkdtempSync as o\}from"fs";a\(\);\nfunction a\(\)\{throw new Error\("fs\.globSync needs Node >= 22/);
  });

  it('handles the binding alone and unaliased', () => {
    expect(withoutGlobSyncImport('import{globSync}from"node:fs";x()')).toMatch(/^x\(\)\nfunction globSync\(\)/);
  });

  it('is undefined when there is no such import (the runner then uses the hook)', () => {
    expect(withoutGlobSyncImport('import{existsSync as i}from"fs";')).toBeUndefined();
    expect(withoutGlobSyncImport('const x = 1;')).toBeUndefined();
  });
});

describe('suiteEntry on the installed suites', () => {
  // Under the package root, as the runner's mirrors are (dist/conformance/suites/): imports resolve from there.
  mkdirSync(join(ROOT, 'dist'), { recursive: true });
  const scratch = mkdtempSync(join(ROOT, 'dist', '.suite-entry-test-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it.each(['@modelcontextprotocol/conformance', '@modelcontextprotocol/conformance-next'])('%s runs from its entry without the hook, as the bundle does behind it', (name) => {
    const dir = pkgDir(name);
    const bin = join(dir, 'dist', 'index.js');
    const entry = suiteEntry(dir, bin, join(scratch, name.replace('/', '+')), HOOK);
    const nodeHasGlobSync = typeof (require('node:fs') as Record<string, unknown>).globSync === 'function';
    expect(entry).not.toContain('--import');
    if (!nodeHasGlobSync) expect(entry[0]).not.toBe(bin);
    // Built twice (as two runners would): the second finds the first.
    expect(suiteEntry(dir, bin, join(scratch, name.replace('/', '+')), HOOK)).toEqual(entry);
    const run = (args: string[]): string => {
      const r = spawnSync(process.execPath, args, { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
      expect(r.status, r.stderr).toBe(0);
      return r.stdout;
    };
    const version = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string };
    expect(run([...entry, '--version']).trim()).toBe(version.version);
    // The scenario list (and, for the newest suite, the requirements it reads beside its bundle) as behind the hook.
    const list = name.endsWith('-next') ? ['list', '--requirements', '2026-07-28'] : ['list'];
    expect(run([...entry, ...list])).toBe(run(['--import', HOOK, bin, ...list]));
  }, 240_000);
});
