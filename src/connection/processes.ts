/**
 * Process tracking for stdio servers (SPEC §8.2): every child is spawned as
 * the leader of its own process group, so a server started through a launcher
 * (`npx`, a shell script) is killed together with the real server it started.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { ErrorCode, McpReconcilerError } from '../errors.js';

/** Options of a {@link ProcessTracker}. */
export interface ProcessTrackerOptions {
  /** Time between SIGTERM and SIGKILL, in ms. Default 2000. */
  graceMs?: number;
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

/**
 * Owns the child processes of one controller. Children are spawned detached
 * (each leads its own process group) and killed as a whole group. When the host
 * process exits, every group still tracked by any tracker is SIGKILLed
 * synchronously; on SIGINT/SIGTERM/SIGHUP that nobody else handles, the same
 * happens before the signal is re-raised.
 */
export class ProcessTracker {
  private readonly graceMs: number;
  private readonly children = new Map<number, ChildProcess>();
  private readonly killing = new Map<number, Promise<void>>();
  private readonly spawned: number[] = [];
  private killAllPromise: Promise<void> | undefined;

  constructor(options: ProcessTrackerOptions = {}) {
    this.graceMs = options.graceMs ?? DEFAULT_GRACE_MS;
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
    });
    return this.killAllPromise;
  }

  /** SIGKILL every tracked group now, synchronously; what the host-exit hook runs. */
  killAllSync(): void {
    for (const [pid, child] of this.children) signalGroup(pid, 'SIGKILL', child);
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

  private forget(pid: number): void {
    this.children.delete(pid);
    this.killing.delete(pid);
    if (this.children.size === 0) {
      liveTrackers.delete(this);
      if (liveTrackers.size === 0) uninstallHooks();
    }
  }
}
