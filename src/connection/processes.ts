/**
 * Process tracking for stdio servers (SPEC §8.2): every child is spawned as
 * the leader of its own process group, so a server started through a launcher
 * (`npx`, a shell script) is killed together with the real server it started.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { ErrorCode, McpReconcilerError } from '../errors.js';
import { AFTER_KILL_WAIT_MS, DEFAULT_GRACE_MS, groupAlive, pidRunning, POLL_MS, processIdentity, signalGroup, sleep } from './process-groups.js';
import { groupKey, host, readJournal, reapStaleGroups, writeState, type RecordedGroup } from './process-records.js';
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

/** Journal lines appended beyond this many bytes are folded into one snapshot. */
const COMPACT_AFTER_BYTES = 64 * 1024;

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
    const id = processIdentity(pid);
    if (!id) return;
    // What was spawned, for whoever reads the file; the start time alone identifies the process.
    const cmdline = this.children.get(pid)?.spawnargs ?? [];
    const group: RecordedGroup = { pgid: pid, start: id.start, cmdline: [...cmdline], owner: me };
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
