/**
 * 4. Reconcile decision cost at scale: the pure machines with stub I/O (a
 * connect actor that resolves at once, a session actor that does nothing),
 * desired maps of 100 / 1 000 / 10 000 servers. Times one `CONFIG` event that
 * changes one server's fingerprint: the synchronous `actor.send` and the
 * settle until that server is connected again. The figure is the process's
 * CPU time over send + settle: the settle includes the `restartDelay` 0 ms
 * timer, whose wall-clock wait (≥ 1 ms, more on a busy machine) is not work. Heap per idle (connected)
 * server actor is measured with `--expose-gc`, each size in a fresh process.
 */
import { fileURLToPath } from 'node:url';
import type { AnyActorRef } from 'xstate';
import type { ConnectInput, ConnectionLostEvent, ConnectOutput, SessionInput } from '../machines/server.machine.js';
import type { DesiredMap, DesiredServer, GatingState } from '../machines/types.js';
import { ms, type BenchContext, type MeasurementResult, type Row, type SizedOptions } from './support/context.js';
import { median, ratio, summarise } from './support/stats.js';
import { runAsWorker } from './support/worker.js';

const SCRIPT = fileURLToPath(import.meta.url);

interface DecisionParams {
  n: number;
  /** Timed CONFIG events. */
  events: number;
}

interface DecisionSample {
  n: number;
  /** Start → every server connected (stub connects). */
  spawnAllMs: number;
  /** (heapUsed after settle − before start) / n, both after full GCs. */
  heapPerActor: number;
  /** The synchronous `send` of each timed event. */
  sendMs: number[];
  /** `send` until the changed server is connected again (includes waiting for a 0 ms timer). */
  settleMs: number[];
  /** CPU time (user + system) of this process from `send` until settled, garbage collection included. */
  cpuMs: number[];
}

function entry(name: string, version: number): DesiredServer {
  return {
    name,
    scope: 'user',
    source: '/bench/settings.json',
    config: { command: 'node', args: [`/bench/${name}.js`], env: { TOOLS_VERSION: String(version) } },
    fingerprint: `fp-${name}-${version}`,
    hash: `h-${name}-${version}`,
  };
}

/** A fresh, equal gating object each time, as the controller sends. */
function gating(): GatingState {
  return { excluded: [], trusted: true, approvals: {} };
}

async function fullGc(): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run this worker with --expose-gc');
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((r) => setImmediate(r));
  }
}

async function worker(p: DecisionParams): Promise<DecisionSample> {
  const { createActor, fromCallback, fromPromise } = await import('xstate');
  const { reconcilerMachine, serverMachine, stateNameOf } = await import('../machines/index.js');
  const server = serverMachine.provide({
    actors: {
      connect: fromPromise<ConnectOutput, ConnectInput>(async ({ input }) => ({ generation: input.generation })),
      session: fromCallback<ConnectionLostEvent, SessionInput>(() => undefined),
    },
  });
  const logic = reconcilerMachine.provide({ actors: { server } });

  const names = Array.from({ length: p.n }, (_, i) => `server_${i}`);
  let desired: DesiredMap = Object.fromEntries(names.map((n) => [n, entry(n, 1)]));
  await fullGc();
  const heapBefore = process.memoryUsage().heapUsed;

  const t0 = performance.now();
  const actor = createActor(logic, { input: { desired, gating: gating() } });
  actor.start();
  type Snap = Parameters<typeof stateNameOf>[0] & { context: { generation: number } };
  const children = (): Record<string, AnyActorRef> => actor.getSnapshot().children as Record<string, AnyActorRef>;
  const connected = (ref: AnyActorRef | undefined): boolean => ref !== undefined && stateNameOf(ref.getSnapshot() as Snap) === 'connected';
  while (!names.every((n) => connected(children()[n]))) await new Promise((r) => setImmediate(r));
  const spawnAllMs = performance.now() - t0;
  await fullGc();
  const heapPerActor = (process.memoryUsage().heapUsed - heapBefore) / p.n;

  const versions = new Map<string, number>();
  const sendMs: number[] = [];
  const settleMs: number[] = [];
  const cpuMs: number[] = [];
  const warmup = 5;
  for (let i = 0; i < warmup + p.events; i++) {
    // A different server each time, spread over the map.
    const name = names[(i * 7919) % p.n]!;
    const version = (versions.get(name) ?? 1) + 1;
    versions.set(name, version);
    desired = { ...desired, [name]: entry(name, version) };
    const ref = children()[name]!;
    const before = (ref.getSnapshot() as Snap).context.generation;
    const next = { type: 'CONFIG' as const, desired, gating: gating() };
    const settled = new Promise<void>((resolve) => {
      const sub = ref.subscribe((snap: Snap) => {
        if (snap.context.generation > before && stateNameOf(snap) === 'connected') {
          sub.unsubscribe();
          resolve();
        }
      });
    });
    const cpu0 = process.cpuUsage();
    const a = performance.now();
    actor.send(next);
    const b = performance.now();
    await settled;
    const c = performance.now();
    const cpu = process.cpuUsage(cpu0);
    if (i >= warmup) {
      sendMs.push(b - a);
      settleMs.push(c - a);
      cpuMs.push((cpu.user + cpu.system) / 1000);
    }
    // Space the events out a little, as config saves are.
    await new Promise((r) => setTimeout(r, 2));
  }
  // No actor.stop(): stopping N children is O(N²) in XState 5.33 (each stopChild
  // copies the children map, each stopped actor scans every scheduled event),
  // minutes at 10 000. The worker exits instead.
  return { n: p.n, spawnAllMs, heapPerActor, sendMs, settleMs, cpuMs };
}

runAsWorker<DecisionParams, DecisionSample>(import.meta.url, worker);

// ── runner half ─────────────────────────────────────────────────────────────

/** Run measurement 4. */
export async function decisionCost(ctx: BenchContext, opts: SizedOptions): Promise<MeasurementResult> {
  const rows: Row[] = [];
  const details: Record<string, unknown> = {};
  const perSize: { n: number; cost: number }[] = [];
  for (const n of opts.sizes) {
    const events = Math.max(ctx.runs, 15);
    const s = await ctx.workers.run<DecisionSample>(SCRIPT, { n, events } satisfies DecisionParams, {
      execArgv: ctx.execArgv('decision', ['--expose-gc']),
      timeoutMs: 120_000,
    });
    const settle = median(s.settleMs);
    const send = median(s.sendMs);
    const cost = median(s.cpuMs);
    perSize.push({ n, cost });
    ctx.log(
      `  decision N=${n}: CPU ${ms(cost)}, send ${ms(send)}, send+settle ${ms(settle)} wall, ${(s.heapPerActor / 1024).toFixed(1)} KB/actor, spawn all ${ms(s.spawnAllMs)}`,
    );
    details[`N=${n}`] = {
      cpuMs: summarise(s.cpuMs),
      sendMs: summarise(s.sendMs),
      sendAndSettleWallMs: summarise(s.settleMs),
      heapBytesPerIdleActor: Math.round(s.heapPerActor),
      spawnAllMs: Math.round(s.spawnAllMs),
    };
    rows.push({
      section: '4 decision cost',
      figure: `one CONFIG changing 1 of ${n.toLocaleString('en')}: CPU of send + settle (wall: send ${ms(send)}, send + settle ${ms(settle)})`,
      ours: ms(cost),
      target: n === 1_000 ? '≤ 5 ms' : '(info)',
      ...(n === 1_000 ? { pass: cost <= 5 } : {}),
    });
    rows.push({
      section: '4 decision cost',
      figure: `start with ${n.toLocaleString('en')} servers, stub connects (one run)`,
      ours: ms(s.spawnAllMs),
      target: '(info)',
    });
    rows.push({
      section: '4 decision cost',
      figure: `heap per idle server actor, N=${n.toLocaleString('en')}`,
      ours: `${(s.heapPerActor / 1024).toFixed(1)} KB`,
      target: n >= 1_000 ? '≤ 20 KB' : '(info)',
      ...(n >= 1_000 ? { pass: s.heapPerActor <= 20 * 1024 } : {}),
    });
  }
  // Growth: the exponent k in cost ∝ N^k between consecutive sizes; linear is 1.
  for (let i = 1; i < perSize.length; i++) {
    const a = perSize[i - 1]!;
    const b = perSize[i]!;
    const k = Math.log(b.cost / a.cost) / Math.log(b.n / a.n);
    const last = i === perSize.length - 1;
    rows.push({
      section: '4 decision cost',
      figure: `growth exponent k (cost ∝ N^k), ${a.n.toLocaleString('en')} → ${b.n.toLocaleString('en')}`,
      ours: k.toFixed(2),
      ratio: ratio(b.cost, a.cost),
      target: last ? '≤ 1.15 (linear = 1)' : '(info)',
      ...(last ? { pass: k <= 1.15 } : {}),
    });
    (details as Record<string, unknown>)[`growth ${a.n}→${b.n}`] = { exponent: Math.round(k * 1000) / 1000, costRatio: ratio(b.cost, a.cost) };
  }
  return { rows, details };
}
