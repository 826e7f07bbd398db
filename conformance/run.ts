/**
 * `npm run conformance`: the official MCP conformance suites against our
 * client (conformance/client.ts, the public API only), one table each.
 *
 * - `current`: every client scenario of @modelcontextprotocol/conformance
 *   0.1.16 (the 2025 wire), our client only.
 * - `next`: the newest suite (installed as @modelcontextprotocol/conformance-next,
 *   0.2.0-alpha.12): the client scenarios each protocol revision requires
 *   (`list --requirements <revision>`), each run at that revision's wire
 *   (`--spec-version`): 2025-11-25 (the `initialize` handshake) and
 *   2026-07-28 (stateless, per-request `_meta`). Every scenario runs twice:
 *   our client, and beside it the SDK's raw v2 client (conformance/client-v2.ts),
 *   so a failure shows whether it is ours. A client that exits with an error
 *   fails its scenario, as the suite itself says (OVERALL: FAILED).
 *
 * Exit 0 only when every scenario of our client passed.
 *
 *   node dist/conformance/run.js [--suite current|next|all] [--wire REVISION]
 *                                [--scenario NAME] [--concurrency N] [--retries N]
 *                                [--skip-shared-retries WIRES] [--timeout MS]
 *                                [--json FILE] [--keep] [--verbose] [--help]
 *
 * --suite        which suites (default all)
 * --wire         the `next` suite at one revision only (2025-11-25 or 2026-07-28)
 * --concurrency  scenarios run at once (default 2)
 * --retries      re-run a failed scenario up to N more times (default 0), once
 *                every scenario had its first run; a pass on a later attempt
 *                is marked in the table
 * --skip-shared-retries WIRES
 *                at these wires of the `next` suite (comma-separated, or
 *                `all`) a failure is not re-run when it cannot change the
 *                verdict on our client: both clients failed the same checks
 *                with the same messages, or the raw client failed beside our
 *                pass. Ours failing beside the raw client's pass is re-run.
 *                (conformance/retries.ts)
 * --json FILE    also write the rows as JSON (test/conformance reads it)
 *
 * Each scenario runs in its own process group, which is killed once the
 * scenario is over (or this runner is interrupted), so no client outlives it.
 *
 * The suites' bundles import `fs.globSync` (Node >= 22) for a command we do
 * not use; on Node 20 a patched copy of each runs (conformance/suite-entry.ts),
 * or, failing that, the bundle behind conformance/node20-hook.mjs.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { NO_RESULTS, shouldRetry } from './retries.js';
import type { ClientKind, Row } from './row.js';
import { SCENARIOS } from './scenarios.js';
import { suiteEntry } from './suite-entry.js';

export type { ClientKind, Row } from './row.js';

interface Check {
  id: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | string;
  errorMessage?: string;
  description?: string;
}

const DEFAULT_CONCURRENCY = 2;

/** What --help prints (the header above says more). */
const USAGE = `usage: node dist/conformance/run.js [options]   (npm run conformance -- [options])

  --suite current|next|all   which suites (default all)
  --wire REVISION            the next suite at one revision only (2025-11-25 or 2026-07-28)
  --scenario NAME            one scenario only
  --concurrency N            scenarios run at once (default ${DEFAULT_CONCURRENCY})
  --retries N                re-run a failed scenario up to N more times, after every
                             scenario's first run (default 0)
  --skip-shared-retries WIRES
                             at these wires (comma-separated, or all) do not re-run a
                             failure that cannot change the verdict on our client: one
                             both clients share (same checks, same messages), or the raw
                             client's beside our pass
  --timeout MS               the suite's per-scenario client timeout (default 30000)
  --json FILE                also write the rows as JSON
  --keep                     keep the suite's results folder
  --verbose                  show the suite's own output
`;

// dist/conformance/run.js → the package root.
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const HOOK = join(ROOT, 'conformance', 'node20-hook.mjs');
const CLIENTS: Record<ClientKind, string> = {
  ours: join(ROOT, 'dist', 'conformance', 'client.js'),
  'raw-v2': join(ROOT, 'dist', 'conformance', 'client-v2.js'),
};

/** The suites: 0.1.16 as `@modelcontextprotocol/conformance`, the newest as the `-next` alias. */
const SUITE_PACKAGES = { current: '@modelcontextprotocol/conformance', next: '@modelcontextprotocol/conformance-next' } as const;
type SuiteName = keyof typeof SUITE_PACKAGES;

/** The revisions whose required client scenarios the `next` suite runs, each at its own wire. */
export const WIRES = ['2025-11-25', '2026-07-28'] as const;

/** A suite: its version and the node arguments that start its CLI (conformance/suite-entry.ts). */
function suiteOf(name: SuiteName): { entry: string[]; version: string } {
  const require = createRequire(join(ROOT, 'package.json'));
  const pkgFile = require.resolve(`${SUITE_PACKAGES[name]}/package.json`);
  const { version } = JSON.parse(readFileSync(pkgFile, 'utf8')) as { version: string };
  const pkgDir = dirname(pkgFile);
  const entry = suiteEntry(pkgDir, join(pkgDir, 'dist', 'index.js'), join(ROOT, 'dist', 'conformance', 'suites', `${name}-${version}`), HOOK);
  return { entry, version };
}

/** The client scenarios `revision` requires, as the suite lists them (`list --requirements`). */
function requiredClientScenarios(entry: string[], revision: string): string[] {
  const listed = spawnSync(process.execPath, [...entry, 'list', '--requirements', revision], { cwd: ROOT, encoding: 'utf8' });
  if (listed.status !== 0) throw new Error(`the conformance suite could not list the requirements of ${revision}:\n${listed.stderr}`);
  const out: string[] = [];
  let inClients = false;
  for (const line of listed.stdout.split('\n')) {
    if (/^Client scenarios/.test(line)) inClients = true;
    else if (/^\S/.test(line)) inClients = false;
    else if (inClients) {
      const m = /^\s+- (\S+)/.exec(line);
      if (m) out.push(m[1]!);
    }
  }
  return out;
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
        suite: '',
        wire: '',
        client: 'ours',
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

/** One scenario to run: which suite, at which wire, with which client. */
interface Job {
  suite: SuiteName;
  wire: string | undefined;
  client: ClientKind;
  scenario: string;
}

const mark = (r: Row): string => (r.failed === 0 ? 'PASS' : 'FAIL');
const checks = (r: Row): string => `${r.passed} passed, ${r.failed} failed${r.warnings ? `, ${r.warnings} warnings` : ''}`;

/** The 0.1.16 table: scenario, result, checks (our client only). */
function currentTable(rows: Row[]): string[] {
  const width = Math.max(...rows.map((r) => r.scenario.length), 8);
  const lines = [`${'scenario'.padEnd(width)}  result  checks`, `${'-'.repeat(width)}  ------  ------`];
  for (const r of rows) {
    const retried = r.attempts > 1 ? ` (attempt ${r.attempts})` : '';
    lines.push(`${r.scenario.padEnd(width)}  ${mark(r)}    ${checks(r)}, ${r.seconds.toFixed(1)} s${retried}`);
    for (const f of r.failures) lines.push(`${' '.repeat(width)}          ✗ ${f.slice(0, 200)}`);
  }
  const passed = rows.filter((r) => r.failed === 0).length;
  lines.push('', `${passed}/${rows.length} scenarios passed`);
  return lines;
}

/** The newest suite's table: per wire, each scenario with our result beside the raw v2 client's. */
function nextTable(rows: Row[]): string[] {
  const width = Math.max(...rows.map((r) => r.scenario.length), 8);
  const lines: string[] = [];
  const summary: string[] = [];
  for (const wire of [...new Set(rows.map((r) => r.wire))]) {
    const at = rows.filter((r) => r.wire === wire);
    const scenarios = [...new Set(at.map((r) => r.scenario))];
    lines.push('', `wire ${wire}`, `${'scenario'.padEnd(width)}  ours                          raw SDK v2`, `${'-'.repeat(width)}  ----------------------------  ----------------------------`);
    for (const scenario of scenarios) {
      const ours = at.find((r) => r.scenario === scenario && r.client === 'ours');
      const raw = at.find((r) => r.scenario === scenario && r.client === 'raw-v2');
      const cell = (r: Row | undefined): string => (r ? `${mark(r)}  ${r.passed}/${r.passed + r.failed} checks${r.attempts > 1 ? ` (try ${r.attempts})` : ''}` : '-').padEnd(28);
      lines.push(`${scenario.padEnd(width)}  ${cell(ours)}  ${cell(raw)}`);
      for (const f of ours?.failures ?? []) lines.push(`${' '.repeat(width)}  ours ✗ ${f.slice(0, 160)}`);
      for (const f of raw?.failures ?? []) lines.push(`${' '.repeat(width)}  raw  ✗ ${f.slice(0, 160)}`);
    }
    const count = (client: ClientKind): string => {
      const mine = at.filter((r) => r.client === client);
      return `${mine.filter((r) => r.failed === 0).length}/${mine.length}`;
    };
    summary.push(`wire ${wire}: ours ${count('ours')}, raw SDK v2 ${count('raw-v2')} scenarios passed`);
  }
  return [...lines, '', ...summary];
}

async function main(): Promise<number> {
  const text = { type: 'string' } as const;
  const flag = { type: 'boolean' } as const;
  let parsed;
  try {
    parsed = parseArgs({
      options: { suite: text, wire: text, scenario: text, keep: flag, verbose: flag, timeout: text, concurrency: text, retries: text, 'skip-shared-retries': text, json: text, help: { ...flag, short: 'h' } },
    });
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n\n${USAGE}`);
    return 2;
  }
  const { values } = parsed;
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const concurrency = Math.max(1, positiveInt(values.concurrency, DEFAULT_CONCURRENCY, 'concurrency'));
  const retries = positiveInt(values.retries, 0, 'retries');
  const sharedFinal = (values['skip-shared-retries'] ?? '').split(',').map((w) => w.trim()).filter((w) => w !== '');
  for (const wire of sharedFinal) {
    if (wire !== 'all' && !(WIRES as readonly string[]).includes(wire)) {
      process.stderr.write(`--skip-shared-retries takes wires (${WIRES.join(', ')}, comma-separated) or all, got ${wire}\n`);
      return 2;
    }
  }
  const comparing = (wire: string | undefined): boolean => wire !== undefined && (sharedFinal.includes('all') || sharedFinal.includes(wire));
  const which = values.suite ?? 'all';
  if (!['current', 'next', 'all'].includes(which)) throw new Error(`--suite must be current, next or all, got ${which}`);
  if (values.wire !== undefined && !(WIRES as readonly string[]).includes(values.wire)) throw new Error(`--wire must be one of ${WIRES.join(', ')}, got ${values.wire}`);
  for (const client of Object.values(CLIENTS)) {
    if (!existsSync(client)) {
      process.stderr.write(`${client} is missing: run \`npm run build\` first (npm run conformance does).\n`);
      return 2;
    }
  }
  const suites = { current: suiteOf('current'), next: suiteOf('next') };
  const jobs: Job[] = [];
  if (which !== 'next') {
    for (const scenario of values.scenario ? [values.scenario] : SCENARIOS) jobs.push({ suite: 'current', wire: undefined, client: 'ours', scenario });
  }
  if (which !== 'current') {
    for (const wire of values.wire ? [values.wire] : WIRES) {
      const required = requiredClientScenarios(suites.next.entry, wire);
      for (const scenario of values.scenario ? required.filter((s) => s === values.scenario) : required) {
        for (const client of ['ours', 'raw-v2'] as const) jobs.push({ suite: 'next', wire, client, scenario });
      }
    }
  }
  const out = mkdtempSync(join(tmpdir(), 'mcp-conformance-results-'));
  if (!values.keep) scratch = out;
  const tmp = join(out, 'tmp');
  mkdirSync(tmp);
  const started = Date.now();
  const rows: Row[] = [];
  let runs = 0;
  /** One attempt: its own results folder, so a retry does not mix with the first try. */
  const attempt = async (job: Job, n: number): Promise<Row> => {
    const dir = join(out, String(++runs));
    const t0 = Date.now();
    const { entry, version } = suites[job.suite];
    const code = await run(
      process.execPath,
      [
        ...entry,
        'client',
        '--command',
        `${process.execPath} ${CLIENTS[job.client]}`,
        '--scenario',
        job.scenario,
        ...(job.wire ? ['--spec-version', job.wire] : []),
        '--timeout',
        values.timeout ?? '30000',
        '-o',
        dir,
      ],
      values.verbose === true,
      tmp,
    );
    const found = existsSync(dir) ? collect(dir) : [];
    const base = { suite: version, wire: job.wire ?? 'default', client: job.client };
    const row: Row = found.find((r) => r.scenario === job.scenario) ?? {
      ...base,
      scenario: job.scenario,
      passed: 0,
      failed: 1,
      warnings: 0,
      failures: [NO_RESULTS],
      attempts: 1,
      seconds: 0,
    };
    // The newest suite fails a scenario whose client exited with an error even when every check passed.
    if (job.suite === 'next' && code !== 0 && row.failed === 0) {
      row.failed = 1;
      row.failures = [`client-exit: the client exited with an error${clientError(dir)}`];
    }
    return { ...row, ...base, attempts: n, seconds: (Date.now() - t0) / 1000 };
  };
  /** Each job's latest row. */
  const latest = new Map<Job, Row>();
  /** Run `batch`, `concurrency` at a time, in order. */
  const runAll = async (batch: Job[]): Promise<void> => {
    const queue = [...batch];
    const worker = async (): Promise<void> => {
      for (let job = queue.shift(); job !== undefined; job = queue.shift()) latest.set(job, await attempt(job, (latest.get(job)?.attempts ?? 0) + 1));
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
  };
  /** The same scenario at the same wire, run by the other client. */
  const counterpart = (job: Job): Job | undefined => jobs.find((j) => j !== job && j.suite === job.suite && j.wire === job.wire && j.scenario === job.scenario);
  try {
    // Every scenario once, then the retries: a retry's decision can rest on the other client's result.
    await runAll(jobs);
    for (;;) {
      const again = jobs.filter((job) => {
        const other = counterpart(job);
        return shouldRetry(latest.get(job)!, other && latest.get(other), retries, comparing(job.wire));
      });
      if (again.length === 0) break;
      await runAll(again);
    }
    rows.push(...jobs.map((job) => latest.get(job)!));
    rows.sort((a, b) => a.suite.localeCompare(b.suite) || a.wire.localeCompare(b.wire) || a.scenario.localeCompare(b.scenario) || a.client.localeCompare(b.client));
    if (rows.length === 0) {
      process.stderr.write('the conformance suite produced no results; run with --verbose to see why\n');
      return 1;
    }
    const lines: string[] = [];
    const current = rows.filter((r) => r.suite === suites.current.version && r.wire === 'default');
    const next = rows.filter((r) => !current.includes(r));
    if (current.length) lines.push(`@modelcontextprotocol/conformance ${suites.current.version} (client scenarios, our client)`, '', ...currentTable(current));
    if (next.length) lines.push(...(current.length ? ['', ''] : []), `@modelcontextprotocol/conformance ${suites.next.version} (client scenarios each revision requires, at its wire)`, ...nextTable(next));
    const ours = rows.filter((r) => r.client === 'ours');
    const passed = ours.filter((r) => r.failed === 0).length;
    lines.push('', `our client: ${passed}/${ours.length} scenario runs passed (${((Date.now() - started) / 1000).toFixed(1)} s)`);
    process.stdout.write(`${lines.join('\n')}\n`);
    if (values.json) writeFileSync(values.json, `${JSON.stringify(rows, null, 2)}\n`);
    if (values.keep) process.stdout.write(`results kept in ${out}\n`);
    return passed === ours.length ? 0 : 1;
  } finally {
    if (!values.keep) rmSync(out, { recursive: true, force: true });
  }
}

/** The last line of the client's stderr the suite kept, for the table. */
function clientError(dir: string): string {
  const files: string[] = [];
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name === 'stderr.txt') files.push(p);
    }
  };
  if (existsSync(dir)) walk(dir);
  const lines = files.flatMap((f) => readFileSync(f, 'utf8').split('\n')).filter((l) => l.trim() !== '' && !/^\s+at /.test(l));
  const last = lines.at(-1);
  return last ? `: ${last.trim().slice(0, 160)}` : '';
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
