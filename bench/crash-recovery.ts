/**
 * 5. Crash recovery. A controller connects S fixture servers and leaves them
 * idle until each has been up longer than the healthy threshold (30 s by
 * default; the runner starts this worker first and runs the other
 * measurements meanwhile, so the wait costs nothing) — or, for the "first
 * loss" figure, only `upBeforeKillMs` (a crash early in a run with no
 * failures, which the supervisor forgives and retries at once). Then, one server at a
 * time, its child is SIGKILLed and `callTool` is retried (on each state change
 * of the server and every 25 ms) until the server's `echo` answers again. Baseline, in the same worker and alternating order: a
 * raw-SDK connect + list + the same call.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ms, type BenchContext, type MeasurementResult, type Row } from './support/context.js';
import { loadLibrary, userConfigOptions } from './support/library.js';
import { fixtureConfig, initialVersions, loadSdk, rawConnect, registeredName, serverNames, sleep, writeConfig } from './support/servers.js';
import { median, ratio, summarise } from './support/stats.js';
import { runAsWorker, type WorkerHandle } from './support/worker.js';

const SCRIPT = fileURLToPath(import.meta.url);
const DEFAULT_HEALTHY_MS = 30_000;

interface CrashParams {
  servers: number;
  dir: string;
  /** Overrides the supervisor's healthy threshold (`backoff.healthyMs`). */
  healthyMs?: number;
  /** Kill once a server has been up this long instead of waiting for a healthy run. */
  upBeforeKillMs?: number;
}

interface CrashRun {
  server: string;
  /** How long the server had been up when it was killed. */
  upMs: number;
  /** SIGKILL → first successful call. */
  recoveryMs: number;
  /** Raw-SDK connect + list + call of the same config. */
  rawMs: number;
  /** The server's states from the kill to the recovery, with when they were entered (ms after the kill). */
  states: string[];
}

interface CrashSample {
  runs: CrashRun[];
}

async function rawConnectAndCall(): Promise<number> {
  const t0 = performance.now();
  const conn = await rawConnect(fixtureConfig('1'));
  await conn.client.callTool({ name: 'echo', arguments: { text: 'ping' } });
  const took = performance.now() - t0;
  await conn.close();
  return took;
}

runAsWorker<CrashParams, CrashSample>(import.meta.url, async (p, io) => {
  const { createMcpController } = await loadLibrary();
  await loadSdk();
  const configPath = join(p.dir, 'crash.json');
  const names = serverNames(p.servers);
  writeConfig(configPath, initialVersions(p.servers));
  const ctl = createMcpController({
    ...userConfigOptions(p.dir, configPath, 'approvals-crash.json'),
    watch: false,
    // Measured cold: no listing cache from an earlier run (SPEC §12 measures the warm start).
    listingCache: false,
    readyTimeoutMs: 120_000,
    ...(p.healthyMs === undefined ? {} : { backoff: { healthyMs: p.healthyMs } }),
  });
  const connectedAt = new Map<string, number>();
  const states = new Map<string, string[]>();
  const killedAt = new Map<string, number>();
  ctl.on('server-state', (e) => {
    if (e.state === 'connected') connectedAt.set(e.name, performance.now());
    const t0 = killedAt.get(e.name);
    states.get(e.name)?.push(t0 === undefined ? e.state : `${e.state}@${Math.round(performance.now() - t0)}`);
  });
  const runs: CrashRun[] = [];
  try {
    await ctl.start();
    if (ctl.status().some((s) => s.state !== 'connected')) throw new Error('not every crash-test server connected');
    io.send('ready');
    await io.receive('go');
    const upBeforeKill = p.upBeforeKillMs ?? (p.healthyMs ?? DEFAULT_HEALTHY_MS) + 200;
    for (const [i, name] of names.entries()) {
      const upFor = performance.now() - connectedAt.get(name)!;
      if (upFor < upBeforeKill) await sleep(upBeforeKill - upFor);
      const rawFirst = i % 2 === 0;
      let rawMs = rawFirst ? await rawConnectAndCall() : 0;
      if (rawFirst) await sleep(300);

      const pid = ctl.status().find((s) => s.name === name)?.pid;
      if (pid === undefined) throw new Error(`${name} has no process`);
      const tool = registeredName(name, 'echo');
      states.set(name, []);
      const upMs = performance.now() - connectedAt.get(name)!;
      const t0 = performance.now();
      killedAt.set(name, t0);
      process.kill(pid, 'SIGKILL');
      // Retry the call when the server changes state, and every 25 ms besides (a
      // tighter loop would take CPU from the server that is starting).
      const recoveredAt = await new Promise<number>((resolve, reject) => {
        let done = false;
        let inFlight = false;
        const attempt = (): void => {
          if (done || inFlight) return;
          inFlight = true;
          ctl
            .callTool(tool, { text: 'ping' }, { timeoutMs: 5_000 })
            .then((result) => {
              if (!result.isError) finish(performance.now());
            })
            .catch(() => undefined)
            .finally(() => {
              inFlight = false;
            });
        };
        const off = ctl.on('server-state', (e) => {
          if (e.name === name) attempt();
        });
        const timer = setInterval(attempt, 25);
        const deadline = setTimeout(() => {
          finish(undefined);
        }, 30_000);
        function finish(at: number | undefined): void {
          if (done) return;
          done = true;
          off();
          clearInterval(timer);
          clearTimeout(deadline);
          if (at === undefined) reject(new Error(`${name} did not answer within 30 s of SIGKILL (states: ${states.get(name)?.join(' → ')})`));
          else resolve(at);
        }
      });
      const runStates = [...(states.get(name) ?? []), `answered@${Math.round(recoveredAt - t0)}`];
      states.delete(name);
      await sleep(300);
      if (!rawFirst) {
        rawMs = await rawConnectAndCall();
        await sleep(300);
      }
      runs.push({ server: name, upMs, recoveryMs: recoveredAt - t0, rawMs, states: runStates });
    }
  } finally {
    await ctl.dispose();
  }
  return { runs };
});

// ── runner half ─────────────────────────────────────────────────────────────

/** A crash worker that is connected and waiting. */
export interface CrashHandle {
  worker: WorkerHandle<CrashSample>;
  healthyMs: number;
  upBeforeKillMs: number | undefined;
}

/** Start the crash worker and wait until its servers are connected (the healthy clock runs from there). */
export async function startCrashWorker(
  ctx: BenchContext,
  opts: { servers: number; healthyMs: number | undefined; upBeforeKillMs?: number },
): Promise<CrashHandle> {
  const params: CrashParams = {
    servers: opts.servers,
    dir: ctx.tmp,
    ...(opts.healthyMs === undefined ? {} : { healthyMs: opts.healthyMs }),
    ...(opts.upBeforeKillMs === undefined ? {} : { upBeforeKillMs: opts.upBeforeKillMs }),
  };
  // The healthy-run worker idles while every other measurement runs (15+ minutes on a slow machine).
  const worker = ctx.workers.start<CrashSample>(SCRIPT, params, { execArgv: ctx.execArgv('crash'), timeoutMs: 3_600_000 });
  await Promise.race([worker.receive('ready'), worker.result]);
  const waitMs = opts.upBeforeKillMs ?? opts.healthyMs ?? DEFAULT_HEALTHY_MS;
  ctx.log(`5. crash recovery: ${opts.servers} servers connected; waiting for them to be up ≥ ${waitMs / 1000} s`);
  return { worker, healthyMs: opts.healthyMs ?? DEFAULT_HEALTHY_MS, upBeforeKillMs: opts.upBeforeKillMs };
}

/** Run measurement 5 on a worker from {@link startCrashWorker}. */
export async function crashRecovery(ctx: BenchContext, handle: CrashHandle): Promise<MeasurementResult> {
  handle.worker.send('go');
  const s = await handle.worker.result;
  for (const r of s.runs) {
    ctx.log(`  crash ${r.server} (up ${(r.upMs / 1000).toFixed(1)} s): ${ms(r.recoveryMs)} (raw ${ms(r.rawMs)}) ${r.states.join(' → ')}`);
  }
  const rec = median(s.runs.map((r) => r.recoveryMs));
  const raw = median(s.runs.map((r) => r.rawMs));
  const rr = ratio(rec, raw);
  const healthyNote =
    handle.upBeforeKillMs !== undefined
      ? `first loss, up ${handle.upBeforeKillMs / 1000} s`
      : handle.healthyMs === DEFAULT_HEALTHY_MS
        ? 'up ≥ 30 s'
        : `healthyMs ${handle.healthyMs} (--fast-crash)`;
  return {
    rows: [
      {
        section: '5 crash recovery',
        figure: `SIGKILL → tool answers again (${healthyNote})`,
        ours: ms(rec),
        baseline: ms(raw),
        ratio: rr,
        target: '≤ 1.20 × raw connect',
        pass: rr <= 1.2,
      },
    ],
    details: {
      healthyMs: handle.healthyMs,
      upBeforeKillMs: handle.upBeforeKillMs,
      recoveryMs: summarise(s.runs.map((r) => r.recoveryMs)),
      rawConnectListCallMs: summarise(s.runs.map((r) => r.rawMs)),
      ratio: rr,
      runs: s.runs,
    },
  };
}
