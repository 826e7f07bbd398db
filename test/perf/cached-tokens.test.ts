/**
 * docs/context-budget.md, SPEC §12: the listing cache keeps each tool's token
 * count, so a second controller on the same cache directory reports the same
 * counts without loading the tokenizer (~0.4–0.9 s, ~71 MB). Each controller
 * runs in its own host process (a fresh module registry), importing the built
 * library, and reports its tools' tokens and whether gpt-tokenizer was loaded.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { fixturePath, repoRoot } from '../helpers/fixtures.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

interface HostRun {
  tokens: Record<string, number>;
  tokenizerLoaded: boolean;
  /** Each server row's `tokens` (read after the tools', so it never loads the tokenizer itself). */
  serverTokens: number[];
}

/** One host process: start a controller on `dir`'s settings and cache, read every tool's tokens, dispose. */
function runHost(dir: string): HostRun {
  const entry = pathToFileURL(join(repoRoot, 'dist/src/index.js')).href;
  const host = `
    import { createRequire } from 'node:module';
    const { createMcpController } = await import(${JSON.stringify(entry)});
    const c = createMcpController({ cwd: ${JSON.stringify(dir)}, sources: [{ scope: 'user', path: ${JSON.stringify(join(dir, 'settings.json'))} }],
      approvals: ${JSON.stringify(join(dir, 'approvals.json'))}, watch: false, listingCache: ${JSON.stringify(join(dir, 'cache'))}, processStateFile: false });
    let out;
    try {
      await c.start();
      // start() may return before a cold server has listed (a busy machine): wait for its tools, generously.
      for (let i = 0; i < 600 && c.tools().length === 0; i++) await new Promise((r) => setTimeout(r, 100));
      const tools = c.tools();
      if (tools.length === 0) throw new Error('no tools: ' + JSON.stringify(c.status()));
      const tokens = Object.fromEntries(tools.map((t) => [t.name, t.tokens]));
      const rows = c.status();
      const loaded = Object.keys(createRequire(import.meta.url).cache).some((k) => k.includes('gpt-tokenizer'));
      out = { tokens, tokenizerLoaded: loaded, serverTokens: rows.map((r) => r.tokens) };
    } finally { await c.dispose(); }
    process.stdout.write(JSON.stringify(out));
  `;
  const stdout = execFileSync(process.execPath, ['--input-type=module', '-e', host], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
  return JSON.parse(stdout.toString()) as HostRun;
}

function workspace(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cached-tokens-'));
  dirs.push(dir);
  writeFileSync(join(dir, 'settings.json'), JSON.stringify({ mcpServers: { s: { command: process.execPath, args: [fixturePath('basic-server')] } } }));
  return dir;
}

describe('token counts in the listing cache', () => {
  it('a warm start reports the same tokens per tool without loading gpt-tokenizer', () => {
    const dir = workspace();
    const cold = runHost(dir);
    expect(cold.tokenizerLoaded).toBe(true);
    expect(Object.values(cold.tokens).every((n) => Number.isInteger(n) && n > 0)).toBe(true);
    const warm = runHost(dir);
    expect(warm.tokens).toEqual(cold.tokens);
    expect(warm.serverTokens).toEqual(cold.serverTokens);
    expect(warm.tokenizerLoaded).toBe(false);
  });

  it('a cache file without counts still loads; its tools are counted when asked, and the counts are then stored', () => {
    const dir = workspace();
    const cold = runHost(dir);
    const cacheDir = join(dir, 'cache');
    const [file] = readdirSync(cacheDir).filter((f) => f.endsWith('.json'));
    const doc = JSON.parse(readFileSync(join(cacheDir, file!), 'utf8')) as Record<string, unknown>;
    expect(Object.values(doc.tokens as Record<string, number>).sort()).toEqual(Object.values(cold.tokens).sort());
    // An older file: no counts (and one with malformed counts reads the same).
    delete doc.tokens;
    writeFileSync(join(cacheDir, file!), JSON.stringify({ ...doc, tokens: { x: 'many' } }), { mode: 0o600 });
    const old = runHost(dir);
    expect(old.tokens).toEqual(cold.tokens);
    expect(old.tokenizerLoaded).toBe(true);
    const again = runHost(dir);
    expect(again.tokens).toEqual(cold.tokens);
    expect(again.tokenizerLoaded).toBe(false);
  });
});
