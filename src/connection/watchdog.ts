/**
 * The orphan watchdog: one tiny `/bin/sh` per host process that kills the
 * host's server process groups when the host dies without cleaning up
 * (SIGKILL, the OOM killer, a crash in native code), so stubborn servers
 * (ones that ignore stdin EOF and SIGTERM) do not live on until the next
 * start reaps them.
 *
 * The host holds the write end of the watchdog's stdin and sends one line
 * per change: `+PGID` when a group is spawned, `-PGID` when it is gone (so a
 * recycled PGID is never signalled). When the pipe closes — which the kernel
 * does however the host ends — the watchdog sends SIGTERM to every group it
 * still holds, waits up to {@link GRACE_S} s for them to go, then SIGKILLs
 * what is left, and exits. An orderly host removes every group first, so the
 * watchdog then just exits.
 *
 * It is spawned lazily with the first group and ended once no group is left
 * (a host without stdio servers never has one); it leads its own session, so
 * a terminal's Ctrl-C or hang-up does not reach it; it is unref'd, so it never
 * keeps the host's event loop alive; and it is not a server: no tracker,
 * status row or PID list shows it. POSIX only.
 */
import { spawn, type ChildProcess } from 'node:child_process';

/** How long the groups get between SIGTERM and SIGKILL after the host died, in seconds. */
export const GRACE_S = 1;

/** The name the watchdog shows in `ps` (its argv[0]). */
export const WATCHDOG_NAME = 'mcp-reconciler-watchdog';

// `g` holds the groups as " 1 2 3 "; `read` ends when the host's end of the pipe closes.
const SCRIPT = [
  "g=' '",
  'while read -r l; do case $l in',
  '+*) g="$g${l#+} ";;',
  '-*) p=${l#-}; case $g in *" $p "*) g="${g%% $p *} ${g#* $p }";; esac;;',
  'esac; done',
  "[ \"$g\" = ' ' ] && exit 0",
  'for p in $g; do kill -TERM -$p 2>/dev/null; done',
  'i=0',
  `while [ $i -lt ${GRACE_S * 5} ]; do`,
  'a=; for p in $g; do kill -0 -$p 2>/dev/null && a=1; done',
  '[ -z "$a" ] && exit 0',
  'sleep 0.2 2>/dev/null || sleep 1; i=$((i+1)); done',
  'for p in $g; do kill -KILL -$p 2>/dev/null; done',
].join('\n');

/** Groups the watchdog holds now (what a new watchdog is told first). */
const groups = new Set<number>();
let dog: ChildProcess | undefined;
/** The exit of a watchdog being ended, for whoever must not return before it is gone. */
let ending: Promise<void> | undefined;
/** Set when `/bin/sh` could not be started: the host goes on without a watchdog. */
let unavailable = false;
/** A watchdog that dies sooner than this after its start is not replaced (no respawn loop). */
const MIN_LIFE_MS = 1_000;

function giveUp(why: string, warn: ((message: string) => void) | undefined): void {
  if (unavailable) return;
  unavailable = true;
  dog = undefined;
  warn?.(
    `No orphan watchdog: ${why}. Servers of this host that ignore SIGTERM would outlive a SIGKILL of the host until the next start reaps them.`,
  );
}

/** Lines not written yet: the changes of one event-loop turn go in one write (50 servers starting at once, one wake-up). */
let pending = '';
let flushScheduled = false;

function send(line: string): void {
  if (!dog) return;
  pending += `${line}\n`;
  if (flushScheduled) return;
  flushScheduled = true;
  setImmediate(flush);
}

function flush(): void {
  flushScheduled = false;
  const lines = pending;
  pending = '';
  if (!dog || lines === '') return;
  try {
    dog.stdin?.write(lines);
  } catch {
    // A dead watchdog: its 'exit' handler forgets it.
  }
}

/** `warn` hears why when this start (or a replacement of its watchdog) fails. */
function start(warn: ((message: string) => void) | undefined): void {
  if (dog || unavailable || process.platform === 'win32') return;
  let child: ChildProcess;
  try {
    child = spawn('/bin/sh', ['-c', SCRIPT], {
      argv0: WATCHDOG_NAME,
      // Its own session: terminal signals meant for the host do not end it before the host.
      detached: true,
      stdio: ['pipe', 'ignore', 'ignore'],
      cwd: '/',
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    });
  } catch (err) {
    giveUp(`/bin/sh could not be started (${(err as Error).message})`, warn);
    return;
  }
  child.once('error', (err) => giveUp(`/bin/sh could not be started (${err.message})`, warn));
  if (child.pid === undefined) return;
  dog = child;
  const startedAt = Date.now();
  child.stdin!.on('error', () => undefined); // EPIPE when it died: handled by 'exit'
  child.once('exit', (code, signal) => {
    if (dog !== child) return; // ended on purpose
    dog = undefined;
    // Killed by someone while it had groups to guard: a new one takes over.
    if (Date.now() - startedAt < MIN_LIFE_MS) giveUp(`the watchdog died at once (${signal ?? `exit code ${code}`})`, warn);
    else if (groups.size > 0) start(warn);
  });
  child.unref();
  (child.stdin as unknown as { unref?: () => void }).unref?.();
  // A new watchdog is told every group; lines meant for one that died are moot.
  pending = '';
  for (const pgid of groups) send(`+${pgid}`);
}

/**
 * Put the group `pgid` under the watchdog, starting the watchdog when it is
 * the first. `warn` is told (once per process) when no watchdog can run.
 */
export function guardGroup(pgid: number, warn?: (message: string) => void): void {
  if (!Number.isInteger(pgid) || pgid <= 1 || groups.has(pgid)) return;
  groups.add(pgid);
  if (dog) send(`+${pgid}`);
  else start(warn);
}

/**
 * Take the group `pgid` off the watchdog (it exited or was killed); once no
 * group is left the watchdog is ended ({@link watchdogEnded} waits for that).
 */
export function releaseGroup(pgid: number): void {
  if (!groups.delete(pgid)) return;
  send(`-${pgid}`);
  if (groups.size === 0) end();
}

function end(): void {
  const child = dog;
  if (!child) return;
  flush();
  dog = undefined;
  // Ref'd while it ends: a host awaiting dispose() must not exit under it and leave it behind.
  child.ref();
  const gone = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    // With nothing left to guard it exits at EOF; this only bounds a watchdog stuck in the kernel.
    const stuck = setTimeout(() => child.kill('SIGKILL'), 5_000);
    stuck.unref();
    child.once('exit', () => {
      clearTimeout(stuck);
      resolve();
    });
  }).finally(() => {
    if (ending === gone) ending = undefined;
  });
  ending = gone;
  child.stdin?.end();
}

/** Resolves once a watchdog being ended has exited (at once when none is). */
export function watchdogEnded(): Promise<void> {
  return ending ?? Promise.resolve();
}

/** PID of the running watchdog, if any (tests and diagnostics). */
export function watchdogPid(): number | undefined {
  return dog?.pid;
}
