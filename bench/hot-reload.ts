/**
 * 2. Hot reload latency and 3. zero gap. A controller with N fixture servers
 * watches its user-scope config file (the real chokidar watcher); each run
 * edits one server's `TOOLS_VERSION` and times the file write → the new tool
 * registered, minus the debounce. Meanwhile the registry is sampled every
 * 5 ms: the longest time any unchanged server's tools were missing, and how
 * many unchanged servers got a new process. Baselines, in the same worker:
 * a raw-SDK connect + list of the edited server (alternately before and after
 * the reload), and a restart-everything manager built on the raw SDK (drop
 * every tool, close every client, reconnect all) with the same sampler.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ms, type BenchContext, type MeasurementResult, type Row } from './support/context.js';
import { loadLibrary, userConfigOptions } from './support/library.js';
import { GapSampler, type GapReport } from './support/gaps.js';
import {
  fixtureConfig,
  initialVersions,
  loadSdk,
  rawConnect,
  registeredName,
  serverNames,
  sleep,
  TOOLS_PER_SERVER,
  writeConfig,
  type RawConnection,
} from './support/servers.js';
import { median, ratio, summarise } from './support/stats.js';
import { runAsWorker } from './support/worker.js';

const SCRIPT = fileURLToPath(import.meta.url);
/** The SPEC's debounce, set explicitly and subtracted from every latency. */
const DEBOUNCE_MS = 300;

interface ReloadParams {
  n: number;
  runs: number;
  dir: string;
  /** Also measure the restart-everything baseline (N + 1 cold connects of N servers). */
  restartBaseline: boolean;
}

interface ReloadRun {
  /** File write → new tool registered, minus the debounce. */
  latencyMs: number;
  /** Raw-SDK connect + list of the edited server's new config. */
  rawMs: number;
  /** CPU time of this process from the write to the registration, and over the raw connect. */
  cpuMs: number;
  rawCpuMs: number;
  gap: GapReport;
  /** Unchanged servers whose process changed. */
  replaced: number;
  /** When things happened, ms after the write: `reconciled`, the edited server's states, `registered`. */
  marks: Record<string, number>;
}

interface RestartRun {
  /** Close everything → every tool listed again. */
  totalMs: number;
  gap: GapReport;
}

interface ReloadSample {
  reloads: ReloadRun[];
  restartAll: RestartRun[];
}

async function waitUntil(check: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const until = performance.now() + timeoutMs;
  while (!check()) {
    if (performance.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

/** `promise`, or a rejection naming `what` after `ms`. */
async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A raw connect + list, timed (wall and this process's CPU); `busy` runs alongside (the same sampler our reload runs with). */
async function timedRawConnect(version: string, busy?: GapSampler): Promise<{ ms: number; cpuMs: number }> {
  busy?.start();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const conn = await rawConnect(fixtureConfig(version));
  const took = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  busy?.stop();
  if (!conn.tools.includes(`v${version}_tool`)) throw new Error(`raw connect listed ${conn.tools.join(', ')}`);
  await conn.close();
  return { ms: took, cpuMs: (cpu.user + cpu.system) / 1000 };
}

async function controllerReloads(p: ReloadParams): Promise<ReloadRun[]> {
  const { createMcpController } = await loadLibrary();
  const configPath = join(p.dir, `reload-${p.n}.json`);
  const names = serverNames(p.n);
  const versions = initialVersions(p.n);
  writeConfig(configPath, versions);
  const ctl = createMcpController({
    ...userConfigOptions(p.dir, configPath),
    // No listing cache: reload figures stay comparable with earlier runs.
    listingCache: false,
    watch: true,
    debounceMs: DEBOUNCE_MS,
    readyTimeoutMs: 120_000,
  });
  const out: ReloadRun[] = [];
  try {
    await ctl.start();
    if (ctl.tools().length !== p.n * TOOLS_PER_SERVER) throw new Error(`only ${ctl.tools().length} tools registered after start`);
    await sleep(500);
    // The raw connects run with the same 5 ms registry sampler as our reloads, so both share the CPU alike.
    const sampleAll = (): GapSampler => new GapSampler(new Map(), () => new Set(ctl.tools().map((t) => t.name)));
    for (let r = 0; r < p.runs; r++) {
      const rawFirst = r % 2 === 0;
      let raw = rawFirst ? await timedRawConnect(String(r + 2), sampleAll()) : undefined;
      if (rawFirst) await sleep(200);

      const target = names[r % p.n]!;
      const version = String(r + 2);
      const newTool = registeredName(target, `v${version}_tool`);
      const before = ctl.tools();
      const unchanged = names.filter((n) => n !== target);
      const expected = new Map(unchanged.map((n) => [n, before.filter((t) => t.server === n).map((t) => t.name)]));
      const pidsBefore = new Map(ctl.status().map((s) => [s.name, s.pid]));
      let onRegistered: (t: number) => void = () => {};
      const registered = new Promise<number>((resolve) => (onRegistered = resolve));
      const off = ctl.on('tools-changed', (e) => {
        if (e.server === target && e.added.includes(newTool)) onRegistered(performance.now());
      });
      const sampler = new GapSampler(expected, () => new Set(ctl.tools().map((t) => t.name)));
      const marks: Record<string, number> = {};
      let tWrite = 0;
      const mark = (what: string): void => {
        if (tWrite > 0 && marks[what] === undefined) marks[what] = performance.now() - tWrite;
      };
      const offMarks = [
        ctl.on('reconciled', () => mark('reconciled')),
        ctl.on('server-state', (e) => {
          if (e.name === target) mark(e.state);
        }),
      ];
      sampler.start();
      await sleep(30);

      versions[target] = version;
      const cpu0 = process.cpuUsage();
      tWrite = performance.now();
      writeConfig(configPath, versions);
      const tRegistered = await withTimeout(registered, 30_000, `${newTool} to be registered after the config write`);
      const cpu = process.cpuUsage(cpu0);
      off();
      for (const o of offMarks) o();
      marks.registered = tRegistered - tWrite;
      await sleep(100);
      const gap = sampler.stop();
      const pidsAfter = new Map(ctl.status().map((s) => [s.name, s.pid]));
      const replaced = unchanged.filter((n) => pidsAfter.get(n) !== pidsBefore.get(n)).length;
      // Let the old generation's process finish dying before anything else is timed.
      await waitUntil(() => ctl.pids().length === p.n, 'the old process to exit');
      await sleep(200);

      if (!rawFirst) {
        raw = await timedRawConnect(version, sampleAll());
        await sleep(200);
      }
      out.push({
        latencyMs: tRegistered - tWrite - DEBOUNCE_MS,
        rawMs: raw!.ms,
        cpuMs: (cpu.user + cpu.system) / 1000,
        rawCpuMs: raw!.cpuMs,
        gap,
        replaced,
        marks,
      });
    }
  } finally {
    await ctl.dispose();
  }
  return out;
}

/** A restart-everything manager on the raw SDK: what "reload" means without incremental reconcile. */
async function restartEverything(p: ReloadParams): Promise<RestartRun[]> {
  const names = serverNames(p.n);
  const versions = initialVersions(p.n);
  const registry = new Map<string, string[]>();
  let conns: RawConnection[] = [];
  const connectAll = async (): Promise<void> => {
    await Promise.all(
      names.map(async (name) => {
        const conn = await rawConnect(fixtureConfig(versions[name]));
        conns.push(conn);
        registry.set(name, conn.tools.map((t) => registeredName(name, t)));
      }),
    );
  };
  const out: RestartRun[] = [];
  try {
    await connectAll();
    await sleep(300);
    for (let r = 0; r < p.runs; r++) {
      const target = names[r % p.n]!;
      const expected = new Map(names.filter((n) => n !== target).map((n) => [n, registry.get(n) ?? []]));
      const sampler = new GapSampler(expected, () => new Set([...registry.values()].flat()));
      sampler.start();
      await sleep(30);
      versions[target] = String(r + 2);
      const t0 = performance.now();
      registry.clear();
      const old = conns;
      conns = [];
      await Promise.all(old.map((c) => c.close()));
      await connectAll();
      const totalMs = performance.now() - t0;
      await sleep(30);
      out.push({ totalMs, gap: sampler.stop() });
      await sleep(300);
    }
  } finally {
    await Promise.all(conns.map((c) => c.close()));
  }
  return out;
}

runAsWorker<ReloadParams, ReloadSample>(import.meta.url, async (p) => {
  await loadSdk();
  const reloads = await controllerReloads(p);
  await sleep(500);
  const restartAll = p.restartBaseline ? await restartEverything(p) : [];
  return { reloads, restartAll };
});

// ── runner half ─────────────────────────────────────────────────────────────

/** Per step, the median of when it happened across runs. */
export function timeline(marks: Record<string, number>[]): Record<string, number> {
  const keys = [...new Set(marks.flatMap((m) => Object.keys(m)))];
  const out: Record<string, number> = {};
  for (const k of keys) out[k] = Math.round(median(marks.map((m) => m[k]).filter((v): v is number => v !== undefined)) * 10) / 10;
  return Object.fromEntries(Object.entries(out).sort((a, b) => a[1] - b[1]));
}

/** Options of {@link hotReload}. */
export interface HotReloadOptions {
  sizes: number[];
  /** Sizes at which the restart-everything baseline is measured too (it costs N + 1 cold starts). */
  restartBaselineSizes: number[];
}

/** Run measurements 2 and 3. */
export async function hotReload(ctx: BenchContext, opts: HotReloadOptions): Promise<MeasurementResult> {
  const rows: Row[] = [];
  const details: Record<string, unknown> = {};
  for (const n of opts.sizes) {
    const s = await ctx.workers.run<ReloadSample>(SCRIPT, { n, runs: ctx.runs, dir: ctx.tmp, restartBaseline: opts.restartBaselineSizes.includes(n) } satisfies ReloadParams, {
      execArgv: ctx.execArgv('reload'),
      timeoutMs: 240_000,
    });
    for (const [i, r] of s.reloads.entries()) {
      const steps = Object.entries(r.marks)
        .sort((a, b) => a[1] - b[1])
        .map(([k, v]) => `${k}@${Math.round(v)}`)
        .join(' ');
      ctx.log(`  reload N=${n} run ${i + 1}: ${ms(r.latencyMs)} (raw ${ms(r.rawMs)}), gap ${ms(r.gap.longestMs)}, replaced ${r.replaced}; ${steps}`);
    }
    for (const [i, r] of s.restartAll.entries()) ctx.log(`  restart-everything N=${n} run ${i + 1}: gap ${ms(r.gap.longestMs)}`);

    const latency = median(s.reloads.map((r) => r.latencyMs));
    const raw = median(s.reloads.map((r) => r.rawMs));
    const rl = ratio(latency, raw);
    rows.push({
      section: '2 hot reload',
      figure: `N=${n}, write → new tool registered − ${DEBOUNCE_MS} ms debounce`,
      ours: ms(latency),
      baseline: ms(raw),
      ratio: rl,
      target: '≤ 1.10 × raw connect',
      pass: rl <= 1.1,
    });
    // Zero gap is judged on the worst run, not the median.
    const worstGap = Math.max(...s.reloads.map((r) => r.gap.longestMs));
    const replaced = Math.max(...s.reloads.map((r) => r.replaced));
    const restartGap = s.restartAll.length > 0 ? ms(median(s.restartAll.map((r) => r.gap.longestMs))) : undefined;
    rows.push({
      section: '3 zero gap',
      figure: `N=${n}, longest gap of an unchanged server (worst of ${s.reloads.length}${restartGap ? '; baseline: restart-everything, median' : ''})`,
      ours: ms(worstGap),
      ...(restartGap ? { baseline: restartGap } : {}),
      target: '0 ms',
      pass: worstGap === 0,
    });
    rows.push({
      section: '3 zero gap',
      figure: `N=${n}, unchanged processes replaced (worst run; baseline replaces all)`,
      ours: String(replaced),
      baseline: String(n - 1),
      target: '0',
      pass: replaced === 0,
    });
    details[`N=${n}`] = {
      latencyMinusDebounceMs: summarise(s.reloads.map((r) => r.latencyMs)),
      rawConnectMs: summarise(s.reloads.map((r) => r.rawMs)),
      managerCpuMs: summarise(s.reloads.map((r) => r.cpuMs)),
      rawManagerCpuMs: summarise(s.reloads.map((r) => r.rawCpuMs)),
      ratio: rl,
      longestGapMs: s.reloads.map((r) => Math.round(r.gap.longestMs * 10) / 10),
      samplesPerReload: s.reloads.map((r) => r.gap.samples),
      maxSampleIntervalMs: s.reloads.map((r) => Math.round(r.gap.maxIntervalMs * 10) / 10),
      unchangedReplaced: s.reloads.map((r) => r.replaced),
      // Medians of when each step happened, ms after the write (the debounce is in `reconciled`).
      timeline: timeline(s.reloads.map((r) => r.marks)),
      ...(s.restartAll.length > 0
        ? {
            restartEverything: {
              longestGapMs: summarise(s.restartAll.map((r) => r.gap.longestMs)),
              totalMs: summarise(s.restartAll.map((r) => r.totalMs)),
              maxSampleIntervalMs: s.restartAll.map((r) => Math.round(r.gap.maxIntervalMs * 10) / 10),
            },
          }
        : {}),
    };
  }
  return { rows, details };
}
