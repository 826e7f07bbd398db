/**
 * The process state file (SPEC §8.2): a journal of the process groups each
 * host spawned, so the next start of a workspace whose host was SIGKILLed
 * finds and reaps the servers it left running.
 */
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { appDir, workspaceKey, writeFileAtomicSync } from '../util/persist.js';
import { readTrustedSync, type Untrusted } from '../util/file-trust.js';
import { AFTER_KILL_WAIT_MS, DEFAULT_GRACE_MS, POLL_MS, processIdentity, sameProcess, sleep } from './process-groups.js';

/** One recorded process group: a detached server spawned by some host. */
export interface RecordedGroup {
  /** Leader PID, which is also the process group id. */
  pgid: number;
  /** The leader's start time (boot id and start tick): what tells it from a later process given its PID. */
  start: string;
  /** The command line it was spawned with (for people reading the file; a launcher may rewrite its own). */
  cmdline: string[];
  /** The host process that spawned it; its groups are stale once it is gone. */
  owner: { pid: number; start: string };
}

interface StateDocument {
  version: 1;
  groups: readonly RecordedGroup[];
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
export function readJournal(file: string): { groups: RecordedGroup[]; untrusted?: Untrusted } {
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
export function writeState(file: string, groups: readonly RecordedGroup[]): void {
  if (groups.length === 0) {
    rmSync(file, { force: true });
    return;
  }
  writeFileAtomicSync(file, `${JSON.stringify({ version: 1, groups } satisfies StateDocument)}\n`, { mkdir: true });
}

let hostIdentity: { pid: number; start: string } | undefined;

export function host(): { pid: number; start: string } | undefined {
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
  if (!id || !sameProcess(id, group)) return false;
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
 * very process that was recorded (same start time, whatever its command
 * line says now; a recycled PID is never touched): SIGTERM, then SIGKILL after `graceMs`.
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
    return id !== undefined && sameProcess(id, g);
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

export function groupKey(g: Pick<RecordedGroup, 'pgid' | 'start'>): string {
  return `${g.pgid}@${g.start}`;
}

