/**
 * `npm run bench`: every measurement of docs/performance.md in one process sequence,
 * printed as a table and written to bench/results.json. Each figure is the
 * median of at least 5 runs; each comparison is a ratio against a baseline
 * measured in the same run. Every process started is killed at the end, also
 * on failure or Ctrl-C.
 *
 * Flags (for exploring; the defaults are what `npm run bench` measures):
 *   --only cold,reload,decision,crash,gateway,instant,daemon   run a subset
 *   --runs N                            runs per figure (minimum 5 unless --quick)
 *   --sweep 2,4,8,16,50                 connect concurrencies tried at N=50 besides the default
 *   --sizes 1,10,50                     server counts for cold start and reload (reload skips N=1)
 *   --full                              --sweep 2,4,8,16,50 and the restart-everything baseline at N=50 too (~13 min)
 *   --quick                             1 run per figure, smaller sizes: a smoke test, not a result
 *   --fast-crash                        healthyMs 1000 instead of waiting 30 s for a healthy run
 *   --cpu-prof cold|reload|decision|crash|gateway   write V8 CPU profiles of that measurement's workers to
 *                                       $TMPDIR/mcp-reconciler-bench-profiles/ (open them in Chrome DevTools)
 *   --compare OTHER/dist/lib/index.js   the cold start of another build too, its runs interleaved with this
 *                                       build's and the raw host's, and a raw host on SDK v1 beside them
 *                                       (the baseline of builds before SDK v2) ("(compare)" rows)
 * MCP_RECONCILER_BENCH_LIBRARY=OTHER/dist/lib/index.js in the environment makes every measurement's
 * controller side that build (the raw side stays this checkout's).
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { coldStart } from './cold-start.js';
import { hotReload } from './hot-reload.js';
import { decisionCost } from './decision-cost.js';
import { crashRecovery, startCrashWorker } from './crash-recovery.js';
import { gatewayBench } from './gateway.js';
import { instantStart } from './instant-start.js';
import { daemonBench } from './daemon.js';
import type { BenchContext, MeasurementResult, Row } from './support/context.js';
import { Workers } from './support/worker.js';

const BENCH_DIR = fileURLToPath(new URL('../../bench/', import.meta.url));
const MEASUREMENTS = ['cold', 'reload', 'decision', 'crash', 'gateway', 'instant', 'daemon'] as const;
type Measurement = (typeof MEASUREMENTS)[number];

function parse(): {
  only: Set<Measurement>;
  runs: number;
  sweep: number[];
  quick: boolean;
  full: boolean;
  sizes: number[] | undefined;
  fastCrash: boolean;
  profile: Set<string>;
  /** Another build's library entry to start beside this one in the cold start (`--compare PATH`). */
  compare?: string;
} {
  const { values } = parseArgs({
    options: {
      only: { type: 'string' },
      runs: { type: 'string' },
      sweep: { type: 'string' },
      quick: { type: 'boolean', default: false },
      full: { type: 'boolean', default: false },
      sizes: { type: 'string' },
      'fast-crash': { type: 'boolean', default: false },
      'cpu-prof': { type: 'string' },
      compare: { type: 'string' },
    },
  });
  const list = (s: string | undefined): string[] => (s ? s.split(',').map((x) => x.trim()).filter(Boolean) : []);
  const only = new Set(list(values.only) as Measurement[]);
  for (const m of only) if (!MEASUREMENTS.includes(m)) throw new Error(`--only: unknown measurement "${m}" (use ${MEASUREMENTS.join(', ')})`);
  const quick = values.quick ?? false;
  const runs = values.runs ? Number(values.runs) : quick ? 1 : 5;
  if (!Number.isInteger(runs) || runs < 1 || (!quick && runs < 5)) throw new Error('--runs must be an integer ≥ 5 (or use --quick)');
  const full = values.full ?? false;
  const sweep = values.sweep ? list(values.sweep).map(Number) : full ? [2, 4, 8, 16, 50] : [];
  if (sweep.some((c) => !Number.isInteger(c) || c < 1)) throw new Error('--sweep takes positive integers');
  return {
    only: only.size > 0 ? only : new Set(MEASUREMENTS),
    runs,
    sweep,
    quick,
    full,
    sizes: values.sizes ? list(values.sizes).map(Number) : undefined,
    fastCrash: values['fast-crash'] ?? false,
    profile: new Set(list(values['cpu-prof'])),
    ...(values.compare ? { compare: resolve(values.compare) } : {}),
  };
}

function table(rows: Row[]): string {
  const head = ['measurement', 'figure', 'ours', 'baseline', 'ratio', 'target', 'result'];
  const body = rows.map((r) => [
    r.section,
    r.figure,
    r.ours,
    r.baseline ?? '',
    r.ratio === undefined ? '' : r.ratio.toFixed(2),
    r.target,
    r.pass === undefined ? '' : r.pass ? 'PASS' : 'MISS',
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]): string => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...body.map(line)].join('\n');
}

async function main(): Promise<void> {
  const opts = parse();
  const started = Date.now();
  const runId = `mcpbench-${randomBytes(4).toString('hex')}`;
  const workers = new Workers(runId);
  const tmp = mkdtempSync(join(tmpdir(), 'mcp-reconciler-bench-'));
  const profileDir = join(tmpdir(), 'mcp-reconciler-bench-profiles');
  if (opts.profile.size > 0) mkdirSync(profileDir, { recursive: true });

  const cleanupSync = (): void => {
    workers.stopAllSync();
    rmSync(tmp, { recursive: true, force: true });
  };
  process.once('exit', cleanupSync);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      cleanupSync();
      process.exit(130);
    });
  }

  const ctx: BenchContext = {
    workers,
    tmp,
    runs: opts.runs,
    log: (line) => process.stderr.write(`${line}\n`),
    execArgv: (m, extra = []) => (opts.profile.has(m) ? [...extra, '--cpu-prof', `--cpu-prof-dir=${profileDir}`] : extra),
  };
  ctx.log(`mcp-reconciler bench ${runId}: ${cpus().length} CPUs, Node ${process.version}, ${opts.runs} runs per figure${opts.quick ? ' (QUICK: not a result)' : ''}`);
  const loadBefore = loadavg();
  const busy = (load: number[]): boolean => load[0]! > cpus().length * 0.75;
  if (busy(loadBefore)) ctx.log(`warning: the machine is busy (load average ${loadBefore.map((l) => l.toFixed(1)).join(' ')}); figures will be noisy`);

  const rows: Row[] = [];
  const details: Record<string, unknown> = {};
  let leftover = 0;
  const seconds: Record<string, number> = {};
  let lap = Date.now();
  const record = (name: string, result: MeasurementResult): void => {
    rows.push(...result.rows);
    details[name] = result.details;
    seconds[name] = Math.round((Date.now() - lap) / 100) / 10;
    lap = Date.now();
  };

  try {
    // The crash measurement needs servers that have been up ≥ 30 s: start them
    // first and let them idle (no CPU) while the other measurements run.
    const crash = opts.only.has('crash')
      ? await startCrashWorker(ctx, { servers: Math.max(5, opts.runs), healthyMs: opts.fastCrash ? 1_000 : undefined })
      : undefined;
    // A crash early in a clean run (no healthy run yet): the first loss is retried at once.
    // Measured right away, so its servers really are only ~2 s up when killed.
    if (opts.only.has('crash')) {
      const earlyCrash = await startCrashWorker(ctx, { servers: Math.max(5, opts.runs), healthyMs: undefined, upBeforeKillMs: 2_000 });
      ctx.log('5. crash recovery, first loss');
      record('crashRecoveryFirstLoss', await crashRecovery(ctx, earlyCrash));
    }
    lap = Date.now();
    if (opts.only.has('decision')) {
      ctx.log('4. reconcile decision cost');
      record('decisionCost', await decisionCost(ctx, { sizes: opts.quick ? [100, 1_000] : [100, 1_000, 10_000] }));
    }
    if (opts.only.has('cold')) {
      ctx.log('1. cold start');
      const compare = opts.compare === undefined ? {} : { compare: opts.compare };
      record('coldStart', await coldStart(ctx, { sizes: opts.sizes ?? (opts.quick ? [1, 10] : [1, 10, 50]), sweep: opts.sweep, ...compare }));
      ctx.log('1. cold start, light servers');
      record(
        'coldStartLight',
        await coldStart(ctx, { sizes: (opts.sizes ?? (opts.quick ? [10] : [10, 50])).filter((n) => n > 1), sweep: [], fixture: 'light', ...compare }),
      );
    }
    if (opts.only.has('reload')) {
      ctx.log('2./3. hot reload and zero gap');
      record(
        'hotReload',
        await hotReload(ctx, {
          sizes: (opts.sizes ?? (opts.quick ? [10] : [10, 50])).filter((n) => n > 1),
          restartBaselineSizes: opts.full ? [10, 50] : [10],
        }),
      );
    }
    if (opts.only.has('instant')) {
      ctx.log('7. instant start: warm listing cache, first call on a dormant server, dormant RSS, stale cache');
      record('instantStart', await instantStart(ctx, { sizes: opts.quick ? [10] : [10, 50] }));
    }
    if (opts.only.has('gateway')) {
      ctx.log('6. gateway: added latency per call, one process per server across sessions');
      record('gateway', await gatewayBench(ctx));
    }
    if (opts.only.has('daemon')) {
      ctx.log('8. daemon: one server pool for every session, RSS, added latency, a warm session\'s first tools/list');
      record('daemon', await daemonBench(ctx));
    }
    if (crash) {
      ctx.log('5. crash recovery');
      record('crashRecovery', await crashRecovery(ctx, crash));
    }
  } finally {
    leftover = await workers.stopAll();
  }

  rows.sort((a, b) => a.section.localeCompare(b.section, 'en', { numeric: true }));
  const totalS = (Date.now() - started) / 1000;
  const out = {
    runId,
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, cpu: cpus()[0]?.model, node: process.version, platform: process.platform },
    runsPerFigure: opts.runs,
    /** The build the controller side loaded, when not this one (`MCP_RECONCILER_BENCH_LIBRARY`). */
    ...(process.env.MCP_RECONCILER_BENCH_LIBRARY ? { library: process.env.MCP_RECONCILER_BENCH_LIBRARY } : {}),
    loadAverage: { before: loadBefore, after: loadavg() },
    quick: opts.quick,
    totalSeconds: totalS,
    secondsPerMeasurement: seconds,
    /** Processes a worker left behind when it ended (by worker), and any still running at the end: both should be empty/0. */
    leakedProcesses: workers.leaks,
    leftoverAtEnd: leftover,
    retriedRuns: workers.retried,
    rows,
    details,
  };
  writeFileSync(join(BENCH_DIR, 'results.json'), `${JSON.stringify(out, null, 2)}\n`);
  process.stdout.write(`\n${table(rows)}\n\n`);
  if (process.env.MCP_RECONCILER_BENCH_LIBRARY) process.stdout.write(`controller side: ${process.env.MCP_RECONCILER_BENCH_LIBRARY}\n`);
  if (opts.profile.size > 0) process.stdout.write(`CPU profiles: ${profileDir}\n`);
  const missed = rows.filter((r) => r.pass === false).length;
  const met = rows.filter((r) => r.pass === true).length;
  process.stdout.write(
    `${met} targets met, ${missed} missed; ${totalS.toFixed(0)} s; medians of ${opts.runs} runs; details in bench/results.json` +
      `${busy(loadBefore) ? `; WARNING: the machine was busy at the start (load ${loadBefore[0]!.toFixed(1)}), figures are noisy` : ''}` +
      `${workers.retried.length > 0 ? `; ${workers.retried.length} failed run(s) repeated (see retriedRuns)` : ''}` +
      `${Object.keys(workers.leaks).length > 0 || leftover > 0 ? `; LEAKED PROCESSES: ${JSON.stringify(workers.leaks)}, ${leftover} at the end` : ''}\n`,
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
