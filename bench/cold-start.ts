/**
 * 1. Cold start: N stdio fixture servers (5 tools each), from nothing to every
 * tool listed, controller vs the raw SDK (all servers connected in parallel),
 * and the manager process's own RSS. Each run is a fresh Node process (a
 * worker) that reports its own time and RSS; the servers' RSS is theirs, not
 * the worker's. Runs of the variants are interleaved, in rotating order.
 * At the largest N, other connect concurrencies can be swept (`--sweep`).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ServerConfig } from '../machines/types.js';
import { cpus } from 'node:os';
import { getHeapSpaceStatistics } from 'node:v8';
import { cpuTimeMs, machineBusyMs } from './support/proc.js';
import { mb, ms, type BenchContext, type MeasurementResult, type Row } from './support/context.js';
import { loadLibrary, userConfigOptions } from './support/library.js';
import { initialVersions, rawConnect, loadSdk, TOOLS_PER_SERVER, writeConfig, type FixtureKind, type RawConnection, type SdkLine } from './support/servers.js';
import { median, ratio, summarise } from './support/stats.js';
import { runAsWorker } from './support/worker.js';

const SCRIPT = fileURLToPath(import.meta.url);

/**
 * A variant: the raw baseline, or the controller with a connect concurrency
 * (undefined = its default), of this build or of another one (`library`, its
 * entry file, measured beside this build: `--compare`).
 */
type Variant = { side: 'raw'; sdk?: SdkLine } | { side: 'controller'; concurrency?: number; library?: string };

interface ColdParams {
  variant: Variant;
  configPath: string;
  dir: string;
  n: number;
}

/** What one worker run reports. */
interface ColdSample {
  /** From just before the first connect to every tool listed (controller: `start()` resolved). */
  ms: number;
  /** Controller only: when the last tool was registered (≤ ms). */
  allToolsMs?: number;
  /** Module import time, before `ms` starts. */
  importMs: number;
  /** This process's RSS right after every tool was listed. */
  rss: number;
  /** Peak RSS of this process (resourceUsage().maxRSS). */
  maxRss: number;
  /** V8's young generation (committed) right after every tool was listed: most of the RSS's spread between runs. */
  youngGen: number;
  heapUsed: number;
  tools: number;
  /** CPU time the servers had used when every tool was listed (their start-up and answers). */
  serversCpuMs: number;
  /** CPU time this process used over `ms`. */
  managerCpuMs: number;
  /** CPU time the whole machine was busy over `ms` (all cores, the kernel's share included). */
  machineBusyMs: number;
}

/**
 * The committed size of V8's new space. V8 grows it early in a start and
 * shrinks it again only at a collection that finds the allocation rate low,
 * so a run ends with it large or small, ~8 MB of RSS apart, whichever host
 * it is (docs/performance.md, "Why the manager's RSS at N=50 is bimodal").
 */
function youngGeneration(): number {
  return getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? 0;
}

async function rawWorker(p: ColdParams & { variant: Extract<Variant, { side: 'raw' }> }): Promise<ColdSample> {
  const line = p.variant.sdk ?? 'v2';
  const servers = (JSON.parse(readFileSync(p.configPath, 'utf8')) as { mcpServers: Record<string, ServerConfig> }).mcpServers;
  const tImport = performance.now();
  await loadSdk(line);
  const cpu0 = process.cpuUsage();
  const busy0 = machineBusyMs();
  const t0 = performance.now();
  const conns: RawConnection[] = [];
  try {
    const counts = await Promise.all(
      Object.values(servers).map(async (cfg) => {
        const conn = await rawConnect(cfg, line);
        conns.push(conn);
        return conn.tools.length;
      }),
    );
    const t1 = performance.now();
    const busy = machineBusyMs() - busy0;
    const cpu = process.cpuUsage(cpu0);
    const mem = process.memoryUsage();
    return {
      ms: t1 - t0,
      importMs: t0 - tImport,
      rss: mem.rss,
      maxRss: process.resourceUsage().maxRSS * 1024,
      youngGen: youngGeneration(),
      heapUsed: mem.heapUsed,
      tools: counts.reduce((a, b) => a + b, 0),
      serversCpuMs: conns.reduce((sum, c) => sum + (c.pid === undefined ? 0 : cpuTimeMs(c.pid)), 0),
      managerCpuMs: (cpu.user + cpu.system) / 1000,
      machineBusyMs: busy,
    };
  } finally {
    await Promise.all(conns.map((c) => c.close()));
  }
}

async function controllerWorker(p: ColdParams & { variant: Extract<Variant, { side: 'controller' }> }): Promise<ColdSample> {
  const tImport = performance.now();
  const { createMcpController } = await loadLibrary(p.variant.library);
  const cpu0 = process.cpuUsage();
  const busy0 = machineBusyMs();
  const t0 = performance.now();
  const expected = p.n * TOOLS_PER_SERVER;
  let allTools: number | undefined;
  const ctl = createMcpController({
    ...userConfigOptions(p.dir, p.configPath),
    watch: false,
    // Measured cold: no listing cache from an earlier run (SPEC §12 measures the warm start).
    listingCache: false,
    readyTimeoutMs: 120_000,
    ...(p.variant.concurrency === undefined ? {} : { connectConcurrency: p.variant.concurrency }),
  });
  ctl.on('tools-changed', () => {
    if (allTools === undefined && ctl.tools().length >= expected) allTools = performance.now();
  });
  try {
    await ctl.start();
    const t1 = performance.now();
    const busy = machineBusyMs() - busy0;
    const cpu = process.cpuUsage(cpu0);
    const mem = process.memoryUsage();
    const serversCpuMs = ctl.pids().reduce((sum, pid) => sum + cpuTimeMs(pid), 0);
    const tools = ctl.tools().length;
    if (tools !== expected) {
      const broken = ctl.status().filter((s) => s.state !== 'connected');
      throw new Error(`controller registered ${tools} of ${expected} tools; not connected: ${JSON.stringify(broken.slice(0, 3))}`);
    }
    return {
      ms: t1 - t0,
      allToolsMs: (allTools ?? t1) - t0,
      importMs: t0 - tImport,
      rss: mem.rss,
      maxRss: process.resourceUsage().maxRSS * 1024,
      youngGen: youngGeneration(),
      heapUsed: mem.heapUsed,
      tools,
      serversCpuMs,
      managerCpuMs: (cpu.user + cpu.system) / 1000,
      machineBusyMs: busy,
    };
  } finally {
    await ctl.dispose();
  }
}

runAsWorker<ColdParams, ColdSample>(import.meta.url, async (p) => {
  if (p.variant.side === 'raw') return rawWorker({ ...p, variant: p.variant });
  return controllerWorker({ ...p, variant: p.variant });
});

// ── runner half ─────────────────────────────────────────────────────────────

/** Options of {@link coldStart}. */
export interface ColdStartOptions {
  sizes: number[];
  /** Connect concurrencies tried at the largest size besides the default. */
  sweep: number[];
  /** Which fixture the servers run (default `basic`); `light` starts in ~0.1 s of CPU. */
  fixture?: FixtureKind;
  /** Another build's library entry, started beside this one at every size, interleaved (info rows). */
  compare?: string;
}

function label(v: Variant): string {
  if (v.side === 'raw') return v.sdk === 'v1' ? 'raw SDK v1' : 'raw SDK';
  if (v.library !== undefined) return `controller of ${v.library}`;
  return v.concurrency === undefined ? 'controller (default concurrency)' : `controller c=${v.concurrency}`;
}

/** Run measurement 1. */
export async function coldStart(ctx: BenchContext, opts: ColdStartOptions): Promise<MeasurementResult> {
  const rows: Row[] = [];
  const details: Record<string, unknown> = {};
  const largest = Math.max(...opts.sizes);
  const kind = opts.fixture ?? 'basic';
  // Light servers leave the manager's own scheduling as the bound: the N=50 goal is stricter there.
  const section = kind === 'light' ? '1 cold start, light servers' : '1 cold start';
  for (const n of opts.sizes) {
    const configPath = join(ctx.tmp, `cold-${kind}-${n}.json`);
    writeConfig(configPath, initialVersions(n), kind);
    const raw: Variant = { side: 'raw' };
    const dflt: Variant = { side: 'controller' };
    const other: Variant | undefined = opts.compare === undefined ? undefined : { side: 'controller', library: opts.compare };
    // The build compared was measured against a raw host on SDK v1 when it was current: that host
    // runs beside it, so the compared build's own ratio is read against its own baseline too.
    const rawV1: Variant = { side: 'raw', sdk: 'v1' };
    const swept: Variant[] = n === largest ? opts.sweep.map((c) => ({ side: 'controller', concurrency: c })) : [];
    const variants: Variant[] = [raw, dflt, ...(other ? [other, rawV1] : []), ...swept];

    const samples = new Map<Variant, ColdSample[]>(variants.map((v) => [v, []]));
    for (let run = 0; run < ctx.runs; run++) {
      // Rotate the order so no variant always runs first (or right after the heaviest one).
      const order = variants.map((_, i) => variants[(i + run) % variants.length]!);
      for (const v of order) {
        const s = await ctx.workers.run<ColdSample>(SCRIPT, { variant: v, configPath, dir: ctx.tmp, n } satisfies ColdParams, {
          execArgv: ctx.execArgv('cold'),
          timeoutMs: 180_000,
        });
        if (s.tools !== n * TOOLS_PER_SERVER) throw new Error(`${label(v)} listed ${s.tools} tools, expected ${n * TOOLS_PER_SERVER}`);
        samples.get(v)!.push(s);
        ctx.log(`  cold ${kind} N=${n} ${label(v)} run ${run + 1}: ${ms(s.ms)}, rss ${mb(s.rss)} (young generation ${mb(s.youngGen)})`);
      }
    }

    const med = (v: Variant, f: (s: ColdSample) => number): number => median(samples.get(v)!.map(f));
    const rawMs = med(raw, (s) => s.ms);
    const rawRss = med(raw, (s) => s.rss);
    const oursMs = med(dflt, (s) => s.ms);
    const oursRss = med(dflt, (s) => s.rss);
    const target = n >= 50 ? (kind === 'light' ? 0.9 : 0.75) : n >= 10 ? 1.05 : undefined;
    const r = ratio(oursMs, rawMs);
    rows.push({
      section,
      figure: `N=${n}, start → all ${n * TOOLS_PER_SERVER} tools listed (default concurrency)`,
      ours: ms(oursMs),
      baseline: ms(rawMs),
      ratio: r,
      target: target === undefined ? '(info)' : `≤ ${target.toFixed(2)} × raw`,
      ...(target === undefined ? {} : { pass: r <= target }),
    });
    if (other) {
      // The same start, the same raw host, the runs interleaved: whether a change of build moved it.
      const otherMs = med(other, (s) => s.ms);
      const v1Ms = med(rawV1, (s) => s.ms);
      rows.push({
        section,
        figure: `  N=${n}, the build compared (${opts.compare}), host CPU ${ms(med(other, (s) => s.managerCpuMs))}, RSS ${mb(med(other, (s) => s.rss))}; against the raw host on SDK v1: ${ratio(otherMs, v1Ms).toFixed(2)}`,
        ours: ms(otherMs),
        baseline: ms(rawMs),
        ratio: ratio(otherMs, rawMs),
        target: '(compare)',
      });
      // What the SDK's major costs a host that uses it directly (docs/performance.md, "What SDK v2 costs a raw host").
      rows.push({
        section,
        figure: `  N=${n}, the raw host on SDK v1 (wave 2's baseline), host CPU ${ms(med(rawV1, (s) => s.managerCpuMs))} against ${ms(med(raw, (s) => s.managerCpuMs))}`,
        ours: ms(v1Ms),
        baseline: ms(rawMs),
        ratio: ratio(v1Ms, rawMs),
        target: '(compare)',
      });
    }
    // What a host waits for from its own import on: SDK v2 builds its wire schemas on first use,
    // inside the start, where SDK v1 built them at import (docs/performance.md, "The connect limit on a loaded machine").
    const total = (v: Variant): number => med(v, (s) => s.importMs + s.ms);
    rows.push({
      section,
      figure: `  N=${n}, import + start (the host imports the package or the SDK, then starts)${other ? `; the build compared: ${ms(total(other))} (${ratio(total(other), total(raw)).toFixed(2)})` : ''}`,
      ours: ms(total(dflt)),
      baseline: ms(total(raw)),
      ratio: ratio(total(dflt), total(raw)),
      target: '(info)',
    });
    // Starting fewer servers at once than the raw host (which starts all) costs the servers less CPU each.
    const serversCpu = (v: Variant): number => med(v, (s) => s.serversCpuMs);
    rows.push({
      section,
      figure: `  N=${n}, the servers' own CPU when all tools are listed${other ? `; the build compared: ${ms(serversCpu(other))} (${ratio(serversCpu(other), serversCpu(raw)).toFixed(2)})` : ''}`,
      ours: ms(serversCpu(dflt)),
      baseline: ms(serversCpu(raw)),
      ratio: ratio(serversCpu(dflt), serversCpu(raw)),
      target: '(info)',
    });
    if (swept.length > 0) {
      const all = [dflt, ...swept].map((v) => ({ v, ms: med(v, (s) => s.ms) }));
      const fastest = all.reduce((a, b) => (b.ms < a.ms ? b : a));
      for (const { v, ms: m } of all.slice(1)) {
        rows.push({
          section,
          figure: `  N=${n}, connect concurrency ${(v as { concurrency: number }).concurrency}${v === fastest.v ? ' (fastest)' : ''}`,
          ours: ms(m),
          baseline: ms(rawMs),
          ratio: ratio(m, rawMs),
          target: '(sweep)',
        });
      }
      details.fastestConcurrency = fastest.v === dflt ? 'default' : (fastest.v as { concurrency: number }).concurrency;
    }
    // No schedule can beat the servers' own CPU work spread over every core.
    const floor = median([...samples.values()].flat().map((s) => s.serversCpuMs)) / cpus().length;
    rows.push({
      section,
      figure: `  N=${n}, floor: servers' own CPU time / ${cpus().length} cores`,
      ours: ms(floor),
      baseline: ms(rawMs),
      ratio: ratio(floor, rawMs),
      target: '(info)',
    });
    // What the raw run kept the machine busy with, less the raw host's own CPU, is what its
    // servers and the kernel needed (fork, exec, page faults included, which per-process
    // counters miss); spread over every core it bounds any host, even one that cost nothing.
    const rawBusy = median(samples.get(raw)!.map((s) => s.machineBusyMs));
    const rawHost = med(raw, (s) => s.managerCpuMs);
    const span = (s: ColdSample): number => s.ms * cpus().length;
    rows.push({
      section,
      figure: `  N=${n}, machine busy during the run (raw / ours), host CPU ${ms(rawHost)} / ${ms(med(dflt, (s) => s.managerCpuMs))}`,
      ours: `${Math.round((100 * median(samples.get(dflt)!.map((s) => s.machineBusyMs / span(s)))))} %`,
      baseline: `${Math.round((100 * median(samples.get(raw)!.map((s) => s.machineBusyMs / span(s)))))} %`,
      target: '(info)',
    });
    const zeroHost = Math.max(0, rawBusy - rawHost) / cpus().length;
    rows.push({
      section,
      figure: `  N=${n}, floor for a host that costs no CPU: (machine busy − raw host CPU) / ${cpus().length} cores`,
      ours: ms(zeroHost),
      baseline: ms(rawMs),
      ratio: ratio(zeroHost, rawMs),
      target: '(info)',
    });
    const rr = ratio(oursRss, rawRss);
    rows.push({
      section,
      figure: `N=${n}, manager's own RSS`,
      ours: mb(oursRss),
      baseline: mb(rawRss),
      ratio: rr,
      target: '≤ 1.15 × raw',
      pass: rr <= 1.15,
    });
    const youngGens = (v: Variant): string => samples.get(v)!.map((s) => Math.round(s.youngGen / 1048576)).join(' ');
    rows.push({
      section,
      figure: `  N=${n}, V8's young generation at the end of each run, MB`,
      ours: youngGens(dflt),
      baseline: youngGens(raw),
      target: '(info)',
    });

    details[`N=${n}`] = Object.fromEntries(
      variants.map((v) => {
        const ss = samples.get(v)!;
        return [
          label(v),
          {
            ms: summarise(ss.map((s) => s.ms)),
            ...(v.side === 'controller' ? { allToolsRegisteredMs: summarise(ss.map((s) => s.allToolsMs ?? s.ms)) } : {}),
            importMs: summarise(ss.map((s) => s.importMs)),
            rssMB: summarise(ss.map((s) => s.rss / 1048576)),
            maxRssMB: summarise(ss.map((s) => s.maxRss / 1048576)),
            youngGenMB: ss.map((s) => s.youngGen / 1048576),
            heapUsedMB: summarise(ss.map((s) => s.heapUsed / 1048576)),
            serversCpuMs: summarise(ss.map((s) => s.serversCpuMs)),
            managerCpuMs: summarise(ss.map((s) => s.managerCpuMs)),
            machineBusyMs: summarise(ss.map((s) => s.machineBusyMs)),
          },
        ];
      }),
    );
  }
  return { rows, details };
}
