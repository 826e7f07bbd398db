/**
 * `npm run conformance`: every client scenario of the official MCP
 * conformance suite (@modelcontextprotocol/conformance, a devDependency)
 * against conformance/client.ts, then one table: scenario, result, checks.
 * Exit 0 only when every scenario passed.
 *
 *   node dist/conformance/run.js [--scenario NAME] [--keep] [--verbose]
 *
 * The suite's bundle imports `fs.globSync` (Node >= 22) for a command we do
 * not use; conformance/node20-hook.mjs lets it load on Node 20.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

interface Check {
  id: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | string;
  errorMessage?: string;
  description?: string;
}

interface Row {
  scenario: string;
  passed: number;
  failed: number;
  warnings: number;
  failures: string[];
}

/**
 * Every client scenario of @modelcontextprotocol/conformance 0.1.16 (its
 * `all` suite; `conformance list` omits the last one). Run a few at a time
 * rather than the suite's all-at-once: on a 2-core box 26 clients at once
 * starve `sse-retry`, which measures the client's reconnect delay.
 */
const SCENARIOS = [
  'initialize',
  'tools_call',
  'elicitation-sep1034-client-defaults',
  'sse-retry',
  'auth/metadata-default',
  'auth/metadata-var1',
  'auth/metadata-var2',
  'auth/metadata-var3',
  'auth/basic-cimd',
  'auth/scope-from-www-authenticate',
  'auth/scope-from-scopes-supported',
  'auth/scope-omitted-when-undefined',
  'auth/scope-step-up',
  'auth/scope-retry-limit',
  'auth/token-endpoint-auth-basic',
  'auth/token-endpoint-auth-post',
  'auth/token-endpoint-auth-none',
  'auth/pre-registration',
  'auth/2025-03-26-oauth-metadata-backcompat',
  'auth/2025-03-26-oauth-endpoint-fallback',
  'auth/resource-mismatch',
  'auth/offline-access-scope',
  'auth/offline-access-not-supported',
  'auth/client-credentials-jwt',
  'auth/client-credentials-basic',
  'auth/cross-app-access-complete-flow',
] as const;

const CONCURRENCY = 2;

// dist/conformance/run.js → the package root.
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const HOOK = join(ROOT, 'conformance', 'node20-hook.mjs');
const CLIENT = join(ROOT, 'dist', 'conformance', 'client.js');

function suiteBin(): string {
  const require = createRequire(join(ROOT, 'package.json'));
  const pkg = require.resolve('@modelcontextprotocol/conformance/package.json');
  return join(dirname(pkg), 'dist', 'index.js');
}

/** Every `checks.json` under `dir`, with the scenario named by its folder (timestamp suffix removed). */
function collect(dir: string): Row[] {
  const rows: Row[] = [];
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (!statSync(p).isDirectory()) continue;
      const checksFile = join(p, 'checks.json');
      if (!existsSync(checksFile)) {
        walk(p);
        continue;
      }
      const scenario = relative(dir, p).replace(/-\d{4}-\d{2}-\d{2}T[\d-]+Z$/, '');
      const checks = JSON.parse(readFileSync(checksFile, 'utf8')) as Check[];
      const failedChecks = checks.filter((c) => c.status === 'FAILURE');
      rows.push({
        scenario,
        passed: checks.filter((c) => c.status === 'SUCCESS').length,
        failed: failedChecks.length,
        warnings: checks.filter((c) => c.status === 'WARNING').length,
        failures: failedChecks.map((c) => `${c.id}: ${c.errorMessage ?? c.description ?? ''}`.trim()),
      });
    }
  };
  walk(dir);
  return rows;
}

function run(cmd: string, args: string[], verbose: boolean): Promise<number> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(cmd, args, { stdio: verbose ? 'inherit' : ['ignore', 'pipe', 'pipe'], cwd: ROOT });
    let tail = '';
    const keep = (chunk: Buffer): void => {
      tail = (tail + chunk.toString()).slice(-4000);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0 && code !== 1) process.stderr.write(tail);
      resolveRun(code ?? 1);
    });
  });
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: { scenario: { type: 'string' }, keep: { type: 'boolean' }, verbose: { type: 'boolean' }, timeout: { type: 'string' } },
  });
  if (!existsSync(CLIENT)) {
    process.stderr.write(`${CLIENT} is missing: run \`npm run build\` first (npm run conformance does).\n`);
    return 2;
  }
  const out = mkdtempSync(join(tmpdir(), 'mcp-conformance-results-'));
  const queue: string[] = values.scenario ? [values.scenario] : [...SCENARIOS];
  const started = Date.now();
  const bin = suiteBin();
  const worker = async (): Promise<void> => {
    for (let scenario = queue.shift(); scenario !== undefined; scenario = queue.shift()) {
      await run(
        process.execPath,
        ['--import', HOOK, bin, 'client', '--command', `${process.execPath} ${CLIENT}`, '--scenario', scenario, '--timeout', values.timeout ?? '30000', '-o', out],
        values.verbose === true,
      );
    }
  };
  try {
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    const rows = collect(out).sort((a, b) => a.scenario.localeCompare(b.scenario));
    if (rows.length === 0) {
      process.stderr.write('the conformance suite produced no results; run with --verbose to see why\n');
      return 1;
    }
    const width = Math.max(...rows.map((r) => r.scenario.length), 8);
    const lines = [`${'scenario'.padEnd(width)}  result  checks`, `${'-'.repeat(width)}  ------  ------`];
    for (const r of rows) {
      const ok = r.failed === 0;
      lines.push(`${r.scenario.padEnd(width)}  ${ok ? 'PASS  ' : 'FAIL  '}  ${r.passed} passed, ${r.failed} failed${r.warnings ? `, ${r.warnings} warnings` : ''}`);
      for (const f of r.failures) lines.push(`${' '.repeat(width)}          ✗ ${f.slice(0, 200)}`);
    }
    const passed = rows.filter((r) => r.failed === 0).length;
    lines.push('', `${passed}/${rows.length} scenarios passed (${((Date.now() - started) / 1000).toFixed(1)} s)`);
    process.stdout.write(`${lines.join('\n')}\n`);
    if (values.keep) process.stdout.write(`results kept in ${out}\n`);
    return passed === rows.length ? 0 : 1;
  } finally {
    if (!values.keep) rmSync(out, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
