/**
 * Process hygiene for the benchmarks. Every process a benchmark starts (its
 * worker, the servers the worker spawns, the servers' own children) carries a
 * marker variable in its environment; a sweep over /proc finds and kills them
 * all, even when a worker died before it could clean up, or when the servers
 * were spawned detached (the controller's process groups) and got reparented.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { pidAlive } from '../../test/helpers/processes.js';

/** Environment variable naming one benchmark run (inherited by everything it starts). */
export const RUN_MARKER = 'BENCH_RUN_ID';
/** Environment variable naming one worker within a run. */
export const WORKER_MARKER = 'BENCH_WORKER';

/** PIDs (other than this process) whose initial environment holds `name=value`. */
export function markedPids(name: string, value: string): number[] {
  const needle = `${name}=${value}\0`;
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    let environ: string;
    try {
      environ = readFileSync(`/proc/${entry}/environ`, 'latin1');
    } catch {
      continue; // gone meanwhile, or not ours to read
    }
    if (`\0${environ}`.includes(`\0${needle}`) && pidAlive(pid)) out.push(pid);
  }
  return out;
}

/**
 * SIGKILL every live process marked `name=value` and wait (up to `waitMs`)
 * until they are gone; returns how many were found. Zombies count as gone.
 */
export async function killMarked(name: string, value: string, waitMs = 5_000): Promise<number> {
  const found = markedPids(name, value);
  for (const pid of found) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  const until = Date.now() + waitMs;
  while (found.some(pidAlive) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  return found.length;
}

/** Synchronous best effort, for `exit` handlers. */
export function killMarkedSync(name: string, value: string): void {
  for (const pid of markedPids(name, value)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** The environment benchmark processes run with: ours, minus what skews Node start-up, plus markers. */
export function benchEnv(markers: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...markers };
  // Makes every Node start read a CA bundle (~80 ms); it is removed for both
  // sides of every comparison.
  delete env.NODE_EXTRA_CA_CERTS;
  return env;
}

/** This process's run and worker markers, for the env of servers a controller spawns (it passes only allow-listed parent variables on). */
export function markerEnv(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of [RUN_MARKER, WORKER_MARKER]) {
    const v = process.env[name];
    if (v !== undefined) out[name] = v;
  }
  return out;
}

/** Our environment (markers included) for a spawned CLI or client, without what skews Node start-up. */
export function plainNodeEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== 'NODE_EXTRA_CA_CERTS' && k !== 'NODE_OPTIONS') env[k] = v;
  return env;
}

/** CPU time (user + system) a process has used so far, in ms; 0 when it is gone. Linux /proc. */
export function cpuTimeMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of stat, in clock ticks (100 per second on Linux).
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return 0;
  }
}

/**
 * CPU time the whole machine spent busy so far (every core: user, nice,
 * system, irq, softirq, steal), in ms, from /proc/stat; 0 where there is none.
 * Differences over an interval include what per-process counters miss: the
 * kernel's fork/exec/page-fault work for processes, and those that exited.
 */
export function machineBusyMs(): number {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
    const f = line.trim().split(/\s+/).slice(1).map(Number);
    // cpu  user nice system idle iowait irq softirq steal …, in USER_HZ (100) ticks.
    const busy = f[0]! + f[1]! + f[2]! + f[5]! + f[6]! + f[7]!;
    return busy * 10;
  } catch {
    return 0;
  }
}

/** A process's resident set in bytes; 0 once it is gone. */
export function rssOf(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}
