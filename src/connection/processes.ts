/**
 * Process tracking for stdio servers (SPEC §8.2): every child is spawned as
 * the leader of its own process group, so a server started through a launcher
 * (`npx`, a shell script) is killed together with the real server it started.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ErrorCode, McpReconcilerError } from '../errors.js';
import { appDir, workspaceKey, writeFileAtomicSync } from '../util/persist.js';
import { readTrustedSync, type Untrusted } from '../util/file-trust.js';
import { guardGroup, releaseGroup, watchdogEnded } from './watchdog.js';

/** Options of a {@link ProcessTracker}. */
export interface ProcessTrackerOptions {
  /** Time between SIGTERM and SIGKILL, in ms. Default 2000. */
  graceMs?: number;
  /** Told about a process state file that is not trusted (it is then not acted on). */
  warn?: (message: string) => void;
}

/** What {@link ProcessTracker.spawn} passes on to `child_process.spawn`. */
export interface TrackedSpawnOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

const DEFAULT_GRACE_MS = 2_000;
/** SIGKILL cannot be ignored; this bound only keeps a process stuck in the kernel from hanging dispose. */
const AFTER_KILL_WAIT_MS = 5_000;
const POLL_MS = 20;
const HISTORY_LIMIT = 1_024;

/** Trackers that still own live groups; one shared set of process hooks serves them all. */
const liveTrackers = new Set<ProcessTracker>();
const HOST_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
let hooksInstalled = false;

function killEverythingNow(): void {
  for (const tracker of liveTrackers) tracker.killAllSync();
}

function onHostSignal(signal: NodeJS.Signals): void {
  // Someone else handles this signal and decides whether the host exits; the
  // 'exit' hook covers us then. Alone, the default action would end the host
  // without 'exit' and leave our detached groups running.
  if (process.listenerCount(signal) > 1) return;
  killEverythingNow();
  uninstallHooks();
  process.kill(process.pid, signal);
}

const signalHandlers = new Map<NodeJS.Signals, () => void>(HOST_SIGNALS.map((s) => [s, () => onHostSignal(s)]));

function installHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  process.on('exit', killEverythingNow);
  for (const [signal, handler] of signalHandlers) process.on(signal, handler);
}

function uninstallHooks(): void {
  if (!hooksInstalled) return;
  hooksInstalled = false;
  process.off('exit', killEverythingNow);
  for (const [signal, handler] of signalHandlers) process.off(signal, handler);
}

// Ref'd on purpose: whoever awaits a kill must not see the process exit under it
// with the group still alive (a CLI disposing on its way out).
function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Send `signal` to the group led by `pid`, or to `pid` alone when it leads no
 * group (a child spawned without `detached`) and has not exited — a reaped
 * PID may already belong to someone else. Never throws.
 */
function signalGroup(pid: number, signal: NodeJS.Signals, child?: ChildProcess): void {
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

/** Process state letter from /proc, or undefined when unreadable (gone). */
function procState(pid: number): { state: string; pgrp: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0] ?? '', pgrp: Number(fields[2]) };
  } catch {
    return undefined;
  }
}

/** utime + stime of one process in clock ticks, from /proc (Linux); undefined when gone or not Linux. */
export function ownCpuTicks(pid: number): number | undefined {
  if (process.platform !== 'linux') return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 14 and 15 of stat(5), counted from `state` (field 3) here.
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return undefined;
  }
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
  for (const tid of tasks) {
    try {
      for (const child of readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ')) {
        if (child.trim() !== '') out.push(Number(child));
      }
    } catch {
      // thread ended meanwhile, or a kernel without the children file
    }
  }
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

function isZombie(state: string): boolean {
  return state === 'Z' || state === 'X';
}

/** Whether any process of the group `pgid` is still running (zombies nobody reaps do not count). */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  if (process.platform !== 'linux') return true;
  // A running leader settles it without a scan of every process.
  const leader = procState(pgid);
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
    const info = procState(Number(entry));
    if (info && info.pgrp === pgid && !isZombie(info.state)) return true;
  }
  return false;
}

function pidRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const info = procState(pid);
  return info === undefined ? process.platform !== 'linux' : !isZombie(info.state);
}

// ── process state file (reaping orphans of a host that was SIGKILLed) ────

/** Who a process is: its start time (unique per PID across recycling) and command line. */
export interface ProcessIdentity {
  /** Boot id + start time on Linux, `ps` start time elsewhere. */
  start: string;
  /** argv as the kernel reports it (one element holding the whole line from `ps`). */
  cmdline: string[];
  /** Process group id, when known. */
  pgrp?: number;
}

/** One recorded process group: a detached server spawned by some host. */
export interface RecordedGroup {
  /** Leader PID, which is also the process group id. */
  pgid: number;
  start: string;
  cmdline: string[];
  /** The host process that spawned it; its groups are stale once it is gone. */
  owner: { pid: number; start: string };
}

interface StateDocument {
  version: 1;
  groups: readonly RecordedGroup[];
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
 * The identity of a live process (Linux: /proc; macOS and other Unixes: `ps`),
 * or undefined when it does not exist, is a zombie, or cannot be inspected.
 */
export function processIdentity(pid: number): ProcessIdentity | undefined {
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  if (process.platform === 'linux') {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (isZombie(fields[0] ?? '')) return undefined;
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      if (cmdline.at(-1) === '') cmdline.pop();
      // Field 22 of stat(5): start time in clock ticks after boot.
      return { start: `${linuxBootId()}:${fields[19]}`, cmdline, pgrp: Number(fields[2]) };
    } catch {
      return undefined;
    }
  }
  if (process.platform === 'win32') return undefined;
  try {
    const out = execFileSync('ps', ['-ww', '-o', 'pgid=,stat=,lstart=,command=', '-p', String(pid)], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    // "<pgid> <stat> <Day Mon dd hh:mm:ss yyyy> <command…>"
    const m = /^(\d+)\s+(\S+)\s+(\S+\s+\S+\s+\d+\s+[\d:]+\s+\d+)\s+(.*)$/.exec(out);
    if (!m || m[2]!.startsWith('Z')) return undefined;
    return { start: m[3]!, cmdline: [m[4]!], pgrp: Number(m[1]) };
  } catch {
    return undefined;
  }
}

function sameIdentity(a: ProcessIdentity, b: { start: string; cmdline: readonly string[] }): boolean {
  return a.start === b.start && a.cmdline.length === b.cmdline.length && a.cmdline.every((arg, i) => arg === b.cmdline[i]);
}

/**
 * Where the process groups of the workspace `root` are recorded:
 * `$XDG_STATE_HOME/mcp-reconciler/processes/<hash of root>.json`, or
 * `~/.local/state/…` when that is unset or relative. Pass the canonical
 * (real) root so every path to one workspace shares one file.
 */
export function defaultProcessStatePath(root: string, env: NodeJS.ProcessEnv = process.env): string {
  return join(appDir('state', env), 'processes', `${workspaceKey(root)}.json`);
}

/** A group as recorded, or undefined when `g` is not one (a torn or foreign entry). */
function asGroup(g: unknown): RecordedGroup | undefined {
  const r = g as RecordedGroup | null;
  return r !== null &&
    typeof r === 'object' &&
    Number.isInteger(r.pgid) &&
    r.pgid > 1 &&
    typeof r.start === 'string' &&
    Array.isArray(r.cmdline) &&
    r.cmdline.every((a: unknown) => typeof a === 'string') &&
    typeof r.owner?.pid === 'number' &&
    typeof r.owner?.start === 'string'
    ? r
    : undefined;
}

/**
 * The groups recorded in `file`. The file is a journal of JSON lines: a
 * snapshot `{"version":1,"groups":[…]}` (what compaction writes, and the
 * whole file of older versions), then one change per line, `{"add":group}` or
 * `{"drop":"pgid@start"}`, appended as spawns and exits happen. Appending
 * one short line per change keeps a start of 50 servers from rewriting the
 * file 50 times. A torn last line (a host killed mid-write) is skipped.
 */
export function readRecordedGroups(file: string): RecordedGroup[] {
  return readJournal(file).groups;
}

/**
 * The groups of `file`, or none and why when the file is not trusted: a
 * file someone else could write could name any of our processes for us to
 * kill, so nothing in it is believed.
 */
function readJournal(file: string): { groups: RecordedGroup[]; untrusted?: Untrusted } {
  let text: string;
  try {
    const read = readTrustedSync(file);
    if ('untrusted' in read) return { groups: [], untrusted: read.untrusted };
    if ('missing' in read) return { groups: [] };
    text = read.text;
  } catch {
    return { groups: [] };
  }
  const groups = new Map<string, RecordedGroup>();
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    let entry: Partial<StateDocument> & { add?: unknown; drop?: unknown };
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      continue; // torn or foreign: forget it rather than act on it (nothing is killed)
    }
    if (entry === null || typeof entry !== 'object') continue;
    if (Array.isArray(entry.groups)) {
      groups.clear();
      for (const g of entry.groups) {
        const group = asGroup(g);
        if (group) groups.set(groupKey(group), group);
      }
    }
    const added = asGroup(entry.add);
    if (added) groups.set(groupKey(added), added);
    if (typeof entry.drop === 'string') groups.delete(entry.drop);
  }
  return { groups: [...groups.values()] };
}

/** Rewrite `file` as one snapshot, atomically (temp + rename) with mode 0600; an empty list removes the file. */
function writeState(file: string, groups: readonly RecordedGroup[]): void {
  if (groups.length === 0) {
    rmSync(file, { force: true });
    return;
  }
  writeFileAtomicSync(file, `${JSON.stringify({ version: 1, groups } satisfies StateDocument)}\n`, { mkdir: true });
}

/** Journal lines appended beyond this many bytes are folded into one snapshot. */
const COMPACT_AFTER_BYTES = 64 * 1024;

let hostIdentity: { pid: number; start: string } | undefined;

function host(): { pid: number; start: string } | undefined {
  if (hostIdentity?.pid !== process.pid) {
    const id = processIdentity(process.pid);
    hostIdentity = id ? { pid: process.pid, start: id.start } : undefined;
  }
  return hostIdentity;
}

function ownerAlive(owner: RecordedGroup['owner']): boolean {
  const id = processIdentity(owner.pid);
  return id !== undefined && id.start === owner.start;
}

/** Signal a recorded group, but only while its leader is still the process we recorded. */
function signalIfSame(group: RecordedGroup, signal: NodeJS.Signals): boolean {
  const id = processIdentity(group.pgid);
  if (!id || !sameIdentity(id, group)) return false;
  try {
    // A leader that left its group is signalled alone: the group may be someone else's.
    process.kill(id.pgrp === group.pgid ? -group.pgid : group.pgid, signal);
  } catch {
    return false;
  }
  return true;
}

/**
 * Kill the groups of `file` whose host is gone and whose leader is still the
 * very process that was recorded (same start time and command line; a
 * recycled PID is never touched): SIGTERM, then SIGKILL after `graceMs`.
 * Entries of live hosts stay; stale and dead entries are dropped. Returns the
 * PGIDs it signalled. Never throws for an unreadable file. A file that is
 * not trusted (see `untrustedFile`) kills nothing: `warn` is told, and the
 * file is removed so this host's records start a private one.
 */
export async function reapStaleGroups(file: string, options: { graceMs?: number; warn?: (message: string) => void } = {}): Promise<number[]> {
  const journal = readJournal(file);
  if (journal.untrusted) {
    let removed = true;
    try {
      rmSync(file, { force: true });
    } catch {
      removed = false;
    }
    options.warn?.(
      `The process state file ${file} is ${journal.untrusted.what}; someone else could list processes in it for us to kill, so nothing in it is acted on` +
        (removed
          ? ` and it was removed (this run records its servers in a new private file). If that keeps happening, check who can write ${dirname(file)}.`
          : `. It could not be removed either: delete it (or run \`${journal.untrusted.fix}\` if every entry is yours).`),
    );
    return [];
  }
  const groups = journal.groups;
  if (groups.length === 0) return [];
  const keep: RecordedGroup[] = [];
  const stale: RecordedGroup[] = [];
  for (const g of groups) (ownerAlive(g.owner) ? keep : stale).push(g);
  if (stale.length === 0) return [];
  const signalled = stale.filter((g) => signalIfSame(g, 'SIGTERM'));
  const until = Date.now() + (options.graceMs ?? DEFAULT_GRACE_MS);
  const running = (g: RecordedGroup): boolean => {
    const id = processIdentity(g.pgid);
    return id !== undefined && sameIdentity(id, g);
  };
  while (signalled.some(running) && Date.now() < until) await sleep(POLL_MS);
  for (const g of signalled) signalIfSame(g, 'SIGKILL');
  const deadline = Date.now() + AFTER_KILL_WAIT_MS;
  while (signalled.some(running) && Date.now() < deadline) await sleep(POLL_MS);
  // Re-read: a live host of the same workspace may have written meanwhile.
  const staleKeys = new Set(stale.map(groupKey));
  try {
    writeState(file, readRecordedGroups(file).filter((g) => !staleKeys.has(groupKey(g))));
  } catch {
    // an unwritable state file costs only a repeat of this check next time
  }
  return signalled.map((g) => g.pgid);
}

function groupKey(g: Pick<RecordedGroup, 'pgid' | 'start'>): string {
  return `${g.pgid}@${g.start}`;
}

/**
 * Owns the child processes of one controller. Children are spawned detached
 * (each leads its own process group) and killed as a whole group. When the host
 * process exits, every group still tracked by any tracker is SIGKILLed
 * synchronously; on SIGINT/SIGTERM/SIGHUP that nobody else handles, the same
 * happens before the signal is re-raised. A host that dies without running
 * either (SIGKILL) leaves its groups to the orphan watchdog (`watchdog.ts`),
 * which every tracker of the process tells about each group it starts and
 * ends; {@link killAll} resolves once that watchdog is gone too, when no
 * other tracker still needs it.
 */
export class ProcessTracker {
  private readonly graceMs: number;
  private readonly children = new Map<number, ChildProcess>();
  private readonly killing = new Map<number, Promise<void>>();
  private readonly spawned: number[] = [];
  private killAllPromise: Promise<void> | undefined;
  private stateFile: string | undefined;
  /** Groups this tracker wrote to {@link stateFile}, by leader PID. */
  private readonly recorded = new Map<number, RecordedGroup>();
  /** Changes to the state file not written yet: one write per tick, not one per spawn. */
  private readonly pendingAdd = new Map<string, RecordedGroup>();
  private readonly pendingRemove = new Set<string>();
  private flushScheduled = false;
  private stateDirReady = false;
  /** Journal bytes this tracker appended since the state file was last compacted. */
  private appendedBytes = 0;

  private readonly warn: ((message: string) => void) | undefined;

  constructor(options: ProcessTrackerOptions = {}) {
    this.graceMs = options.graceMs ?? DEFAULT_GRACE_MS;
    this.warn = options.warn;
  }

  /**
   * Reap what a previous host of this workspace left behind in `file` (see
   * {@link reapStaleGroups}), then record every group this tracker starts in
   * it, and drop each entry once its group is gone. A host killed by SIGKILL
   * runs no exit hook; its entries let the next start find its orphans.
   * Returns the PGIDs reaped.
   */
  async useStateFile(file: string): Promise<number[]> {
    const reaped = await reapStaleGroups(file, { graceMs: this.graceMs, ...(this.warn ? { warn: this.warn } : {}) });
    // An untrusted file that could not be removed gets none of our records either.
    if (readJournal(file).untrusted) return reaped;
    this.stateFile = file;
    for (const pid of this.children.keys()) this.record(pid);
    return reaped;
  }

  /** True once {@link killAll} was called: nothing new may start. */
  get closed(): boolean {
    return this.killAllPromise !== undefined;
  }

  /**
   * Spawn `command` detached with piped stdio and track it. Throws a
   * `disposed` error after {@link killAll}. Spawn failures (ENOENT, …) arrive
   * as the child's `error` event, as with `child_process.spawn`.
   */
  spawn(command: string, args: readonly string[], options: TrackedSpawnOptions = {}): ChildProcess {
    if (this.closed) {
      throw new McpReconcilerError(ErrorCode.Disposed, `Cannot start "${command}": the process tracker was shut down`);
    }
    const child = spawn(command, [...args], {
      env: options.env,
      cwd: options.cwd,
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
      windowsHide: true,
    });
    if (child.pid !== undefined) this.track(child);
    return child;
  }

  /**
   * Track a process spawned elsewhere (it should be spawned `detached: true`
   * so it leads a group). After {@link killAll} it is killed at once.
   */
  track(child: ChildProcess): void {
    const pid = child.pid;
    if (pid === undefined) return;
    this.children.set(pid, child);
    guardGroup(pid, this.warn);
    this.record(pid);
    this.spawned.push(pid);
    if (this.spawned.length > HISTORY_LIMIT) this.spawned.shift();
    liveTrackers.add(this);
    installHooks();
    child.once('exit', () => {
      // A leader that ended on its own may leave group members behind; keep
      // tracking those until they are gone or killed.
      if (!this.killing.has(pid) && !groupAlive(pid)) this.forget(pid);
    });
    if (this.closed) void this.killTree(pid);
  }

  /** Leaders of the groups currently tracked (running or being killed). */
  pids(): number[] {
    return [...this.children.keys()];
  }

  /** Every leader PID this tracker has tracked (the latest 1024), for tests and diagnostics. */
  history(): readonly number[] {
    return [...this.spawned];
  }

  /**
   * Kill the process group led by `pid`: end its stdin, SIGTERM the group,
   * SIGKILL it after the grace period. Resolves when the leader has exited and
   * no group member runs any more. Concurrent calls share one promise.
   */
  killTree(pid: number, options: { graceMs?: number } = {}): Promise<void> {
    const existing = this.killing.get(pid);
    if (existing) return existing;
    const promise = this.terminate(pid, options.graceMs ?? this.graceMs).finally(() => this.forget(pid));
    this.killing.set(pid, promise);
    return promise;
  }

  /** Kill every tracked group; idempotent (one memoised promise). Marks the tracker closed. */
  killAll(): Promise<void> {
    this.killAllPromise ??= Promise.resolve().then(async () => {
      await Promise.all(this.pids().map((pid) => this.killTree(pid)));
      // Whoever awaited dispose() may exit at once: leave the file up to date, and no watchdog behind.
      this.flushState();
      await watchdogEnded();
    });
    return this.killAllPromise;
  }

  /** SIGKILL every tracked group now, synchronously; what the host-exit hook runs. */
  killAllSync(): void {
    for (const [pid, child] of this.children) {
      signalGroup(pid, 'SIGKILL', child);
      releaseGroup(pid);
    }
    // SIGKILL is final: nothing is left for a later start to reap. Written now: the host is exiting.
    this.unrecord([...this.recorded.keys()], { now: true });
  }

  private async terminate(pid: number, graceMs: number): Promise<void> {
    const child = this.children.get(pid);
    try {
      child?.stdin?.end();
    } catch {
      // a broken pipe changes nothing: the signals follow
    }
    signalGroup(pid, 'SIGTERM', child);
    if (await this.waitGone(pid, child, graceMs)) return;
    signalGroup(pid, 'SIGKILL', child);
    await this.waitGone(pid, child, AFTER_KILL_WAIT_MS);
  }

  private async waitGone(pid: number, child: ChildProcess | undefined, withinMs: number): Promise<boolean> {
    const until = Date.now() + withinMs;
    for (;;) {
      const leaderGone = child ? child.exitCode !== null || child.signalCode !== null : !pidRunning(pid);
      if (leaderGone && !groupAlive(pid)) return true;
      if (Date.now() >= until) return false;
      await sleep(POLL_MS);
    }
  }

  /**
   * Add the group led by `pid` to the state file. The write happens once per
   * event-loop turn for every spawn of that turn (50 servers starting at once
   * cost one write, not 50 read-modify-writes); a host SIGKILLed within that
   * turn leaves those few groups unrecorded.
   */
  private record(pid: number): void {
    const file = this.stateFile;
    const me = host();
    if (file === undefined || me === undefined || this.recorded.has(pid)) return;
    // spawn() returns after exec (libuv waits for it), so this is the server's own command line.
    const id = processIdentity(pid);
    if (!id) return;
    const group: RecordedGroup = { pgid: pid, start: id.start, cmdline: id.cmdline, owner: me };
    this.recorded.set(pid, group);
    const key = groupKey(group);
    this.pendingRemove.delete(key);
    this.pendingAdd.set(key, group);
    this.scheduleFlush();
  }

  private unrecord(pids: readonly number[], { now = false }: { now?: boolean } = {}): void {
    for (const pid of pids) {
      const group = this.recorded.get(pid);
      if (!group) continue;
      this.recorded.delete(pid);
      const key = groupKey(group);
      this.pendingAdd.delete(key);
      this.pendingRemove.add(key);
    }
    if (now) this.flushState();
    else this.scheduleFlush();
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => this.flushState());
  }

  /**
   * Append the pending changes to the state file now: one line per change,
   * one append per call. Folded into a snapshot once the journal has grown
   * by {@link COMPACT_AFTER_BYTES}, and removed once nothing is recorded.
   */
  private flushState(): void {
    this.flushScheduled = false;
    const file = this.stateFile;
    if (file === undefined || (this.pendingAdd.size === 0 && this.pendingRemove.size === 0)) return;
    let lines = '';
    for (const key of this.pendingRemove) lines += `${JSON.stringify({ drop: key })}\n`;
    for (const group of this.pendingAdd.values()) lines += `${JSON.stringify({ add: group })}\n`;
    const dropped = this.pendingRemove.size > 0;
    this.pendingAdd.clear();
    this.pendingRemove.clear();
    try {
      if (!this.stateDirReady) {
        mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
        this.stateDirReady = true;
      }
      appendFileSync(file, lines, { mode: 0o600 });
      this.appendedBytes += lines.length;
      // Drops are what can leave the file empty; adds alone never do.
      if (this.appendedBytes >= COMPACT_AFTER_BYTES || (dropped && this.recorded.size === 0)) {
        this.appendedBytes = 0;
        // A file someone else made writable meanwhile keeps only what this tracker knows.
        const journal = readJournal(file);
        writeState(file, journal.untrusted ? [...this.recorded.values()] : journal.groups);
      }
    } catch {
      // Unwritable state dir: everything else still works; only post-SIGKILL reaping is lost.
    }
  }

  private forget(pid: number): void {
    releaseGroup(pid);
    this.unrecord([pid]);
    this.children.delete(pid);
    this.killing.delete(pid);
    if (this.children.size === 0) {
      liveTrackers.delete(this);
      if (liveTrackers.size === 0) uninstallHooks();
    }
  }
}
