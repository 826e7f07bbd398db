/**
 * Inspecting and signalling process groups (SPEC §8.2): whether a group still
 * runs (zombies nobody reaps do not count), who a process is (its start
 * time, so a recycled PID is never mistaken for ours), and the CPU
 * time a process tree used. Linux reads /proc; other Unixes ask `ps`.
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync, readSync } from 'node:fs';

export const DEFAULT_GRACE_MS = 2_000;
/** SIGKILL cannot be ignored; this bound only keeps a process stuck in the kernel from hanging dispose. */
export const AFTER_KILL_WAIT_MS = 5_000;
export const POLL_MS = 20;

// Ref'd on purpose: whoever awaits a kill must not see the process exit under it
// with the group still alive (a CLI disposing on its way out).
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Send `signal` to the group led by `pid`, or to `pid` alone when it leads no
 * group (a child spawned without `detached`) and has not exited — a reaped
 * PID may already belong to someone else. Never throws.
 */
export function signalGroup(pid: number, signal: NodeJS.Signals, child?: ChildProcess): void {
  try {
    process.kill(-pid, signal);
  } catch {
    if (child && (child.exitCode !== null || child.signalCode !== null)) return;
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}

/**
 * One buffer for every stat read: the connect limiter samples each starting
 * server every 50 ms, and a `readFileSync` per sample (its chunks, the
 * string, the split fields) was garbage that grew the host's young
 * generation during a 50-server start (docs/performance.md).
 */
const statBuffer = Buffer.allocUnsafe(4096);
const SPACE = 0x20;
const CLOSE_PAREN = 0x29;

/** Read the start of a /proc file into {@link statBuffer}: the bytes read, or undefined when it cannot be read. */
function readProc(path: string): number | undefined {
  try {
    const fd = openSync(path, 'r');
    try {
      return readSync(fd, statBuffer, 0, statBuffer.length, 0);
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined;
  }
}

/**
 * Where the fields of the stat line in {@link statBuffer} start, from
 * `state` (field 3 of stat(5)) on: `fieldAt[k]` is field 3 + k, and
 * `fieldAt[k + 1] - 1` is where it ends. One pass over the bytes, for every
 * reading the stat line serves (CPU ticks, identity, group), instead of a
 * native `indexOf` call per field at every sample of every starting server.
 */
const fieldAt = new Int32Array(24);

/** Fill {@link fieldAt} for the first `count` fields of a stat line of `length` bytes; false when it has fewer. */
function splitStat(length: number, count: number): boolean {
  // `pid (comm) state …`: comm may hold spaces and parentheses, so fields count from the last `)`.
  let at = length - 1;
  while (at >= 0 && statBuffer[at] !== CLOSE_PAREN) at--;
  if (at < 0) return false;
  at += 2;
  fieldAt[0] = at;
  let field = 1;
  for (let i = at; i < length && field <= count; i++) {
    if (statBuffer[i] === SPACE) fieldAt[field++] = i + 1;
  }
  return field > count;
}

/** The decimal number in field `k` (from `state`) of the line {@link splitStat} split. */
function statNumber(k: number): number {
  let n = 0;
  for (let i = fieldAt[k]!, end = fieldAt[k + 1]! - 1; i < end; i++) n = n * 10 + (statBuffer[i]! - 0x30);
  return n;
}

/** utime + stime of one process in clock ticks, from /proc (Linux); undefined when gone or not Linux. */
export function ownCpuTicks(pid: number): number | undefined {
  if (process.platform !== 'linux') return undefined;
  const length = readProc(`/proc/${pid}/stat`);
  // Fields 14 and 15 of stat(5) (utime, stime) are the 11th and 12th from `state`.
  if (length === undefined || !splitStat(length, 13)) return undefined;
  return statNumber(11) + statNumber(12);
}

/** Set once a /proc/<pid>/schedstat read failed where the stat read did not: a kernel without it. */
let noSchedstat = false;

/**
 * Clock ticks (10 ms, fractional) the main thread of `pid` has spent on a CPU
 * or runnable, waiting for one: /proc/<pid>/schedstat's run time plus its
 * run-queue delay. A starting server that a loaded machine keeps waiting is
 * busy by this reading, where its CPU time alone would call it idle
 * (docs/performance.md, "The connect limit on a loaded machine"). It is also
 * cheaper to read than the stat line, which sums every thread's CPU time
 * under the scheduler's locks. Where the kernel has no schedstat, the
 * process's CPU time. Undefined when `pid` is gone or not on Linux.
 */
export function ownBusyTicks(pid: number): number | undefined {
  if (process.platform !== 'linux') return undefined;
  if (noSchedstat) return ownCpuTicks(pid);
  const length = readProc(`/proc/${pid}/schedstat`);
  if (length === undefined) {
    const cpu = ownCpuTicks(pid);
    if (cpu !== undefined) noSchedstat = true;
    return cpu;
  }
  // "<run ns> <run-queue delay ns> <timeslices>"
  let total = 0;
  let n = 0;
  let fields = 0;
  for (let i = 0; i < length && fields < 2; i++) {
    const c = statBuffer[i]!;
    if (c >= 0x30 && c <= 0x39) {
      n = n * 10 + (c - 0x30);
    } else {
      total += n;
      n = 0;
      fields++;
    }
  }
  return total / 1e7;
}

/**
 * Add the PIDs a /proc `children` file lists to `out`, parsed in
 * {@link statBuffer} (a tree's reading repeats every 50 ms while a server
 * starts); a list longer than the buffer is read whole.
 */
function readChildren(path: string, out: number[]): void {
  const length = readProc(path);
  if (length === undefined) return; // thread ended meanwhile, or a kernel without the children file
  if (length === statBuffer.length) {
    try {
      for (const child of readFileSync(path, 'utf8').split(' ')) if (child.trim() !== '') out.push(Number(child));
    } catch {
      // ended between the two reads
    }
    return;
  }
  let n = -1;
  for (let i = 0; i < length; i++) {
    const c = statBuffer[i]!;
    if (c >= 0x30 && c <= 0x39) {
      n = (n < 0 ? 0 : n * 10) + (c - 0x30);
    } else if (n >= 0) {
      out.push(n);
      n = -1;
    }
  }
  if (n >= 0) out.push(n);
}

/**
 * Direct children of `pid`, from every thread's /proc children list, or only
 * the main thread's (`threads: 'main'`: one read instead of one per thread).
 */
function childrenOf(pid: number, threads: 'all' | 'main'): number[] {
  const out: number[] = [];
  let tasks: string[];
  try {
    tasks = threads === 'main' ? [String(pid)] : readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tasks) readChildren(`/proc/${pid}/task/${tid}/children`, out);
  return out;
}

/**
 * CPU time (user + system, in clock ticks) used so far by `pid` and its live
 * descendants, so a launcher (`npx`, a shell) counts the work of the server it
 * started. Undefined when `pid` is gone or /proc is unavailable (not Linux).
 * `threads: 'main'` follows only children forked by each process's main
 * thread — what launchers written in Node, Python, Rust or sh do — at one
 * /proc read per process instead of one per thread (a Node process has ~10).
 */
export function processTreeCpuTicks(pid: number, threads: 'all' | 'main' = 'all'): number | undefined {
  if (process.platform !== 'linux') return undefined;
  const own = ownCpuTicks(pid);
  if (own === undefined) return undefined;
  let total = own;
  const queue = childrenOf(pid, threads);
  for (let seen = 0; queue.length > 0 && seen < 256; seen++) {
    const next = queue.shift()!;
    total += ownCpuTicks(next) ?? 0;
    queue.push(...childrenOf(next, threads));
  }
  return total;
}

/**
 * Whether `pid`, or a process forked by the main thread of one in its tree,
 * is on a CPU or waiting for one (state `R`) or in an uninterruptible wait
 * (`D`: paging its program in, say). A process the machine starves of CPU
 * uses none while it waits, so CPU time alone cannot tell it from one that
 * sleeps until spoken to (docs/performance.md, "The connect limit on a loaded machine").
 * False when `pid` is gone or /proc is unavailable.
 */
export function treeRunnable(pid: number): boolean {
  if (process.platform !== 'linux') return false;
  const queue = [pid];
  for (let seen = 0; queue.length > 0 && seen < 256; seen++) {
    const next = queue.shift()!;
    const length = readProc(`/proc/${next}/stat`);
    if (length !== undefined && splitStat(length, 0)) {
      const state = statBuffer[fieldAt[0]!];
      if (state === 0x52 /* R */ || state === 0x44 /* D */) return true;
    }
    readChildren(`/proc/${next}/task/${next}/children`, queue);
  }
  return false;
}

export function isZombie(state: string): boolean {
  return state === 'Z' || state === 'X';
}

/** Whether any process of the group `pgid` is still running (zombies nobody reaps do not count). */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  if (process.platform !== 'linux') return true;
  // A running leader settles it without a scan of every process.
  const leader = procStat(pgid);
  if (leader && leader.pgrp === pgid && !isZombie(leader.state)) return true;
  // kill(-pgid, 0) also succeeds for zombies; in a container whose PID 1 does
  // not reap, orphaned zombies would otherwise keep the group "alive" forever.
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return true;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const info = procStat(Number(entry));
    if (info && info.pgrp === pgid && !isZombie(info.state)) return true;
  }
  return false;
}

export function pidRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const info = procStat(pid);
  return info === undefined ? process.platform !== 'linux' : !isZombie(info.state);
}

/**
 * Who a process is: its start time, unique per PID across recycling (a PID
 * is handed out again only after the PID space wrapped, never within the
 * same clock tick). Not its command line: a launcher may rewrite that
 * (`npx` shows itself as `npm exec …` once it runs), and the same process
 * must still be recognised as ours.
 */
export interface ProcessIdentity {
  /** Boot id + start time on Linux, `ps` start time elsewhere. */
  start: string;
  /** Process group id, when known. */
  pgrp?: number;
}

let bootId: string | undefined;

function linuxBootId(): string {
  if (bootId === undefined) {
    try {
      bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    } catch {
      bootId = '';
    }
  }
  return bootId;
}

/**
 * Fields of /proc/<pid>/stat: `state` (field 3), `pgrp` (5) and `starttime`
 * (22), or undefined when it cannot be read (gone). Read through the shared
 * buffer: once per spawn, and for every process when a group's members are
 * looked for.
 */
function procStat(pid: number): { state: string; pgrp: number; starttime: string } | undefined {
  const length = readProc(`/proc/${pid}/stat`);
  // `starttime` is the 19th field from `state`.
  if (length === undefined || !splitStat(length, 20)) return undefined;
  return {
    state: String.fromCharCode(statBuffer[fieldAt[0]!]!),
    pgrp: statNumber(2),
    starttime: statBuffer.toString('latin1', fieldAt[19]!, fieldAt[20]! - 1),
  };
}

/**
 * The identity of a live process (Linux: /proc; macOS and other Unixes: `ps`),
 * or undefined when it does not exist, is a zombie, or cannot be inspected.
 */
export function processIdentity(pid: number): ProcessIdentity | undefined {
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  if (process.platform === 'linux') {
    const stat = procStat(pid);
    if (!stat || isZombie(stat.state)) return undefined;
    return { start: `${linuxBootId()}:${stat.starttime}`, pgrp: stat.pgrp };
  }
  if (process.platform === 'win32') return undefined;
  try {
    const out = execFileSync('ps', ['-ww', '-o', 'pgid=,stat=,lstart=', '-p', String(pid)], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    // "<pgid> <stat> <Day Mon dd hh:mm:ss yyyy>"
    const m = /^(\d+)\s+(\S+)\s+(\S+\s+\S+\s+\d+\s+[\d:]+\s+\d+)$/.exec(out);
    if (!m || m[2]!.startsWith('Z')) return undefined;
    return { start: m[3]!, pgrp: Number(m[1]) };
  } catch {
    return undefined;
  }
}

/** Whether `a` is the process recorded as `b` (the same start; see {@link ProcessIdentity}). */
export function sameProcess(a: ProcessIdentity, b: { start: string }): boolean {
  return a.start === b.start;
}

