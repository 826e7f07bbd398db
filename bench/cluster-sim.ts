/**
 * docs/cluster.md, the capacity model as a small discrete-event simulation.
 * Run `node dist/bench/cluster-sim.js` after `node dist/bench/cluster.js`.
 *
 * Model: every process is a single-threaded FCFS station (the client process,
 * each replica's gateway, each replica's managed server). A call visits
 * client → gateway → server → gateway → client; the client's and the
 * gateway's CPU per call (measured) is split evenly between the way there and
 * back. Service demands are exponential around the measured CPU ms. The
 * stations share Q cores by processor sharing: a busy station runs at speed
 * min(1, Q / busy). On a dedicated machine Q is its core count. On the
 * shared bench machine Q is the CPU share the scheduler grants the bench's
 * processes: they are one session, so one autogroup, one scheduling entity
 * against everybody else's (see bench/support/servers.ts), and their CPU per
 * second stays the same whatever their concurrency. Q is calibrated from the
 * one-client measurement alone (one station busy at a time: wall time per
 * call = CPU per call / min(1, Q)); the 8-client throughput is then
 * predicted and compared with the measurement (target ±20 %), before
 * predicting a fleet on dedicated machines.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

interface Results {
  cores: number;
  perCall: { meanMs: number; cpuMs: { client: number; gateway: number; server: number }; redisOps: number };
  perSession: { redisOps: number; rssKb: number };
  throughput: { clients: number; replicas: number; callsPerS: number; meanMs: number };
}

const results = JSON.parse(readFileSync(fileURLToPath(new URL('../../bench/cluster-results.json', import.meta.url)), 'utf8')) as Results;

/** A small seeded PRNG (mulberry32), so a run is reproducible. */
function rng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Job {
  route: { station: number; demand: number }[];
  at: number;
  started: number;
  client: number;
}

interface SimOptions {
  /** Q: the cores the stations share. */
  cores: number;
  replicas: number;
  cpu: { client: number; gateway: number; server: number };
  /** Closed loop: this many clients with no think time, client i on replica i % replicas; the client station is one process. */
  closedClients?: number;
  /** Open loop: Poisson arrivals per ms across the fleet (clients elsewhere: no client station). */
  arrivalsPerMs?: number;
  durationMs: number;
  seed?: number;
}

/**
 * Time-stepped processor-sharing simulation. Stations: 0 = client process,
 * 1 + 2r = gateway of replica r, 2 + 2r = its managed server.
 */
export function simulate(o: SimOptions): { callsPerS: number; meanMs: number; p99Ms: number; utilisation: number[] } {
  const random = rng(o.seed ?? 1);
  const exp = (mean: number) => -Math.log(1 - random()) * mean;
  const stations = 1 + 2 * o.replicas;
  const queues: Job[][] = Array.from({ length: stations }, () => []);
  const left = new Array<number>(stations).fill(0);
  const busyTime = new Array<number>(stations).fill(0);
  const latencies: number[] = [];
  const withClient = o.closedClients !== undefined;
  const newJob = (client: number, replica: number, now: number): Job => {
    const gw = 1 + 2 * replica;
    const route = [
      ...(withClient ? [{ station: 0, demand: exp(o.cpu.client / 2) }] : []),
      { station: gw, demand: exp(o.cpu.gateway / 2) },
      { station: gw + 1, demand: exp(o.cpu.server) },
      { station: gw, demand: exp(o.cpu.gateway / 2) },
      ...(withClient ? [{ station: 0, demand: exp(o.cpu.client / 2) }] : []),
    ];
    return { route, at: now, started: now, client };
  };
  const enqueue = (job: Job): void => {
    const q = queues[job.route[0]!.station]!;
    q.push(job);
    if (q.length === 1) left[job.route[0]!.station] = job.route[0]!.demand;
  };
  for (let c = 0; c < (o.closedClients ?? 0); c++) enqueue(newJob(c, c % o.replicas, 0));
  const dt = 0.02;
  let nextArrival = o.arrivalsPerMs ? exp(1 / o.arrivalsPerMs) : Infinity;
  let arrivals = 0;
  const warm = o.durationMs * 0.1;
  for (let now = 0; now < o.durationMs; now += dt) {
    while (nextArrival <= now) {
      enqueue(newJob(arrivals, arrivals++ % o.replicas, nextArrival));
      nextArrival += exp(1 / o.arrivalsPerMs!);
    }
    let busy = 0;
    for (let s = 0; s < stations; s++) if (queues[s]!.length > 0) busy++;
    const speed = Math.min(1, o.cores / Math.max(1, busy));
    for (let s = 0; s < stations; s++) {
      const q = queues[s]!;
      if (q.length === 0) continue;
      busyTime[s]! += dt;
      left[s]! -= dt * speed;
      if (left[s]! > 0) continue;
      const job = q.shift()!;
      if (q.length > 0) left[s] = q[0]!.route[0]!.demand;
      job.route.shift();
      if (job.route.length > 0) {
        enqueue(job);
        continue;
      }
      if (job.started >= warm) latencies.push(now - job.started);
      if (withClient) enqueue(newJob(job.client, job.client % o.replicas, now));
    }
  }
  latencies.sort((a, b) => a - b);
  return {
    callsPerS: (latencies.length / (o.durationMs - warm)) * 1000,
    meanMs: latencies.reduce((a, b) => a + b, 0) / Math.max(1, latencies.length),
    p99Ms: latencies[Math.floor(latencies.length * 0.99)] ?? NaN,
    utilisation: busyTime.map((b) => b / o.durationMs),
  };
}

const cpu = results.perCall.cpuMs;
const demand = cpu.client + cpu.gateway + cpu.server;
// One station busy at a time: wall per call = demand / min(1, Q).
const share = Math.min(1, demand / results.perCall.meanMs);
const one = simulate({ cores: share, replicas: 1, cpu, closedClients: 1, durationMs: 30_000 });
const eight = simulate({ cores: share, replicas: 2, cpu, closedClients: results.throughput.clients, durationMs: 30_000 });
const err = (sim: number, measured: number) => `${sim >= measured ? '+' : ''}${(((sim - measured) / measured) * 100).toFixed(1)} %`;
console.log(`calibration: CPU per call ${demand.toFixed(2)} ms (client ${cpu.client.toFixed(2)}, gateway ${cpu.gateway.toFixed(2)}, server ${cpu.server.toFixed(2)}), wall ${results.perCall.meanMs.toFixed(2)} ms → share Q = ${share.toFixed(3)} cores`);
console.log(`1 client:  simulated ${one.meanMs.toFixed(1)} ms/call vs measured ${results.perCall.meanMs.toFixed(1)} (${err(one.meanMs, results.perCall.meanMs)})`);
console.log(`8 clients, 2 replicas: simulated ${eight.callsPerS.toFixed(1)} calls/s, ${eight.meanMs.toFixed(0)} ms vs measured ${results.throughput.callsPerS.toFixed(1)} calls/s, ${results.throughput.meanMs.toFixed(0)} ms (throughput ${err(eight.callsPerS, results.throughput.callsPerS)}, latency ${err(eight.meanMs, results.throughput.meanMs)})`);

// The fleet: 50 replicas, 100 000 sessions, each replica on its own 2-core machine with no other load.
const fleet = { replicas: 50, sessions: 100_000 };
for (const callsPerSessionPerMin of [1, 6]) {
  const perReplicaPerMs = (fleet.sessions * callsPerSessionPerMin) / 60_000 / fleet.replicas;
  // One replica is representative (arrivals split evenly, no shared station but Redis, which no call touches).
  const r = simulate({ cores: 2, replicas: 1, cpu, arrivalsPerMs: perReplicaPerMs, durationMs: 20_000, seed: 7 });
  console.log(
    `fleet ${fleet.replicas} replicas × ${fleet.sessions / fleet.replicas} sessions, ${callsPerSessionPerMin} call/session/min = ${(perReplicaPerMs * 1000).toFixed(0)} calls/s per replica: ` +
      `gateway busy ${(r.utilisation[1]! * 100).toFixed(0)} %, mean ${r.meanMs.toFixed(1)} ms, p99 ${r.p99Ms.toFixed(1)} ms; ` +
      `Redis ${(results.perCall.redisOps * perReplicaPerMs * 1000 * fleet.replicas).toFixed(0)} ops/s from calls; RSS of sessions ${((results.perSession.rssKb * fleet.sessions) / fleet.replicas / 1024).toFixed(0)} MiB per replica`,
  );
}
