/**
 * What a cold start allocates: V8's sampling heap profiler (objects the young
 * and old collections freed included) around a start of N stdio fixture
 * servers, through the controller (the package entry) or through N bare SDK v2
 * `Client`s (bench/support/servers.ts `rawConnect`), each in a fresh process,
 * sides interleaved. Prints the bytes allocated during the start by module
 * (`ours` = dist/lib, XState's chunk shown apart) and the heaviest functions
 * of the controller side, with the RSS, the young generation's size and the
 * scavenges counted, so garbage made during a start can be followed to its
 * allocation site (docs/start-allocation.md). Sampled every 4 KiB: figures
 * vary by a few percent between runs.
 *
 *   npm run build && node dist/bench/start-allocation.js [--servers 50] [--runs 2] [--kind light|basic] [--top 25]
 *
 * Uses only the public API and the package entry, so the compiled file also
 * runs in a build of an older commit (copy it to that build's dist/bench/).
 */
import { Session } from 'node:inspector/promises';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { getHeapSpaceStatistics } from 'node:v8';
import { loadLibrary, userConfigOptions } from './support/library.js';
import { runJsonWorker } from './support/worker.js';
import { fixtureConfig, initialVersions, loadSdk, rawConnect, TOOLS_PER_SERVER, writeConfig, type FixtureKind, type RawConnection } from './support/servers.js';

const SELF = fileURLToPath(import.meta.url);

type Side = 'ours' | 'raw';

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

interface Sample {
  side: Side;
  allocated: number;
  byModule: Record<string, number>;
  byFunction: Record<string, number>;
  rss: number;
  newSpace: number;
  scavenges: number;
}

/** A module's short name: `ours`, `xstate` (our bundle's XState chunk), a package, or a `node:` module. */
function moduleOf(url: string): string {
  if (url === '') return '(native)';
  if (/\/dist\/lib\/active-[^/]*\.js$/.test(url)) return 'xstate';
  if (/\/dist\/lib\//.test(url)) return 'ours';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg) return pkg[1]!;
  return url.startsWith('node:') ? url : '(other)';
}

/** Bytes by module and by function, each sample charged to its nearest frame with a script (natives count for their caller). */
function aggregate(head: ProfileNode): Pick<Sample, 'allocated' | 'byModule' | 'byFunction'> {
  const byModule: Record<string, number> = {};
  const byFunction: Record<string, number> = {};
  let allocated = 0;
  const walk = (node: ProfileNode, owner: { module: string; fn: string } | undefined): void => {
    const { url, functionName, lineNumber } = node.callFrame;
    const here = url ? { module: moduleOf(url), fn: `${functionName || '(anonymous)'} ${url.replace(/^.*\/(dist\/lib\/|node_modules\/)/, '')}:${lineNumber + 1}` } : owner;
    const at = here ?? { module: '(native)', fn: '(native)' };
    allocated += node.selfSize;
    byModule[at.module] = (byModule[at.module] ?? 0) + node.selfSize;
    if (at.module === 'ours' || at.module === 'xstate') byFunction[at.fn] = (byFunction[at.fn] ?? 0) + node.selfSize;
    for (const child of node.children) walk(child, here);
  };
  walk(head, undefined);
  return { allocated, byModule, byFunction };
}

async function measure(side: Side, servers: number, kind: FixtureKind): Promise<Sample> {
  const dir = mkdtempSync(join(tmpdir(), 'start-alloc-'));
  const configPath = join(dir, 'settings.json');
  writeConfig(configPath, initialVersions(servers), kind);
  const library = side === 'ours' ? await loadLibrary() : undefined;
  if (side === 'raw') await loadSdk();
  let scavenges = 0;
  const gcs = new PerformanceObserver((list) => {
    // kind 1: NODE_PERFORMANCE_GC_MINOR (a scavenge).
    for (const e of list.getEntries()) if ((e as { detail?: { kind?: number } }).detail?.kind === 1) scavenges++;
  });
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  gcs.observe({ entryTypes: ['gc'] });
  let close: () => Promise<unknown>;
  if (library) {
    const ctl = library.createMcpController({ ...userConfigOptions(dir, configPath), watch: false, listingCache: false, processStateFile: false, readyTimeoutMs: 120_000 });
    close = () => ctl.dispose();
    await ctl.start();
    if (ctl.tools().length !== servers * TOOLS_PER_SERVER) throw new Error(`controller registered ${ctl.tools().length} tools`);
  } else {
    const conns: RawConnection[] = [];
    close = () => Promise.all(conns.map((c) => c.close()));
    await Promise.all(Array.from({ length: servers }, async () => conns.push(await rawConnect(fixtureConfig('1', kind)))));
  }
  const rss = process.memoryUsage().rss;
  const newSpace = getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? 0;
  const { profile } = (await session.post('HeapProfiler.stopSampling')) as unknown as { profile: { head: ProfileNode } };
  await new Promise((resolve) => setImmediate(resolve));
  gcs.disconnect();
  session.disconnect();
  await close();
  rmSync(dir, { recursive: true, force: true });
  return { side, ...aggregate(profile.head), rss, newSpace, scavenges };
}

const MB = (n: number): string => (n / 1e6).toFixed(2);

function top(record: Record<string, number>, n: number): Array<[string, number]> {
  return Object.entries(record)
    .sort((a, b) => b[1] - a[1])
    .slice(0, n);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      worker: { type: 'string' },
      servers: { type: 'string', default: '50' },
      runs: { type: 'string', default: '2' },
      kind: { type: 'string', default: 'light' },
      top: { type: 'string', default: '25' },
    },
  });
  const servers = Number(values.servers);
  const kind = values.kind as FixtureKind;
  if (values.worker) {
    process.stdout.write(JSON.stringify(await measure(values.worker as Side, servers, kind)));
    return;
  }
  const samples: Sample[] = [];
  for (let run = 0; run < Number(values.runs); run++) {
    for (const side of (run % 2 === 0 ? ['raw', 'ours'] : ['ours', 'raw']) as Side[]) {
      const s = runJsonWorker<Sample>(SELF, ['--worker', side, '--servers', String(servers), '--kind', kind], side);
      samples.push(s);
      console.log(`run ${run + 1} ${side.padEnd(4)}: allocated ${MB(s.allocated)} MB, RSS ${MB(s.rss)} MB, young generation ${MB(s.newSpace)} MB, ${s.scavenges} scavenges`);
    }
  }
  const n = Number(values.top);
  for (const side of ['raw', 'ours'] as Side[]) {
    const mine = samples.filter((s) => s.side === side);
    const mean = (pick: (s: Sample) => Record<string, number>): Record<string, number> => {
      const out: Record<string, number> = {};
      for (const s of mine) for (const [k, v] of Object.entries(pick(s))) out[k] = (out[k] ?? 0) + v / mine.length;
      return out;
    };
    console.log(`\n${side}: ${MB(mine.reduce((a, s) => a + s.allocated, 0) / mine.length)} MB allocated during the start of ${servers} ${kind} servers (mean of ${mine.length}); by module:`);
    for (const [k, v] of top(mean((s) => s.byModule), 12)) console.log(`  ${MB(v).padStart(6)}  ${k}`);
    if (side === 'ours') {
      console.log(`ours: heaviest functions of the package (ours and its XState chunk):`);
      for (const [k, v] of top(mean((s) => s.byFunction), n)) console.log(`  ${MB(v).padStart(6)}  ${k}`);
    }
  }
}

await main();
