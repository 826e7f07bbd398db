import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { hasCode } from '../../src/errors.js';
import { ownBusyTicks, ownCpuTicks, processTreeCpuTicks, treeRunnable } from '../../src/connection/process-groups.js';
import { ProcessTracker } from '../../src/connection/processes.js';
import { fixturePath, repoRoot } from '../helpers/fixtures.js';
import { descendantsOf, pidAlive, waitFor } from '../helpers/processes.js';
import { expectNoSurvivors } from './support.js';

const trackers: ProcessTracker[] = [];
const extraPids: number[] = [];
const tmp = mkdtempSync(join(tmpdir(), 'mcp-processes-'));

function tracker(graceMs = 300): ProcessTracker {
  const t = new ProcessTracker({ graceMs });
  trackers.push(t);
  return t;
}

function stderrOf(child: ChildProcess): () => string {
  let text = '';
  child.stderr?.on('data', (chunk: Buffer) => (text += chunk.toString()));
  return () => text;
}

/**
 * A launcher (the wrapper fixture, which forwards no signal) whose child, the
 * real server, ignores SIGTERM; resolves once that grandchild is ready, with
 * the grandchildren's PIDs (checked for survivors after the file).
 */
async function launcherOfStubbornServer(t: ProcessTracker): Promise<{ wrapper: ChildProcess; grandchildren: number[] }> {
  const wrapper = t.spawn(process.execPath, [fixturePath('wrapper'), 'ignore-sigterm-server']);
  const stderr = stderrOf(wrapper);
  await waitFor(() => stderr().includes('ignore-sigterm-server: ready'), 'the grandchild to be ready');
  const grandchildren = descendantsOf(wrapper.pid!);
  extraPids.push(...grandchildren);
  return { wrapper, grandchildren };
}

afterAll(async () => {
  await expectNoSurvivors(trackers, extraPids);
  rmSync(tmp, { recursive: true, force: true });
});

describe('ProcessTracker', () => {
  it('escalates to SIGKILL for a server that ignores SIGTERM and stdin close', async () => {
    const t = tracker();
    const child = t.spawn(process.execPath, [fixturePath('ignore-sigterm-server')]);
    const stderr = stderrOf(child);
    await waitFor(() => stderr().includes('ready'), 'the server to install its handlers');
    const pid = child.pid!;
    expect(t.pids()).toEqual([pid]);
    await t.killTree(pid);
    expect(stderr()).toContain('ignoring SIGTERM');
    expect(pidAlive(pid)).toBe(false);
    expect(child.signalCode).toBe('SIGKILL');
    expect(t.pids()).toEqual([]);
  });

  it('kills the grandchild a launcher started, although the launcher forwards no signal', async () => {
    const t = tracker();
    const { wrapper, grandchildren } = await launcherOfStubbornServer(t);
    expect(grandchildren.length).toBeGreaterThan(0);
    await t.killTree(wrapper.pid!);
    expect([wrapper.pid!, ...grandchildren].filter(pidAlive)).toEqual([]);
  });

  it('still kills the group when its leader is already gone', async () => {
    const t = tracker();
    const { wrapper, grandchildren } = await launcherOfStubbornServer(t);
    // Killing only the launcher orphans the real server: the reason groups exist.
    process.kill(wrapper.pid!, 'SIGKILL');
    await waitFor(() => wrapper.exitCode !== null || wrapper.signalCode !== null, 'the wrapper to exit');
    expect(grandchildren.filter(pidAlive)).toEqual(grandchildren);
    expect(t.pids()).toContain(wrapper.pid!);
    await t.killTree(wrapper.pid!);
    expect(grandchildren.filter(pidAlive)).toEqual([]);
    expect(t.pids()).toEqual([]);
  });

  it("counts a launcher's busy child in its tree CPU, reading every thread's children or only the main thread's", async () => {
    const t = tracker();
    // The child burns 200 ms of its own CPU (not of wall time, so a busy machine changes nothing), then idles.
    const burn = "const u=()=>{const c=process.cpuUsage();return (c.user+c.system)/1000};while(u()<200);console.log('burnt');setInterval(()=>{},1000)";
    const launcher = t.spawn('/bin/sh', ['-c', `${JSON.stringify(process.execPath)} -e ${JSON.stringify(burn)}; true`]);
    let out = '';
    launcher.stdout?.on('data', (c: Buffer) => (out += c.toString()));
    await waitFor(() => out.includes('burnt'), 'the child to burn its CPU');
    extraPids.push(...descendantsOf(launcher.pid!));
    const own = ownCpuTicks(launcher.pid!)!;
    const all = processTreeCpuTicks(launcher.pid!, 'all')!;
    const main = processTreeCpuTicks(launcher.pid!, 'main')!;
    // 200 ms is 20 clock ticks, all of them the child's.
    expect(all - own).toBeGreaterThanOrEqual(19);
    expect(Math.abs(main - all)).toBeLessThanOrEqual(2);
    await t.killTree(launcher.pid!);
  });

  it("tells a tree with a process on or waiting for a CPU from one that sleeps, through a launcher, and counts waiting for a CPU as busy", async () => {
    const t = tracker();
    // `; true` keeps the shell as a launcher (no exec): the spinning node is its child, always runnable.
    const busy = t.spawn('/bin/sh', ['-c', `${JSON.stringify(process.execPath)} -e "console.log('spinning');for(;;);"; true`]);
    let out = '';
    busy.stdout?.on('data', (c: Buffer) => (out += c.toString()));
    const sleeping = t.spawn('/bin/sh', ['-c', 'sleep 60; true']);
    await waitFor(() => out.includes('spinning'), 'the child to spin');
    await waitFor(() => descendantsOf(sleeping.pid!).length > 0, 'the sleeping child to start');
    extraPids.push(...descendantsOf(busy.pid!), ...descendantsOf(sleeping.pid!));
    // The launcher itself waits for its child (state S): only the walk down its tree finds the runnable one.
    expect(treeRunnable(busy.pid!)).toBe(true);
    await waitFor(() => !treeRunnable(sleeping.pid!), 'the sleeping tree to settle');
    expect(treeRunnable(sleeping.pid!)).toBe(false);
    // Busy time counts running and waiting to run alike: ~30 ticks over 300 ms for the spinning
    // process however loaded the machine is, none for the sleeping one.
    const [spinner] = descendantsOf(busy.pid!);
    const [sleeper] = descendantsOf(sleeping.pid!);
    const before = [ownBusyTicks(spinner!)!, ownBusyTicks(sleeper!)!];
    await new Promise((r) => setTimeout(r, 300));
    expect(ownBusyTicks(spinner!)! - before[0]!).toBeGreaterThanOrEqual(15);
    expect(ownBusyTicks(sleeper!)! - before[1]!).toBeLessThan(1);
    await Promise.all([t.killTree(busy.pid!), t.killTree(sleeping.pid!)]);
    expect(treeRunnable(busy.pid!)).toBe(false);
  });

  it('forgets a child that exits on its own', async () => {
    const t = tracker();
    const child = t.spawn(process.execPath, ['-e', 'process.exit(0)']);
    await waitFor(() => t.pids().length === 0, 'the exited child to be forgotten');
    expect(t.history()).toEqual([child.pid!]);
  });

  it('killAll is memoised, kills everything and closes the tracker', async () => {
    const t = tracker();
    const a = t.spawn(process.execPath, [fixturePath('ignore-sigterm-server')]);
    const b = t.spawn(process.execPath, [fixturePath('basic-server')]);
    const first = t.killAll();
    expect(t.killAll()).toBe(first);
    await first;
    expect([a.pid!, b.pid!].filter(pidAlive)).toEqual([]);
    expect(t.pids()).toEqual([]);
    expect(t.closed).toBe(true);
    let thrown: unknown;
    try {
      t.spawn(process.execPath, ['-e', '']);
    } catch (err) {
      thrown = err;
    }
    expect(hasCode(thrown, 'disposed')).toBe(true);
  });

  it('kills a child tracked after killAll at once', async () => {
    const t = tracker();
    await t.killAll();
    const child = spawn(process.execPath, [fixturePath('ignore-sigterm-server')], { detached: true, stdio: 'pipe' });
    extraPids.push(child.pid!);
    t.track(child);
    await waitFor(() => !pidAlive(child.pid!), 'the late child to be killed');
    expect(pidAlive(child.pid!)).toBe(false);
  });
});

describe('host exit', () => {
  const script = join(tmp, 'host.mjs');
  const processesModule = pathToFileURL(join(repoRoot, 'dist/src/connection/processes.js')).href;
  writeFileSync(
    script,
    `import { ProcessTracker } from ${JSON.stringify(processesModule)};
const tracker = new ProcessTracker();
const child = tracker.spawn(process.execPath, [${JSON.stringify(fixturePath('ignore-sigterm-server'))}]);
child.stderr.on('data', (d) => {
  if (!String(d).includes('ready')) return;
  process.stdout.write('CHILD ' + child.pid + '\\n');
  if (process.argv[2] === 'exit') process.exit(0);
});
setInterval(() => {}, 60000);
`,
  );

  async function runHost(mode: 'exit' | 'wait'): Promise<{ host: ChildProcess; childPid: number }> {
    const host = spawn(process.execPath, [script, mode], { stdio: ['ignore', 'pipe', 'inherit'] });
    extraPids.push(host.pid!);
    let out = '';
    host.stdout?.on('data', (d: Buffer) => (out += d.toString()));
    await waitFor(() => /CHILD (\d+)/.test(out), 'the host to report its child');
    const childPid = Number(/CHILD (\d+)/.exec(out)![1]);
    extraPids.push(childPid);
    return { host, childPid };
  }

  it('SIGKILLs every tracked group when the host process exits', async () => {
    const { host, childPid } = await runHost('exit');
    await waitFor(() => host.exitCode !== null, 'the host to exit');
    await waitFor(() => !pidAlive(childPid), 'the child to die with its host', 5_000);
    expect(pidAlive(childPid)).toBe(false);
  });

  it('kills tracked groups when an unhandled SIGTERM ends the host, and the host still dies of it', async () => {
    const { host, childPid } = await runHost('wait');
    host.kill('SIGTERM');
    await waitFor(() => host.exitCode !== null || host.signalCode !== null, 'the host to end');
    expect(host.signalCode).toBe('SIGTERM');
    await waitFor(() => !pidAlive(childPid), 'the child to die with its host', 5_000);
    expect(pidAlive(childPid)).toBe(false);
  });
});
