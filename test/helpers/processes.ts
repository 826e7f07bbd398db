import { mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Whether a process with this PID exists (and is not a zombie). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/** All live descendants of `pid` (children, grandchildren, …), read from /proc. */
export function descendantsOf(pid: number): number[] {
  const parentOf = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parentOf.set(Number(entry), Number(fields[1]));
    } catch {
      // the process went away while we read
    }
  }
  const out: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const p = queue.shift()!;
    for (const [child, parent] of parentOf) {
      if (parent === p) {
        out.push(child);
        queue.push(child);
      }
    }
  }
  return out.filter(pidAlive);
}

/** Wait until `predicate` holds, polling; throws with `what` after `timeoutMs`. */
export async function waitFor(predicate: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000, everyMs = 25): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (await predicate()) return;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** SIGKILL to `pid`'s process group and to `pid` itself; either may be gone already. */
export function killGroupOrPid(pid: number): void {
  for (const target of [-pid, pid]) {
    try {
      process.kill(target, 'SIGKILL');
    } catch {
      // gone already
    }
  }
}

/** A new temp dir (its real path) named `<prefix>…`, recorded in `dirs` so that {@link endTestProcesses} removes it. */
export function recordedTempDir(dirs: string[], prefix: string): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  dirs.push(dir);
  return dir;
}

/** What a process test started, to be ended after each test. */
export interface TestProcesses {
  hosts: { pid?: number | undefined }[];
  controllers: { dispose(): Promise<unknown> }[];
  trackers?: { killAll(): Promise<unknown> }[];
  pids: number[];
  dirs: string[];
}

/**
 * End everything a test started (hosts, controllers, trackers, stray PIDs,
 * temp dirs), even after a failed assertion, empty the lists, and return the
 * PIDs still alive after a bounded wait: the test's leaks.
 */
export async function endTestProcesses(t: TestProcesses): Promise<number[]> {
  for (const host of t.hosts) if (host.pid !== undefined) killGroupOrPid(host.pid);
  await Promise.allSettled(t.controllers.map((c) => c.dispose()));
  await Promise.allSettled((t.trackers ?? []).map((k) => k.killAll()));
  for (const pid of t.pids) killGroupOrPid(pid);
  const all = [...t.pids, ...t.hosts.flatMap((h) => (h.pid === undefined ? [] : [h.pid]))];
  await waitFor(() => all.every((p) => !pidAlive(p)), 'every test process to be gone', 5_000).catch(() => {});
  for (const dir of t.dirs) rmSync(dir, { recursive: true, force: true });
  for (const list of [t.hosts, t.controllers, t.trackers ?? [], t.pids, t.dirs]) list.length = 0;
  return all.filter(pidAlive);
}
