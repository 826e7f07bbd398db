/**
 * No orphans (SPEC §8.2): every process a controller starts ends with
 * `dispose()`, a removal, a config change, a crash of its launcher, or the
 * host's exit — checked by PID, grandchildren and SIGTERM-ignorers included.
 */
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { fixturePath, repoRoot, stdioFixtureConfig } from '../helpers/fixtures.js';
import { descendantsOf, pidAlive, waitFor } from '../helpers/processes.js';
import { firstText, Harness, rejection, row, waitState } from './support.js';

const h = new Harness();
afterAll(() => h.cleanup());

/** A stdio config that starts `fixture` through the npx-like wrapper (the server is a grandchild). */
function wrapped(fixture: string, env?: Record<string, string>) {
  return { command: process.execPath, args: [fixturePath('wrapper'), fixture], ...(env ? { env } : {}) };
}

describe('dispose()', () => {
  it('leaves no process alive: children, a wrapped grandchild, and a server that ignores SIGTERM', async () => {
    const { c } = await h.running({ plain: stdioFixtureConfig('basic-server'), wrapped: wrapped('basic-server'), stubborn: stdioFixtureConfig('ignore-sigterm-server') });
    for (const name of ['plain', 'wrapped', 'stubborn']) expect(row(c, name).state).toBe('connected');

    const wrapperPid = row(c, 'wrapped').pid!;
    const grandchild = Number(firstText(await c.callTool('mcp__wrapped__pid', {})));
    expect(grandchild).not.toBe(wrapperPid);
    expect(descendantsOf(wrapperPid)).toContain(grandchild);
    const stubborn = Number(firstText(await c.callTool('mcp__stubborn__pid', {})));
    expect(stubborn).toBe(row(c, 'stubborn').pid);
    const all = [...c.pids(), grandchild];
    expect(all).toHaveLength(4);
    h.remember(...all);
    expect(all.every(pidAlive)).toBe(true);

    await c.dispose();
    // dispose() resolves only once every group is gone.
    expect(all.filter(pidAlive)).toEqual([]);
    expect(c.pids()).toEqual([]);
    expect(c.tools()).toEqual([]);
    expect((await rejection(c.callTool('mcp__plain__echo', { text: 'x' }))).code).toBe('disposed');
    await c.dispose(); // idempotent
  });
});

describe('dispose() during a connect', () => {
  it('kills the child that is still starting, and a pending start() resolves', async () => {
    const ws = h.workspace();
    // A hang of start() would outlast the test timeout.
    const c = h.controller(ws, { readyTimeoutMs: 600_000 });
    await c.addRuntimeServer('slow', stdioFixtureConfig('slow-server', { env: { START_DELAY_MS: '60000' } }));
    const started = c.start();
    await waitFor(() => c.pids().length === 1, 'the slow child to be spawned');
    const pid = c.pids()[0]!;
    h.remember(pid);
    expect(row(c, 'slow').state).toBe('connecting');
    await c.dispose();
    expect(pidAlive(pid)).toBe(false);
    await started;
    expect(c.pids()).toEqual([]);
  });
});

describe('a server going away', () => {
  it('removed from the config: its process group is killed, grandchild included', async () => {
    const { c } = await h.running({ wrapped: wrapped('basic-server') });
    const wrapperPid = row(c, 'wrapped').pid!;
    const grandchild = Number(firstText(await c.callTool('mcp__wrapped__pid', {})));
    h.remember(wrapperPid, grandchild);

    await c.removeRuntimeServer('wrapped');
    expect(c.tools()).toEqual([]);
    expect(c.unavailableReason('wrapped')).toBe('removed');
    await waitFor(() => !pidAlive(wrapperPid) && !pidAlive(grandchild), 'the removed server to be killed');
    await waitFor(() => c.pids().length === 0, 'the tracker to let go of the group');
  });

  it('a connection-relevant edit replaces the process (fingerprint changed)', async () => {
    const { c } = await h.running({ stubborn: stdioFixtureConfig('ignore-sigterm-server') });
    const old = row(c, 'stubborn');
    await c.addRuntimeServer('stubborn', stdioFixtureConfig('ignore-sigterm-server', { env: { SOMETHING: 'new' } }));
    await waitFor(() => {
      const r = row(c, 'stubborn');
      return r.state === 'connected' && r.generation > old.generation;
    }, 'the new generation');
    await waitFor(() => !pidAlive(old.pid!), 'the old SIGTERM-ignoring process to be killed');
    // The tracker forgets a PID on the child's `exit` event, which can land a moment
    // after the kernel has reaped it: wait for that rather than race it.
    await waitFor(() => !c.pids().includes(old.pid!), 'the tracker to forget the old process');
    expect(c.pids()).toEqual([row(c, 'stubborn').pid]);
  });

  it('a launcher that dies does not leave its server behind', async () => {
    const { c } = await h.running({ wrapped: wrapped('basic-server') }, { backoff: { initialMs: 20, maxMs: 100, attempts: 5 } });
    const before = row(c, 'wrapped');
    const grandchild = Number(firstText(await c.callTool('mcp__wrapped__pid', {})));
    h.remember(before.pid!, grandchild);

    // Kill only the launcher; the wrapper does not forward signals.
    process.kill(before.pid!, 'SIGKILL');
    await waitFor(() => !pidAlive(grandchild), 'the orphaned grandchild to be killed');
    await waitFor(() => {
      const r = row(c, 'wrapped');
      return r.state === 'connected' && r.generation > before.generation;
    }, 'the supervisor to reconnect');
    await waitState(c, 'wrapped', 'connected');
    h.remember(Number(firstText(await c.callTool('mcp__wrapped__pid', {}))));
  });
});

describe('the host exiting without dispose()', () => {
  const controllerModule = pathToFileURL(resolve(repoRoot, 'dist/src/controller/controller.js')).href;

  /** A host that starts a controller with a wrapped server and a SIGTERM-ignorer, prints their PIDs, then ends as `how` says. */
  async function runHost(how: 'exit' | 'sigterm'): Promise<number[]> {
    const ws = h.workspace();
    const script = `
      import { createMcpController } from ${JSON.stringify(controllerModule)};
      const c = createMcpController({ cwd: ${JSON.stringify(ws.root)}, approvals: ${JSON.stringify(ws.approvals)}, watch: false });
      await c.addRuntimeServer('wrapped', ${JSON.stringify(wrapped('basic-server'))});
      await c.addRuntimeServer('stubborn', ${JSON.stringify(stdioFixtureConfig('ignore-sigterm-server'))});
      await c.start();
      const r = await c.callTool('mcp__wrapped__pid', {});
      console.log(JSON.stringify([...c.pids(), Number(r.content[0].text)]));
      if (${JSON.stringify(how)} === 'exit') process.exit(0);
      setInterval(() => {}, 1000);
    `;
    const host = spawn(process.execPath, ['--input-type=module', '-e', script], { env: ws.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    host.stdout.on('data', (d: Buffer) => (out += d.toString()));
    host.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((r) => host.once('exit', (code) => r(code)));
    try {
      await waitFor(() => out.includes(']') || host.exitCode !== null, 'the host to report its PIDs', 30_000);
      const pids = JSON.parse(out.trim().split('\n').at(-1)!) as number[];
      h.remember(...pids);
      expect(pids).toHaveLength(3);
      if (how === 'sigterm') host.kill('SIGTERM');
      await exited;
      return pids;
    } catch (e) {
      host.kill('SIGKILL');
      throw new Error(`host failed: ${String(e)}; stderr: ${err}`);
    }
  }

  it('process.exit() kills every tracked group', async () => {
    const pids = await runHost('exit');
    await waitFor(() => pids.every((p) => !pidAlive(p)), 'the children of the exited host to be gone', 10_000);
    expect(pids.filter(pidAlive)).toEqual([]);
  });

  it('SIGTERM to a host that does not handle it kills every tracked group', async () => {
    const pids = await runHost('sigterm');
    await waitFor(() => pids.every((p) => !pidAlive(p)), 'the children of the terminated host to be gone', 10_000);
    expect(pids.filter(pidAlive)).toEqual([]);
  });
});
