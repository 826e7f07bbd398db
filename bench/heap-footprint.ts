/**
 * Heap a host pays for the controller: V8 `heapUsed` after a full GC, with
 * the library imported and nothing started, and again once N stdio fixture
 * servers (test/fixtures/basic-server.ts) are connected through the
 * controller. Each run is a fresh process; the figures are medians.
 *
 *   npm run build && node dist/bench/heap-footprint.js [--servers 10] [--runs 5]
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
import { FIXTURE, TOOLS_PER_SERVER } from './support/servers.js';

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

const { values } = parseArgs({ options: { servers: { type: 'string', default: '10' }, runs: { type: 'string', default: '5' }, child: { type: 'boolean', default: false } } });
const servers = Number(values.servers);
if (values.child) {
  process.stdout.write(`${JSON.stringify(await measure(servers))}\n`);
} else {
  const samples: Sample[] = [];
  // Keep the user's state and config directories out of it.
  const home = mkdtempSync(join(tmpdir(), 'mcp-heap-home-'));
  try {
    for (let i = 0; i < Number(values.runs); i++) {
      const r = spawnSync(process.execPath, ['--expose-gc', SELF, '--child', '--servers', String(servers)], {
        encoding: 'utf8',
        env: { ...process.env, HOME: home, XDG_CONFIG_HOME: join(home, 'config'), XDG_STATE_HOME: join(home, 'state'), XDG_CACHE_HOME: join(home, 'cache') },
      });
      if (r.status !== 0) throw new Error(`run ${i + 1} failed (${r.status}): ${r.stderr}`);
      samples.push(JSON.parse(r.stdout.trim().split('\n').pop()!) as Sample);
    }
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
  const imported = median(samples.map((s) => s.imported));
  const connected = median(samples.map((s) => s.connected));
  console.log(`heap after import:            ${mib(imported)}`);
  console.log(`heap with ${servers} servers connected: ${mib(connected)} (+${mib(connected - imported)} over import)`);
  console.log(`rss with ${servers} servers connected:  ${mib(median(samples.map((s) => s.rss)))}`);
  console.log(JSON.stringify({ servers, runs: samples.length, imported, connected, perServer: (connected - imported) / servers, samples }));
}
