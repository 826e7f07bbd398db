/**
 * 7. Instant start (SPEC §12): the listing cache, lazy servers and what they
 * cost, against the raw SDK (or the bare host) measured in the same run.
 *
 * - warm cache: from creating the controller to all N×5 tools registered,
 *   with every listing cached by an earlier run (eager servers, the default;
 *   lazy as info), vs raw SDK spawn + initialize + list of all N;
 * - warm cache as a host sees it: a fresh process that imports the package
 *   entry and creates a controller with the host defaults (watcher, process
 *   records), from the `start()` call to the `tools-changed` that makes every
 *   cached tool visible, and to the host's next turn after it (what a host
 *   that answers a client then waits for; spawns that block the main thread
 *   would land in between), eager and lazy;
 * - first call on a dormant server: `callTool` on a lazy server with a
 *   cached listing (it connects, then calls), vs raw connect + list + call;
 * - RSS of the whole process tree with 50 dormant servers vs the host
 *   process alone (the controller with no servers);
 * - a stale cache (the server lists other tools now): corrected by the first
 *   live listing after connect.
 *
 * Every figure is the median of `ctx.runs` fresh worker processes; the cache
 * is filled once per N by a worker of its own. NODE_EXTRA_CA_CERTS is unset
 * for both sides (benchEnv).
 */
import { rssOf } from './support/proc.js';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ServerConfig } from '../machines/types.js';
import { mb, ms, type BenchContext, type MeasurementResult, type Row, type SizedOptions } from './support/context.js';
import { loadLibrary, userConfigOptions } from './support/library.js';
import { initialVersions, loadSdk, rawConnect, TOOLS_PER_SERVER, writeConfig, type RawConnection } from './support/servers.js';
import { median, ratio, summarise } from './support/stats.js';
import { runAsWorker } from './support/worker.js';

const SCRIPT = fileURLToPath(import.meta.url);

type Task =
  | { kind: 'fill'; n: number }
  | { kind: 'warm-raw'; n: number }
  | { kind: 'warm'; n: number; startup: 'eager' | 'lazy' }
  | { kind: 'warm-host'; n: number; startup: 'eager' | 'lazy' }
  | { kind: 'call-raw' }
  | { kind: 'call-dormant' }
  | { kind: 'rss-host' }
  | { kind: 'rss-dormant'; n: number }
  | { kind: 'stale'; n: number };

interface Params {
  task: Task;
  dir: string;
  configPath: string;
  cacheDir: string;
}

interface Sample {
  ms: number;
  /** Warm host: from the `start()` call to the host's next turn after every cached tool was visible. */
  turnMs?: number;
  /** Warm host: server processes spawned by the time every cached tool was visible. */
  spawnedAtVisible?: number;
  /** Warm host: server processes spawned by the host's next turn after that. */
  spawnedAtTurn?: number;
  tools?: number;
  /** Bytes: this process plus every descendant. */
  treeRss?: number;
  processes?: number;
  /** Stale: servers whose registered tools equal the live listing after one live listing. */
  corrected?: number;
  /** Stale: the most live commits any server needed after its cached one. */
  maxCommits?: number;
}

// ── worker half ─────────────────────────────────────────────────────────────


/** This process and all its descendants (the servers, and their children). */
function treePids(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // gone
    }
  }
  const out: number[] = [];
  const todo = [root];
  while (todo.length > 0) {
    const pid = todo.pop()!;
    out.push(pid);
    todo.push(...(children.get(pid) ?? []));
  }
  return out;
}

function servers(p: Params): ServerConfig[] {
  return Object.values((JSON.parse(readFileSync(p.configPath, 'utf8')) as { mcpServers: Record<string, ServerConfig> }).mcpServers);
}

/** Import the library (outside any timing), then hand back a factory for a controller over `p`'s config. */
async function controller(p: Params, extra: Record<string, unknown> = {}) {
  const { createMcpController } = await loadLibrary();
  return () =>
    createMcpController({
      ...userConfigOptions(p.dir, p.configPath),
      processStateFile: false,
      listingCache: p.cacheDir,
      watch: false,
      readyTimeoutMs: 120_000,
      ...extra,
    });
}

async function worker(p: Params): Promise<Sample> {
  const task = p.task;
  switch (task.kind) {
    case 'fill': {
      const make = await controller(p);
      const ctl = make();
      try {
        await ctl.start();
        return { ms: 0, tools: ctl.tools().length };
      } finally {
        await ctl.dispose();
      }
    }
    case 'warm-raw': {
      await loadSdk();
      const t0 = performance.now();
      const conns: RawConnection[] = [];
      try {
        const counts = await Promise.all(
          servers(p).map(async (cfg) => {
            const c = await rawConnect(cfg);
            conns.push(c);
            return c.tools.length;
          }),
        );
        return { ms: performance.now() - t0, tools: counts.reduce((a, b) => a + b, 0) };
      } finally {
        await Promise.all(conns.map((c) => c.close()));
      }
    }
    case 'warm': {
      const make = await controller(p, { startup: task.startup });
      const expected = task.n * TOOLS_PER_SERVER;
      const t0 = performance.now();
      const ctl = make();
      try {
        const at = await new Promise<number>((resolve, reject) => {
          ctl.on('tools-changed', () => {
            if (ctl.tools().length >= expected) resolve(performance.now());
          });
          ctl.start().then(() => (ctl.tools().length >= expected ? resolve(performance.now()) : reject(new Error(`${ctl.tools().length} tools after start`))), reject);
        });
        return { ms: at - t0, tools: ctl.tools().length };
      } finally {
        await ctl.dispose();
      }
    }
    case 'warm-host': {
      // As a host creates it: the watcher on, processes recorded (in this run's temp dir), nothing else set.
      const { createMcpController } = await loadLibrary();
      const expected = task.n * TOOLS_PER_SERVER;
      const ctl = createMcpController({
        ...userConfigOptions(p.dir, p.configPath),
        listingCache: p.cacheDir,
        processStateFile: join(p.dir, `processes-${process.pid}.json`),
        startup: task.startup,
      });
      try {
        let visibleAt = 0;
        let spawnedAtVisible = 0;
        let spawnedAtTurn = 0;
        const t0 = performance.now();
        const turnAt = await new Promise<number>((resolve, reject) => {
          ctl.on('tools-changed', () => {
            if (visibleAt > 0 || ctl.tools().length < expected) return;
            visibleAt = performance.now();
            spawnedAtVisible = ctl.pids().length;
            setImmediate(() => {
              spawnedAtTurn = ctl.pids().length;
              resolve(performance.now());
            });
          });
          ctl.start().then(() => (visibleAt > 0 ? undefined : reject(new Error(`${ctl.tools().length} tools after start`))), reject);
        });
        await ctl.start();
        return { ms: visibleAt - t0, turnMs: turnAt - t0, spawnedAtVisible, spawnedAtTurn, tools: ctl.tools().length };
      } finally {
        await ctl.dispose();
      }
    }
    case 'call-raw': {
      await loadSdk();
      const cfg = servers(p)[0]!;
      const t0 = performance.now();
      const c = await rawConnect(cfg);
      try {
        await c.client.callTool({ name: 'echo', arguments: { text: 'hi' } });
        return { ms: performance.now() - t0 };
      } finally {
        await c.close();
      }
    }
    case 'call-dormant': {
      const make = await controller(p, { startup: 'lazy' });
      const ctl = make();
      try {
        await ctl.start();
        const name = ctl.tools().find((t) => t.rawName === 'echo')!.name;
        if (ctl.status()[0]!.state !== 'dormant') throw new Error(`expected dormant, got ${ctl.status()[0]!.state}`);
        const t0 = performance.now();
        await ctl.callTool(name, { text: 'hi' });
        return { ms: performance.now() - t0 };
      } finally {
        await ctl.dispose();
      }
    }
    case 'rss-host':
    case 'rss-dormant': {
      // The host alone: the same process with the library loaded and a controller over no servers.
      const make = await controller(task.kind === 'rss-host' ? { ...p, configPath: join(p.dir, 'empty.json') } : p, { startup: 'lazy' });
      const ctl = make();
      try {
        await ctl.start();
        if (task.kind === 'rss-dormant' && !ctl.status().every((s) => s.state === 'dormant')) throw new Error('not every server is dormant');
        // Settle: let the allocator return what start-up used, as a long-running host would.
        await new Promise((r) => setTimeout(r, 200));
        const pids = treePids(process.pid);
        return { ms: 0, tools: ctl.tools().length, treeRss: pids.reduce((s, pid) => s + rssOf(pid), 0), processes: pids.length };
      } finally {
        await ctl.dispose();
      }
    }
    case 'stale': {
      const make = await controller(p);
      const ctl = make();
      const commits = new Map<string, number>();
      ctl.on('tools-changed', (e) => commits.set(e.server, (commits.get(e.server) ?? 0) + 1));
      const t0 = performance.now();
      try {
        await ctl.start();
        const t1 = performance.now();
        let corrected = 0;
        for (const s of ctl.status()) {
          const names = s.tools.map((t) => t.split('__').pop()).sort();
          if (s.state === 'connected' && !s.cached && names.join() === 'add,echo,env,pid,v1_tool') corrected++;
        }
        // One event for the cached listing, one for the live listing that corrected it.
        return { ms: t1 - t0, corrected, maxCommits: Math.max(...[...commits.values()].map((c) => c - 1)) };
      } finally {
        await ctl.dispose();
      }
    }
  }
}

runAsWorker<Params, Sample>(import.meta.url, worker);

// ── runner half ─────────────────────────────────────────────────────────────

/** Run measurement 7. */
export async function instantStart(ctx: BenchContext, opts: SizedOptions): Promise<MeasurementResult> {
  const rows: Row[] = [];
  const details: Record<string, unknown> = {};
  const section = '7 instant start';
  const run = (task: Task, configPath: string, cacheDir: string): Promise<Sample> =>
    ctx.workers.run<Sample>(SCRIPT, { task, dir: ctx.tmp, configPath, cacheDir } satisfies Params, { execArgv: ctx.execArgv('instant'), timeoutMs: 180_000 });
  const { writeFileSync, mkdirSync } = await import('node:fs');
  writeFileSync(join(ctx.tmp, 'empty.json'), '{ "mcpServers": {} }\n');

  for (const n of opts.sizes) {
    const configPath = join(ctx.tmp, `instant-${n}.json`);
    writeConfig(configPath, initialVersions(n));
    const cacheDir = join(ctx.tmp, `listing-cache-${n}`);
    mkdirSync(cacheDir, { recursive: true });
    const filled = await run({ kind: 'fill', n }, configPath, cacheDir);
    if (filled.tools !== n * TOOLS_PER_SERVER) throw new Error(`cache fill listed ${filled.tools} tools`);

    const raw: Sample[] = [];
    const eager: Sample[] = [];
    const lazy: Sample[] = [];
    for (let i = 0; i < ctx.runs; i++) {
      // Alternate the order so neither side always runs on a machine the other just loaded.
      const steps: Array<[Task, Sample[]]> = [
        [{ kind: 'warm-raw', n }, raw],
        [{ kind: 'warm', n, startup: 'eager' }, eager],
        [{ kind: 'warm', n, startup: 'lazy' }, lazy],
      ];
      for (const [task, into] of i % 2 === 0 ? steps : steps.reverse()) {
        const s = await run(task, configPath, cacheDir);
        into.push(s);
      }
      ctx.log(`  instant N=${n} run ${i + 1}: raw ${ms(raw.at(-1)!.ms)}, warm eager ${ms(eager.at(-1)!.ms)}, warm lazy ${ms(lazy.at(-1)!.ms)}`);
    }
    const rawMs = median(raw.map((s) => s.ms));
    const eagerMs = median(eager.map((s) => s.ms));
    const lazyMs = median(lazy.map((s) => s.ms));
    const r = ratio(eagerMs, rawMs);
    const absolute = n >= 50 ? eagerMs <= 50 : true;
    rows.push({
      section,
      figure: `N=${n}, warm cache: start → all ${n * TOOLS_PER_SERVER} tools registered (eager)`,
      ours: ms(eagerMs),
      baseline: ms(rawMs),
      ratio: r,
      target: n >= 50 ? '≤ 0.05 × raw and ≤ 50 ms' : '≤ 0.05 × raw',
      pass: r <= 0.05 && absolute,
    });
    rows.push({ section, figure: `  N=${n}, same with startup: lazy (nothing spawned)`, ours: ms(lazyMs), baseline: ms(rawMs), ratio: ratio(lazyMs, rawMs), target: '(info)' });
    details[`warm N=${n}`] = { rawMs: summarise(raw.map((s) => s.ms)), eagerMs: summarise(eager.map((s) => s.ms)), lazyMs: summarise(lazy.map((s) => s.ms)) };

    // The same warm start as a host sees it: a fresh process, the package entry, the host defaults.
    const host: Record<'eager' | 'lazy', Sample[]> = { eager: [], lazy: [] };
    for (let i = 0; i < ctx.runs; i++) {
      const order: Array<'eager' | 'lazy'> = i % 2 === 0 ? ['eager', 'lazy'] : ['lazy', 'eager'];
      for (const startup of order) host[startup].push(await run({ kind: 'warm-host', n, startup }, configPath, cacheDir));
      ctx.log(`  instant N=${n} host run ${i + 1}: eager ${ms(host.eager.at(-1)!.ms)} (next turn ${ms(host.eager.at(-1)!.turnMs!)}), lazy ${ms(host.lazy.at(-1)!.ms)}`);
    }
    const hostEager = median(host.eager.map((s) => s.ms));
    const hostEagerTurn = median(host.eager.map((s) => s.turnMs!));
    const hostLazy = median(host.lazy.map((s) => s.ms));
    const spawnedBefore = Math.max(...host.eager.map((s) => s.spawnedAtVisible!));
    const spawnedByTurn = Math.max(...host.eager.map((s) => s.spawnedAtTurn!));
    rows.push({
      section,
      figure: `  N=${n}, as a host sees it: start() → all cached tools visible, eager / lazy (fresh process, package entry)`,
      ours: `${ms(hostEager)} / ${ms(hostLazy)}`,
      target: '(info)',
    });
    rows.push({
      section,
      figure: `  N=${n}, as a host sees it: start() → the host's next turn after that (eager); processes spawned when visible / by that turn`,
      ours: `${ms(hostEagerTurn)}; ${spawnedBefore} / ${spawnedByTurn}`,
      target: 'none spawned before visible',
      pass: spawnedBefore === 0,
    });
    details[`warm host N=${n}`] = {
      eagerMs: summarise(host.eager.map((s) => s.ms)),
      eagerNextTurnMs: summarise(host.eager.map((s) => s.turnMs!)),
      lazyMs: summarise(host.lazy.map((s) => s.ms)),
      lazyNextTurnMs: summarise(host.lazy.map((s) => s.turnMs!)),
      spawnedAtVisible: host.eager.map((s) => s.spawnedAtVisible),
      spawnedAtTurn: host.eager.map((s) => s.spawnedAtTurn),
    };

    if (n === Math.min(...opts.sizes)) {
      // First call on a dormant server (one server of this config, cache warm).
      const oneConfig = join(ctx.tmp, 'instant-1.json');
      writeConfig(oneConfig, initialVersions(1));
      const oneCache = join(ctx.tmp, 'listing-cache-1');
      await run({ kind: 'fill', n: 1 }, oneConfig, oneCache);
      const rawCall: Sample[] = [];
      const dormantCall: Sample[] = [];
      // A pair takes ~1 s, and single runs of either side spread ±15 % (one spawn, one handshake):
      // wider than the 10 % margin, so this figure takes more runs than the others for a stable median.
      const callRuns = Math.max(ctx.runs, 15);
      for (let i = 0; i < callRuns; i++) {
        const steps: Array<[Task, Sample[]]> = [
          [{ kind: 'call-raw' }, rawCall],
          [{ kind: 'call-dormant' }, dormantCall],
        ];
        for (const [task, into] of i % 2 === 0 ? steps : steps.reverse()) into.push(await run(task, oneConfig, oneCache));
        ctx.log(`  first call run ${i + 1}: raw connect+call ${ms(rawCall.at(-1)!.ms)}, dormant ${ms(dormantCall.at(-1)!.ms)}`);
      }
      const a = median(dormantCall.map((s) => s.ms));
      const b = median(rawCall.map((s) => s.ms));
      rows.push({
        section,
        figure: 'first call on a dormant server (connect + call)',
        ours: ms(a),
        baseline: ms(b),
        ratio: ratio(a, b),
        target: '≤ 1.10 × raw',
        pass: ratio(a, b) <= 1.1,
      });
      details.firstCall = { dormantMs: summarise(dormantCall.map((s) => s.ms)), rawMs: summarise(rawCall.map((s) => s.ms)) };

      // A stale cache: every entry lists other tools than the servers do now.
      const staleCache = join(ctx.tmp, `listing-cache-stale-${n}`);
      const { ListingCache } = await import('../src/cache/listing-cache.js');
      const { fingerprint } = await import('../src/config/identity.js');
      const { realpathSync } = await import('node:fs');
      const cache = new ListingCache({ dir: staleCache, root: realpathSync(ctx.tmp) });
      const staleRuns: Sample[] = [];
      for (let i = 0; i < ctx.runs; i++) {
        for (const cfg of Object.values((JSON.parse(readFileSync(configPath, 'utf8')) as { mcpServers: Record<string, ServerConfig> }).mcpServers)) {
          const parsed: ServerConfig = { type: 'stdio', ...cfg };
          cache.store(fingerprint(parsed), 'stale', { tools: [{ name: `old_tool_${i}`, inputSchema: { type: 'object' } }], prompts: [] });
        }
        await cache.flush();
        staleRuns.push(await run({ kind: 'stale', n }, configPath, staleCache));
      }
      const worst = staleRuns.reduce((w, s) => (s.corrected! < w.corrected! || s.maxCommits! > w.maxCommits! ? s : w));
      rows.push({
        section,
        figure: `N=${n}, stale cache: servers correct after their first live listing`,
        ours: `${worst.corrected}/${n}, ≤ ${worst.maxCommits} listing`,
        target: `${n}/${n} within 1 listing`,
        pass: worst.corrected === n && worst.maxCommits === 1,
      });
      details.stale = { runs: staleRuns };
    }
  }

  // RSS of the whole process tree with 50 dormant servers vs the host alone.
  const big = Math.max(...opts.sizes, 50);
  const bigConfig = join(ctx.tmp, `instant-${big}.json`);
  writeConfig(bigConfig, initialVersions(big));
  const bigCache = join(ctx.tmp, `listing-cache-${big}`);
  if (!opts.sizes.includes(big)) await run({ kind: 'fill', n: big }, bigConfig, bigCache);
  const host: Sample[] = [];
  const dormant: Sample[] = [];
  for (let i = 0; i < ctx.runs; i++) {
    host.push(await run({ kind: 'rss-host' }, bigConfig, bigCache));
    dormant.push(await run({ kind: 'rss-dormant', n: big }, bigConfig, bigCache));
  }
  const hostRss = median(host.map((s) => s.treeRss!));
  const dormantRss = median(dormant.map((s) => s.treeRss!));
  rows.push({
    section,
    figure: `RSS of the process tree, ${big} dormant servers (${median(dormant.map((s) => s.processes!))} process)`,
    ours: mb(dormantRss),
    baseline: mb(hostRss),
    ratio: ratio(dormantRss, hostRss),
    target: '≤ 1.20 × host alone',
    pass: ratio(dormantRss, hostRss) <= 1.2,
  });
  details.rss = { hostMB: summarise(host.map((s) => s.treeRss! / 1048576)), dormantMB: summarise(dormant.map((s) => s.treeRss! / 1048576)) };
  return { rows, details };
}
