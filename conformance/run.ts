/**
 * `npm run conformance`: every client scenario of the official MCP
 * conformance suite (@modelcontextprotocol/conformance, a devDependency)
 * against conformance/client.ts, then one table: scenario, result, checks.
 * Exit 0 only when every scenario passed.
 *
 *   node dist/conformance/run.js [--scenario NAME] [--concurrency N] [--retries N]
 *                                [--timeout MS] [--json FILE] [--keep] [--verbose]
 *
 * --concurrency  scenarios run at once (default 2)
 * --retries      re-run a failed scenario up to N more times (default 0); a
 *                pass on a later attempt is marked in the table
 * --json FILE    also write the rows as JSON (test/conformance reads it)
 *
 * Each scenario runs in its own process group, which is killed once the
 * scenario is over (or this runner is interrupted), so no client outlives it.
 *
 * The suite's bundle imports `fs.globSync` (Node >= 22) for a command we do
 * not use; conformance/node20-hook.mjs lets it load on Node 20.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { SCENARIOS } from './scenarios.js';

interface Check {
  id: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | string;
  errorMessage?: string;
  description?: string;
}

export interface Row {
  scenario: string;
  passed: number;
  failed: number;
  warnings: number;
  failures: string[];
  /** 1 unless the scenario failed before and was run again (--retries). */
  attempts: number;
  /** Wall time of the last attempt. */
  seconds: number;
}



const DEFAULT_CONCURRENCY = 2;

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
        attempts: 1,
        seconds: 0,
      });
    }
  };
  walk(dir);
  return rows;
}

/** Process groups of the scenarios running now (killed on the way out). */
const running = new Set<number>();
/** The results folder to remove on the way out (unless --keep). */
let scratch: string | undefined;

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
}

/** Run one scenario in its own process group; whatever is left of the group afterwards is killed. */
function run(cmd: string, args: string[], verbose: boolean, tmp: string): Promise<number> {
  return new Promise((resolveRun, reject) => {
    // TMPDIR inside the results folder: what a killed client leaves behind goes with it.
    const env = { ...process.env, TMPDIR: tmp };
    const child = spawn(cmd, args, { stdio: verbose ? 'inherit' : ['ignore', 'pipe', 'pipe'], cwd: ROOT, detached: true, env });
    if (child.pid !== undefined) running.add(child.pid);
    let tail = '';
    const keep = (chunk: Buffer): void => {
      tail = (tail + chunk.toString()).slice(-4000);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    child.on('error', reject);
    child.on('close', (code) => {
      if (child.pid !== undefined) {
        // The suite's client (a grandchild) must not outlive its scenario.
        killGroup(child.pid, 'SIGKILL');
        running.delete(child.pid);
      }
      if (code !== 0 && code !== 1) process.stderr.write(tail);
      resolveRun(code ?? 1);
    });
  });
}

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(signal, () => {
    for (const pid of running) killGroup(pid, 'SIGKILL');
    if (scratch) rmSync(scratch, { recursive: true, force: true });
    process.exit(signal === 'SIGINT' ? 130 : 143);
  });
}

function positiveInt(value: string | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a whole number, got ${value}`);
  return n;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      scenario: { type: 'string' },
      keep: { type: 'boolean' },
      verbose: { type: 'boolean' },
      timeout: { type: 'string' },
      concurrency: { type: 'string' },
      retries: { type: 'string' },
      json: { type: 'string' },
    },
  });
  const concurrency = Math.max(1, positiveInt(values.concurrency, DEFAULT_CONCURRENCY, 'concurrency'));
  const retries = positiveInt(values.retries, 0, 'retries');
  if (!existsSync(CLIENT)) {
    process.stderr.write(`${CLIENT} is missing: run \`npm run build\` first (npm run conformance does).\n`);
    return 2;
  }
  const out = mkdtempSync(join(tmpdir(), 'mcp-conformance-results-'));
  if (!values.keep) scratch = out;
  const tmp = join(out, 'tmp');
  mkdirSync(tmp);
  const queue: string[] = values.scenario ? [values.scenario] : [...SCENARIOS];
  const started = Date.now();
  const bin = suiteBin();
  const rows: Row[] = [];
  let runs = 0;
  /** One attempt: its own results folder, so a retry does not mix with the first try. */
  const attempt = async (scenario: string, n: number): Promise<Row> => {
    const dir = join(out, String(++runs));
    const t0 = Date.now();
    await run(
      process.execPath,
      ['--import', HOOK, bin, 'client', '--command', `${process.execPath} ${CLIENT}`, '--scenario', scenario, '--timeout', values.timeout ?? '30000', '-o', dir],
      values.verbose === true,
      tmp,
    );
    const found = existsSync(dir) ? collect(dir) : [];
    const row: Row = found.find((r) => r.scenario === scenario) ?? {
      scenario,
      passed: 0,
      failed: 1,
      warnings: 0,
      failures: ['the suite wrote no results for this scenario (run it with --verbose)'],
      attempts: 1,
      seconds: 0,
    };
    return { ...row, attempts: n, seconds: (Date.now() - t0) / 1000 };
  };
  const worker = async (): Promise<void> => {
    for (let scenario = queue.shift(); scenario !== undefined; scenario = queue.shift()) {
      let row = await attempt(scenario, 1);
      while (row.failed > 0 && row.attempts <= retries) row = await attempt(scenario, row.attempts + 1);
      rows.push(row);
    }
  };
  try {
    await Promise.all(Array.from({ length: concurrency }, worker));
    rows.sort((a, b) => a.scenario.localeCompare(b.scenario));
    if (rows.length === 0) {
      process.stderr.write('the conformance suite produced no results; run with --verbose to see why\n');
      return 1;
    }
    const width = Math.max(...rows.map((r) => r.scenario.length), 8);
    const lines = [`${'scenario'.padEnd(width)}  result  checks`, `${'-'.repeat(width)}  ------  ------`];
    for (const r of rows) {
      const ok = r.failed === 0;
      const retried = r.attempts > 1 ? ` (attempt ${r.attempts})` : '';
      lines.push(
        `${r.scenario.padEnd(width)}  ${ok ? 'PASS  ' : 'FAIL  '}  ${r.passed} passed, ${r.failed} failed${r.warnings ? `, ${r.warnings} warnings` : ''}, ${r.seconds.toFixed(1)} s${retried}`,
      );
      for (const f of r.failures) lines.push(`${' '.repeat(width)}          ✗ ${f.slice(0, 200)}`);
    }
    const passed = rows.filter((r) => r.failed === 0).length;
    lines.push('', `${passed}/${rows.length} scenarios passed (${((Date.now() - started) / 1000).toFixed(1)} s)`);
    process.stdout.write(`${lines.join('\n')}\n`);
    if (values.json) writeFileSync(values.json, `${JSON.stringify(rows, null, 2)}\n`);
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
