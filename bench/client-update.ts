/**
 * What `client-update` costs a host that listens (docs/client-update.md): a
 * cold start of N light fixture servers, then a config edit of one of them,
 * each in a fresh process, with no listener, with a bare `client-update`
 * listener, or with the gateway's pool (which re-checks prompts on each
 * update). Counts, not times: the `client-update` events, the status rows
 * they carried (each event builds every row), the pool's prompt passes; and
 * the host's own CPU for the start (`process.cpuUsage`, children excluded).
 *
 *   npm run build && node dist/bench/client-update.js [--servers 50] [--runs 3]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createMcpController } from '../src/index.js';
import { GatewayPool } from '../src/gateway/pool.js';
import { userConfigOptions } from './support/library.js';
import { initialVersions, TOOLS_PER_SERVER, writeConfig } from './support/servers.js';
import { median } from './support/stats.js';
import { runJsonWorker } from './support/worker.js';

const SELF = fileURLToPath(import.meta.url);

type Mode = 'none' | 'listener' | 'pool';
const MODES: Mode[] = ['none', 'listener', 'pool'];

interface Counts {
  updates: number;
  rows: number;
  promptPasses: number;
}

interface Sample {
  mode: Mode;
  start: Counts & { cpuMs: number };
  edit: Counts;
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

async function measure(mode: Mode, servers: number): Promise<Sample> {
  const dir = mkdtempSync(join(tmpdir(), 'client-update-'));
  const configPath = join(dir, 'settings.json');
  const versions = initialVersions(servers);
  writeConfig(configPath, versions, 'light');
  const c = createMcpController({ ...userConfigOptions(dir, configPath), watch: false, listingCache: false, processStateFile: false, logDir: false, readyTimeoutMs: 120_000 });
  const counts: Counts = { updates: 0, rows: 0, promptPasses: 0 };
  let pool: GatewayPool | undefined;
  if (mode !== 'none') {
    c.on('client-update', ({ status }) => {
      counts.updates++;
      counts.rows += status.length;
    });
  }
  if (mode === 'pool') {
    pool = new GatewayPool(c);
    // Count the pool's prompt passes (a private method, wrapped on this instance only).
    const p = pool as unknown as { checkPrompts: (...a: unknown[]) => void };
    const original = p.checkPrompts.bind(pool);
    p.checkPrompts = (...a: unknown[]) => {
      counts.promptPasses++;
      original(...a);
    };
  }
  const cpu0 = process.cpuUsage();
  await (pool ? pool.start() : c.start());
  await turn();
  const cpu = process.cpuUsage(cpu0);
  if (c.tools().length !== servers * TOOLS_PER_SERVER) throw new Error(`registered ${c.tools().length} tools`);
  const start = { ...counts, cpuMs: (cpu.user + cpu.system) / 1000 };
  Object.assign(counts, { updates: 0, rows: 0, promptPasses: 0 });
  // One config edit: the first server's env changes, so it restarts with a `v2_tool`.
  const first = Object.keys(versions)[0]!;
  writeConfig(configPath, { ...versions, [first]: '2' }, 'light');
  await c.reload();
  for (;;) {
    const row = c.status().find((r) => r.name === first);
    if (row?.state === 'connected' && c.tools().some((t) => t.name === `mcp__${first}__v2_tool`)) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await turn();
  const edit = { ...counts };
  pool?.close();
  await c.dispose();
  rmSync(dir, { recursive: true, force: true });
  return { mode, start, edit };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      worker: { type: 'string' },
      servers: { type: 'string', default: '50' },
      runs: { type: 'string', default: '3' },
    },
  });
  const servers = Number(values.servers);
  if (values.worker) {
    process.stdout.write(JSON.stringify(await measure(values.worker as Mode, servers)));
    return;
  }
  const samples: Sample[] = [];
  for (let run = 0; run < Number(values.runs); run++) {
    const order = run % 2 === 0 ? MODES : [...MODES].reverse();
    for (const mode of order) {
      const s = runJsonWorker<Sample>(SELF, ['--worker', mode, '--servers', String(servers)], mode);
      samples.push(s);
      console.log(
        `run ${run + 1} ${mode.padEnd(8)}: start ${s.start.updates} updates, ${s.start.rows} rows, ${s.start.promptPasses} prompt passes, ${s.start.cpuMs.toFixed(0)} ms CPU; ` +
          `edit ${s.edit.updates} updates, ${s.edit.rows} rows, ${s.edit.promptPasses} prompt passes`,
      );
    }
  }
  console.log(`\nmedians over ${values.runs} runs, ${servers} light servers:`);
  for (const mode of MODES) {
    const mine = samples.filter((s) => s.mode === mode);
    const m = (pick: (s: Sample) => number): number => median(mine.map(pick));
    console.log(
      `  ${mode.padEnd(8)} start: ${m((s) => s.start.updates)} updates, ${m((s) => s.start.rows)} rows, ${m((s) => s.start.promptPasses)} prompt passes, ${m((s) => s.start.cpuMs).toFixed(0)} ms host CPU; ` +
        `edit: ${m((s) => s.edit.updates)} updates, ${m((s) => s.edit.rows)} rows, ${m((s) => s.edit.promptPasses)} prompt passes`,
    );
  }
}

await main();
