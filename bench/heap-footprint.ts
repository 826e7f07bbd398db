/**
 * Heap a host pays for the controller: V8 `heapUsed` after a full GC, with
 * the library imported and nothing started, and again once N stdio fixture
 * servers (test/fixtures/basic-server.ts) are connected through the
 * controller. Each run is a fresh process; the figures are medians. The same
 * run measures the baseline too (unless `--side ours`): N bare SDK v2
 * `Client`s (bench/support/servers.ts `rawConnect`) over the SDK's imports,
 * so "per connection" is ours against a bare client's, runs interleaved.
 * Per connection at N counts first-use costs (code compiled and tiered up,
 * SDK schemas built on first use) spread over N; `--servers 10,30` also
 * prints the marginal cost of the servers between the two sizes.
 *
 *   npm run build && node dist/bench/heap-footprint.js [--servers 10] [--runs 5] [--side both|ours|raw]
 *
 * Uses only the public API and the package entry, so the compiled file also
 * runs in a build of an older commit (copy it to that build's dist/bench/):
 * that is how the SDK v2 move was measured (01e5607 against main).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadLibrary, userConfigOptions } from './support/library.js';
import { FIXTURE, loadSdk, rawConnect, TOOLS_PER_SERVER, type RawConnection } from './support/servers.js';

const SELF = fileURLToPath(import.meta.url);

interface Sample {
  /** heapUsed after import, before any controller (bytes). */
  imported: number;
  /** heapUsed with every server connected (bytes). */
  connected: number;
  rss: number;
}

function settledHeap(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with node --expose-gc');
  // Several passes: weak references and finalizers free more on the second.
  for (let i = 0; i < 4; i++) gc();
  return process.memoryUsage().heapUsed;
}

type Side = 'ours' | 'raw';

/** The baseline in this process: N bare SDK v2 clients, connected in parallel, each having listed its tools. */
async function measureRaw(servers: number): Promise<Sample> {
  await loadSdk();
  const imported = settledHeap();
  const conns: RawConnection[] = [];
  try {
    await Promise.all(
      Array.from({ length: servers }, async () => {
        const conn = await rawConnect({ command: process.execPath, args: [FIXTURE] });
        conns.push(conn);
        if (conn.tools.length !== TOOLS_PER_SERVER) throw new Error(`expected ${TOOLS_PER_SERVER} tools, got ${conn.tools.length}`);
      }),
    );
    const connected = settledHeap();
    return { imported, connected, rss: process.memoryUsage().rss };
  } finally {
    await Promise.all(conns.map((c) => c.close()));
  }
}

/** One measurement in this process (the child side). */
async function measure(servers: number): Promise<Sample> {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-heap-'));
  try {
    const mcpServers = Object.fromEntries(
      Array.from({ length: servers }, (_, i) => [`s${String(i + 1).padStart(2, '0')}`, { command: process.execPath, args: [FIXTURE] }]),
    );
    const configPath = join(dir, 'settings.json');
    writeFileSync(configPath, JSON.stringify({ mcpServers }));
    const { createMcpController } = await loadLibrary();
    const imported = settledHeap();
    const ctl = createMcpController({
      ...userConfigOptions(dir, configPath),
      watch: false,
      listingCache: false,
      readyTimeoutMs: 300_000,
    });
    try {
      await ctl.start();
      const tools = ctl.tools().length;
      if (tools !== servers * TOOLS_PER_SERVER) throw new Error(`expected ${servers * TOOLS_PER_SERVER} tools, got ${tools}`);
      const connected = settledHeap();
      return { imported, connected, rss: process.memoryUsage().rss };
    } finally {
      await ctl.dispose();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

const mib = (b: number): string => `${(b / 1024 / 1024).toFixed(1)} MiB`;

const { values } = parseArgs({
  options: {
    servers: { type: 'string', default: '10' },
    runs: { type: 'string', default: '5' },
    side: { type: 'string', default: 'both' },
    child: { type: 'boolean', default: false },
  },
});
if (values.child) {
  const n = Number(values.servers);
  process.stdout.write(`${JSON.stringify(values.side === 'raw' ? await measureRaw(n) : await measure(n))}\n`);
} else {
  const sizes = values.servers.split(',').map(Number);
  const sides: Side[] = values.side === 'both' ? ['ours', 'raw'] : [values.side as Side];
  const samples = new Map<string, Sample[]>();
  const key = (side: Side, n: number): string => `${side}:${n}`;
  // Keep the user's state and config directories out of it.
  const home = mkdtempSync(join(tmpdir(), 'mcp-heap-home-'));
  try {
    for (let i = 0; i < Number(values.runs); i++) {
      // Interleaved, in rotating order, so load drifts hit every variant alike.
      const variants = sizes.flatMap((n) => sides.map((side) => ({ side, n })));
      for (let j = 0; j < variants.length; j++) {
        const { side, n } = variants[(i + j) % variants.length]!;
        const r = spawnSync(process.execPath, ['--expose-gc', SELF, '--child', '--side', side, '--servers', String(n)], {
          encoding: 'utf8',
          env: { ...process.env, HOME: home, XDG_CONFIG_HOME: join(home, 'config'), XDG_STATE_HOME: join(home, 'state'), XDG_CACHE_HOME: join(home, 'cache') },
        });
        if (r.status !== 0) throw new Error(`${side} run ${i + 1} (N=${n}) failed (${r.status}): ${r.stderr}`);
        const list = samples.get(key(side, n)) ?? [];
        list.push(JSON.parse(r.stdout.trim().split('\n').pop()!) as Sample);
        samples.set(key(side, n), list);
      }
    }
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
  const kib = (b: number): string => `${(b / 1024).toFixed(0)} KiB`;
  const result: Record<string, unknown> = { runs: Number(values.runs) };
  for (const side of sides) {
    const label = side === 'ours' ? 'controller' : 'bare v2 Client';
    const bySize: Record<number, { imported: number; connected: number; perServer: number; rss: number }> = {};
    for (const n of sizes) {
      const list = samples.get(key(side, n))!;
      const imported = median(list.map((s) => s.imported));
      const connected = median(list.map((s) => s.connected));
      // Per run, then the median: a run's import and connected heaps go together.
      const perServer = median(list.map((s) => (s.connected - s.imported) / n));
      const rss = median(list.map((s) => s.rss));
      bySize[n] = { imported, connected, perServer, rss };
      console.log(`${label.padEnd(15)} N=${n}: heap after import ${mib(imported)}, connected ${mib(connected)} (+${mib(connected - imported)}), ${kib(perServer)} per server, rss ${mib(rss)}`);
    }
    if (sizes.length > 1) {
      const [a, b] = [Math.min(...sizes), Math.max(...sizes)];
      const marginal = (bySize[b]!.connected - bySize[a]!.connected) / (b - a);
      console.log(`${label.padEnd(15)} marginal N=${a}→${b}: ${kib(marginal)} per server`);
      (bySize as Record<string, unknown>).marginal = marginal;
    }
    result[side] = bySize;
  }
  if (sides.length === 2) {
    for (const n of sizes) {
      const o = (result.ours as Record<number, { perServer: number }>)[n]!.perServer;
      const r = (result.raw as Record<number, { perServer: number }>)[n]!.perServer;
      console.log(`N=${n}: ours ${kib(o)} per server against a bare client's ${kib(r)} (+${kib(o - r)})`);
    }
  }
  console.log(JSON.stringify({ ...result, samples: Object.fromEntries(samples) }));
}
