/**
 * The official MCP client conformance suite (@modelcontextprotocol/conformance
 * 0.1.16) against conformance/client.ts, the client that uses only the public
 * API (docs/oauth.md): the same runner as `npm run conformance --suite current`,
 * run once as a child process from the built tree (`npm test` builds first via
 * `pretest`), then one test per scenario so a failure names it. Then the
 * newest suite (0.2.0-alpha.12, `--suite next`): every client scenario each
 * protocol revision requires ran at its wire with our client and the raw SDK
 * v2 client beside it; our client passes every one on the 2025-11-25 wire,
 * and on the 2026-07-28 wire fails none the raw client passes.
 *
 * The two runs go side by side (their scenarios are mostly process start-up,
 * and one run alone leaves a core idle between scenarios). Made not to flake
 * on a busy 2-core box, where vitest runs another test file beside this one:
 * the 0.1.16 run takes one scenario at a time (`sse-retry` measures the
 * client's reconnect delay against a 500 ms `retry` and fails past 1 s), and
 * a failed scenario is run once more (a pass on the second attempt is
 * printed as such, and warned about), except on the 2026-07-28 wire where a
 * retry cannot change the verdict: a failure both clients share, or the raw
 * client's beside our pass (`--skip-shared-retries`; ours failing beside the
 * raw client's pass is still run again). The runner puts every scenario in
 * its own process group and kills it when the scenario ends; this file kills
 * a runner if it overruns.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sameFailures } from '../../conformance/retries.js';
import type { Row } from '../../conformance/run.js';
import { SCENARIOS } from '../../conformance/scenarios.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const RUNNER = join(ROOT, 'dist', 'conformance', 'run.js');
const CLIENT = join(ROOT, 'dist', 'conformance', 'client.js');


/** The 0.1.16 run, beside the newest suite's; ~2 min on an idle 2-core box. */
const RUN_BUDGET_MS = 10 * 60_000;

function newestMtime(dir: string, ext: string): number {
  let newest = 0;
  for (const name of readdirSync(dir, { recursive: true }) as string[]) {
    if (!name.endsWith(ext)) continue;
    newest = Math.max(newest, statSync(join(dir, name)).mtimeMs);
  }
  return newest;
}

/** `npm test` builds first; a bare `vitest run` on a clean tree builds here. */
function ensureBuilt(): void {
  if (!existsSync(RUNNER) || !existsSync(CLIENT)) {
    const tsc = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], { cwd: ROOT, encoding: 'utf8' });
    if (!existsSync(RUNNER)) throw new Error(`building for the conformance run failed:\n${tsc.stdout}${tsc.stderr}`);
    return;
  }
  const built = statSync(CLIENT).mtimeMs;
  const sources = Math.max(newestMtime(join(ROOT, 'conformance'), '.ts'), newestMtime(join(ROOT, 'src'), '.ts'));
  if (sources > built) console.warn('conformance: sources are newer than dist/ — run `npm run build` (npm test does) to test the current code');
}

type Suite = 'current' | 'next';

/** Each suite's runner while it runs. */
const runners = new Map<Suite, ChildProcess>();

function stopRunner(suite: Suite): void {
  const runner = runners.get(suite);
  if (!runner || runner.exitCode !== null || runner.signalCode !== null) return;
  // SIGTERM lets the runner kill its scenarios' process groups; SIGKILL if it does not go.
  runner.kill('SIGTERM');
  setTimeout(() => {
    if (runner.exitCode === null && runner.signalCode === null) runner.kill('SIGKILL');
  }, 5_000).unref();
}

/** The runner's arguments for each suite (see the header). */
const SUITE_ARGS: Record<Suite, string[]> = {
  current: ['--concurrency', '1', '--retries', '1'],
  next: ['--concurrency', '2', '--retries', '1', '--skip-shared-retries', '2026-07-28'],
};

interface SuiteRun {
  code: number | null;
  output: string;
  rows: Row[];
}

function runSuite(suite: Suite, budgetMs: number): Promise<SuiteRun> {
  const dir = mkdtempSync(join(tmpdir(), `mcpr-conformance-${suite}-test-`));
  const jsonFile = join(dir, 'rows.json');
  return new Promise<SuiteRun>((resolveRun, reject) => {
    const child = spawn(process.execPath, [RUNNER, '--suite', suite, ...SUITE_ARGS[suite], '--json', jsonFile], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    runners.set(suite, child);
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => {
      output += `\nconformance: the run overran ${budgetMs / 1000} s and was stopped\n`;
      stopRunner(suite);
    }, budgetMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolveRun({ code, output, rows: existsSync(jsonFile) ? (JSON.parse(readFileSync(jsonFile, 'utf8')) as Row[]) : [] });
    });
  }).finally(() => rmSync(dir, { recursive: true, force: true }));
}

/** The newest suite's run: ~50 scenarios × 2 clients; ~10 min on a busy 2-core box. */
const NEXT_BUDGET_MS = 20 * 60_000;

let started: Record<Suite, Promise<SuiteRun>> | undefined;

/** Both runs, started together the first time either is needed. */
function suiteRuns(): Record<Suite, Promise<SuiteRun>> {
  if (!started) {
    ensureBuilt();
    started = { current: runSuite('current', RUN_BUDGET_MS), next: runSuite('next', NEXT_BUDGET_MS) };
    // Each describe awaits its own; a failure of the other must not go unhandled meanwhile.
    for (const run of Object.values(started)) run.catch(() => undefined);
  }
  return started;
}

// Whichever describe ran (a -t filter may skip one), no runner outlives the file.
afterAll(() => {
  stopRunner('current');
  stopRunner('next');
});

describe('MCP client conformance suite (public-API client)', () => {
  let rows: Row[] = [];
  let output = '';
  let exitCode: number | null = null;

  beforeAll(async () => {
    ({ output, rows, code: exitCode } = await suiteRuns().current);
    // The table, in the test log.
    console.log(`\n${output.trimEnd()}\n`);
    const retried = rows.filter((r) => r.attempts > 1 && r.failed === 0);
    if (retried.length > 0) console.warn(`conformance: passed only on a second attempt: ${retried.map((r) => r.scenario).join(', ')}`);
  }, RUN_BUDGET_MS + 60_000);

  afterAll(() => stopRunner('current'));

  it('ran every client scenario of the suite, and the runner exited 0', () => {
    expect(rows.map((r) => r.scenario).sort(), output).toEqual([...SCENARIOS].sort());
    expect(exitCode, output).toBe(0);
  });

  it.each(SCENARIOS)('%s passes', (scenario) => {
    const row = rows.find((r) => r.scenario === scenario);
    expect(row, `no result for ${scenario}:\n${output}`).toBeDefined();
    expect(row!.failures, `${scenario} failed checks`).toEqual([]);
    expect(row!.passed).toBeGreaterThan(0);
  });
});

describe('MCP client conformance suite, newest (both wires, our client beside the raw SDK v2 client)', () => {
  let rows: Row[] = [];
  let output = '';

  beforeAll(async () => {
    ({ output, rows } = await suiteRuns().next);
    console.log(`\n${output.trimEnd()}\n`);
  }, NEXT_BUDGET_MS + 60_000);

  afterAll(() => stopRunner('next'));

  it('ran each required client scenario at both wires, with both clients', () => {
    for (const wire of ['2025-11-25', '2026-07-28']) {
      const at = rows.filter((r) => r.wire === wire);
      expect(at.length, `${wire}:\n${output}`).toBeGreaterThan(10);
      for (const scenario of new Set(at.map((r) => r.scenario))) {
        expect(at.filter((r) => r.scenario === scenario).map((r) => r.client).sort(), scenario).toEqual(['ours', 'raw-v2']);
      }
    }
    expect(rows.find((r) => r.wire === '2026-07-28' && r.scenario === 'request-metadata'), 'a scenario only the new wire has').toBeDefined();
    expect(output).toMatch(/wire 2026-07-28: ours \d+\/\d+, raw SDK v2 \d+\/\d+ scenarios passed/);
  });

  it('our client passes every scenario the 2025-11-25 wire requires', () => {
    const failed = rows.filter((r) => r.wire === '2025-11-25' && r.client === 'ours' && r.failed > 0);
    expect(failed.map((r) => `${r.scenario}: ${r.failures.join('; ')}`)).toEqual([]);
  });

  it('on the 2026-07-28 wire our client fails no scenario the raw SDK v2 client passes', () => {
    const at = rows.filter((r) => r.wire === '2026-07-28');
    const oursOnly = at.filter((r) => r.client === 'ours' && r.failed > 0 && at.some((o) => o.client === 'raw-v2' && o.scenario === r.scenario && o.failed === 0));
    expect(oursOnly.map((r) => `${r.scenario}: ${r.failures.join('; ')}`), output).toEqual([]);
  });

  it('on the 2026-07-28 wire a failure no verdict rests on ran once: one both clients share, the raw client\'s beside our pass', () => {
    const at = rows.filter((r) => r.wire === '2026-07-28');
    const other = (r: Row): Row | undefined => at.find((o) => o !== r && o.scenario === r.scenario);
    const final = at.filter((r) => r.failed > 0 && (sameFailures(r, other(r)!) || (r.client === 'raw-v2' && other(r)!.failed === 0)));
    expect(final.map((r) => `${r.scenario} (${r.client}): attempt ${r.attempts}`)).toEqual(final.map((r) => `${r.scenario} (${r.client}): attempt 1`));
  });
});
