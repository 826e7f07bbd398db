/**
 * Orphans of a SIGKILLed host (docs/library.md): the groups a controller spawns are
 * recorded in a 0600 state file per workspace, and the next start kills those
 * that still are the recorded process (its start time; a launcher may rename
 * itself) — never a process that merely got the same PID.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, readFileSync, rmSync, statSync, writeFileSync, existsSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { createMcpController, type McpController } from '../../src/controller/controller.js';
import { processIdentity } from '../../src/connection/process-groups.js';
import { defaultProcessStatePath, readRecordedGroups, type RecordedGroup } from '../../src/connection/process-records.js';
import { ProcessTracker } from '../../src/connection/processes.js';
import { fixturePath, repoRoot, stdioFixtureConfig } from '../helpers/fixtures.js';
import { descendantsOf, endTestProcesses, killGroupOrPid, pidAlive, recordedTempDir, waitFor } from '../helpers/processes.js';
import { WATCHDOG_NAME } from '../../src/connection/watchdog.js';
import { startHostScript } from './support.js';

const isUnix = process.platform !== 'win32';
const controllerModule = pathToFileURL(resolve(repoRoot, 'dist/src/controller/controller.js')).href;

let dirs: string[] = [];
let pids: number[] = [];
let hosts: ChildProcess[] = [];
let controllers: McpController[] = [];
let trackers: ProcessTracker[] = [];

const tempDir = (): string => recordedTempDir(dirs, 'mcp-reap-');

afterEach(async () => {
  // Runs even when an assertion failed: no host, orphan or decoy may outlive the test.
  expect(await endTestProcesses({ hosts, controllers, trackers, pids, dirs })).toEqual([]);
});

/** Start a host process whose controller runs the SIGTERM- and EOF-ignoring server; resolves with the server's PID. */
async function startHost(root: string, stateFile: string): Promise<{ host: ChildProcess; serverPid: number }> {
  const script = `
    import { createMcpController } from ${JSON.stringify(controllerModule)};
    const c = createMcpController({ cwd: ${JSON.stringify(root)}, approvals: ${JSON.stringify(join(root, 'approvals.json'))},
      watch: false, processStateFile: ${JSON.stringify(stateFile)} });
    await c.addRuntimeServer('stubborn', ${JSON.stringify(stdioFixtureConfig('ignore-sigterm-server'))});
    await c.start();
    console.log(JSON.stringify(c.pids()));
    setInterval(() => {}, 1000);
  `;
  const { host, report, stderr } = await startHostScript<number[]>(script, hosts, { what: 'the host to report its server', timeoutMs: 20_000 });
  const [serverPid] = report;
  if (serverPid === undefined) throw new Error(`host reported no server (exit ${host.exitCode}): ${stderr()}`);
  pids.push(serverPid);
  return { host, serverPid };
}

function controllerFor(root: string, stateFile: string): McpController {
  const c = createMcpController({ cwd: root, approvals: join(root, 'approvals.json'), watch: false, killGraceMs: 300, processStateFile: stateFile });
  controllers.push(c);
  return c;
}

const DECOY_CODE = 'setInterval(() => {}, 1000)';

/** A detached process group leader (running `prelude` first); whether it is ours to kill is the test's to say. */
function decoy(prelude = ''): number {
  const child = spawn(process.execPath, ['-e', prelude + DECOY_CODE], { detached: true, stdio: 'ignore' });
  child.unref();
  pids.push(child.pid!);
  return child.pid!;
}

/** A host identity that belongs to no live process (so its groups count as stale). */
const deadOwner = { pid: 2 ** 22 + 7, start: 'gone:1' };

function writeStateFile(file: string, groups: RecordedGroup[]): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify({ version: 1, groups }), { mode: 0o600 });
}

describe.runIf(isUnix)('reaping the orphans of a SIGKILLed host', () => {
  it('a detached server that ignores SIGTERM and stdin EOF outlives its SIGKILLed host, and the next start kills it', async () => {
    const root = tempDir();
    const stateFile = join(tempDir(), 'state', 'processes.json');
    const { host, serverPid } = await startHost(root, stateFile);

    // Recorded while running, privately.
    expect(statSync(stateFile).mode & 0o777).toBe(0o600);
    const recorded = readRecordedGroups(stateFile);
    expect(recorded.map((g) => g.pgid)).toEqual([serverPid]);
    expect(recorded[0]!.cmdline).toContain(fixturePath('ignore-sigterm-server'));

    // The host and its watchdog die together (an OOM kill of the whole tree, a container stop):
    // no exit hook ran and no watchdog is left, so the server is an orphan now.
    const watchdogs = descendantsOf(host.pid!).filter((p) => readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0')[0] === WATCHDOG_NAME);
    expect(watchdogs).toHaveLength(1);
    pids.push(...watchdogs);
    // The watchdog is frozen first, so it cannot act on the host's death in between; the host
    // dies before the watchdog does (a host that outlived its watchdog would start a new one).
    for (const p of watchdogs) process.kill(p, 'SIGSTOP');
    host.kill('SIGKILL');
    for (const p of watchdogs) process.kill(p, 'SIGKILL');
    await waitFor(() => host.exitCode !== null || host.signalCode !== null, 'the host to die');
    await waitFor(() => !watchdogs.some(pidAlive), 'the watchdog to die');
    expect(pidAlive(serverPid)).toBe(true);

    const c = controllerFor(root, stateFile);
    await c.start();
    expect(pidAlive(serverPid)).toBe(false);
    // The stale entry is gone; nothing else was recorded (the new controller has no servers).
    expect(existsSync(stateFile)).toBe(false);
  });

  it('never kills a live process whose PID is recorded but whose start time differs (the PID was recycled)', async () => {
    const root = tempDir();
    const stateFile = join(tempDir(), 'processes.json');
    const recycled = decoy();
    const recycledId = processIdentity(recycled)!;
    writeStateFile(stateFile, [{ pgid: recycled, start: `${recycledId.start}0`, cmdline: [process.execPath, '-e', DECOY_CODE], owner: deadOwner }]);

    const c = controllerFor(root, stateFile);
    await c.start();
    expect(pidAlive(recycled)).toBe(true);
    // Entries that can never match again are dropped.
    expect(existsSync(stateFile)).toBe(false);
  });

  it('kills a recorded server whose command line changed since it started (as `npx` renames itself `npm exec …`)', async () => {
    const root = tempDir();
    const stateFile = join(tempDir(), 'processes.json');
    const renamed = decoy("process.title = 'npm exec some-mcp-server';");
    await waitFor(() => readFileSync(`/proc/${renamed}/cmdline`, 'utf8').startsWith('npm exec'), 'the decoy to rename itself');
    const id = processIdentity(renamed)!;
    writeStateFile(stateFile, [{ pgid: renamed, start: id.start, cmdline: [process.execPath, '-e', DECOY_CODE], owner: deadOwner }]);

    const c = controllerFor(root, stateFile);
    await c.start();
    expect(pidAlive(renamed)).toBe(false);
    expect(existsSync(stateFile)).toBe(false);
  });

  it.each([
    ['0666', 0o666],
    ['0620', 0o620],
  ])('kills nothing listed by a state file that group or others can write (mode %s), and says so', async (_octal, mode) => {
    const root = tempDir();
    const stateFile = join(tempDir(), 'processes.json');
    // A record that names one of our processes exactly (its start time) with a dead owner:
    // a trusted file would get it killed.
    const victim = decoy();
    const id = processIdentity(victim)!;
    writeStateFile(stateFile, [{ pgid: victim, start: id.start, cmdline: [process.execPath, '-e', DECOY_CODE], owner: deadOwner }]);
    chmodSync(stateFile, mode);

    const warnings: string[] = [];
    const c = createMcpController({
      cwd: root, approvals: join(root, 'approvals.json'), watch: false, killGraceMs: 300, processStateFile: stateFile,
      logger: { warn: (m: string) => warnings.push(m) },
    });
    controllers.push(c);
    await c.start();
    expect(pidAlive(victim)).toBe(true);
    const warning = warnings.find((w) => w.includes(stateFile));
    expect(warning).toMatch(/writable by (group|others)/);
    expect(warning).toContain('nothing in it is acted on');
    // Replaced by nothing (this controller runs no server), so the next start has no untrusted file either.
    expect(existsSync(stateFile)).toBe(false);
    expect(readRecordedGroups(stateFile)).toEqual([]);
  });

  it('leaves the groups of a live host of the same workspace alone', async () => {
    const root = tempDir();
    const stateFile = join(tempDir(), 'processes.json');
    const running = decoy();
    const id = processIdentity(running)!;
    const liveOwner = { pid: process.pid, start: processIdentity(process.pid)!.start };
    writeStateFile(stateFile, [{ pgid: running, start: id.start, cmdline: [process.execPath, '-e', DECOY_CODE], owner: liveOwner }]);

    const c = controllerFor(root, stateFile);
    await c.start();
    expect(pidAlive(running)).toBe(true);
    expect(readRecordedGroups(stateFile).map((g) => g.pgid)).toEqual([running]);
  });
});

describe.runIf(isUnix)('the process state file', () => {
  it('records a spawned group and drops it once the process exits on its own or is killed', async () => {
    const stateFile = join(tempDir(), 'processes.json');
    const t = new ProcessTracker({ graceMs: 300 });
    trackers.push(t);
    expect(await t.useStateFile(stateFile)).toEqual([]);
    const read = (): number[] => readRecordedGroups(stateFile).map((g) => g.pgid);

    const quick = t.spawn(process.execPath, ['-e', 'process.stdin.once("data", () => process.exit(0))']);
    const stubborn = t.spawn(process.execPath, [fixturePath('ignore-sigterm-server')]);
    pids.push(quick.pid!, stubborn.pid!);
    // Written once for both spawns, on the next turn of the event loop.
    await waitFor(() => read().length === 2, 'both groups to be recorded');
    expect(read().sort()).toEqual([quick.pid!, stubborn.pid!].sort());
    expect(statSync(stateFile).mode & 0o777).toBe(0o600);

    quick.stdin!.write('bye\n');
    await waitFor(() => !read().includes(quick.pid!), 'the exited process to be dropped from the file');
    await t.killTree(stubborn.pid!);
    await waitFor(() => read().length === 0, 'the killed group to be dropped from the file');
  });

  it('is a journal: one appended line per change, replayed in order; a torn last line and foreign lines are skipped', () => {
    const stateFile = join(tempDir(), 'processes.json');
    const owner = { pid: 999_999_999, start: 'x:1' };
    const group = (pgid: number): RecordedGroup => ({ pgid, start: `s${pgid}`, cmdline: ['node', 'srv'], owner });
    // An older version's whole-file document is the snapshot the journal starts from.
    writeFileSync(stateFile, `${JSON.stringify({ version: 1, groups: [group(11), group(12)] })}\n`);
    writeFileSync(stateFile, `${JSON.stringify({ add: group(13) })}\n${JSON.stringify({ drop: '11@s11' })}\n`, { flag: 'a' });
    writeFileSync(stateFile, `not json\n${JSON.stringify({ add: { pgid: 'evil' } })}\n{"add":{"pgid":14,"sta`, { flag: 'a' });
    expect(readRecordedGroups(stateFile).map((g) => g.pgid)).toEqual([12, 13]);
  });

  it('appends rather than rewrites while servers start, and removes the file once nothing is recorded', async () => {
    const stateFile = join(tempDir(), 'processes.json');
    const t = new ProcessTracker({ graceMs: 300 });
    trackers.push(t);
    await t.useStateFile(stateFile);
    const children = Array.from({ length: 3 }, () => t.spawn(process.execPath, ['-e', 'process.stdin.resume()']));
    pids.push(...children.map((c) => c.pid!));
    await waitFor(() => readRecordedGroups(stateFile).length === 3, 'three groups to be recorded');
    const inode = statSync(stateFile).ino;
    const more = t.spawn(process.execPath, ['-e', 'process.stdin.resume()']);
    pids.push(more.pid!);
    await waitFor(() => readRecordedGroups(stateFile).length === 4, 'the fourth group to be recorded');
    // Same file, grown by one line: no temp-and-rename per spawn.
    expect(statSync(stateFile).ino).toBe(inode);
    expect(readFileSync(stateFile, 'utf8').trim().split('\n').at(-1)).toContain(`"pgid":${more.pid}`);
    await t.killAll();
    expect(existsSync(stateFile)).toBe(false);
  });

  it('reads no group from a journal that group or others can write', () => {
    const stateFile = join(tempDir(), 'processes.json');
    writeStateFile(stateFile, [{ pgid: 4242, start: 's', cmdline: ['node', 'srv'], owner: deadOwner }]);
    expect(readRecordedGroups(stateFile).map((g) => g.pgid)).toEqual([4242]);
    chmodSync(stateFile, 0o646);
    expect(readRecordedGroups(stateFile)).toEqual([]);
  });

  it('defaults to one file per workspace under $XDG_STATE_HOME, falling back to ~/.local/state', () => {
    const a = defaultProcessStatePath('/w/a', { XDG_STATE_HOME: '/state', HOME: '/home/u' });
    expect(a.startsWith('/state/mcp-reconciler/processes/')).toBe(true);
    expect(defaultProcessStatePath('/w/b', { XDG_STATE_HOME: '/state' })).not.toBe(a);
    expect(defaultProcessStatePath('/w/a', { XDG_STATE_HOME: 'relative', HOME: '/home/u' }).startsWith('/home/u/.local/state/mcp-reconciler/')).toBe(true);
  });
});
