/**
 * Project servers named after Object.prototype members (`toString`,
 * `constructor`, `__proto__`, `hasOwnProperty`) are ordinary names: they are
 * approved by the built binary and by the library, and `status` / `why` name
 * them; an unknown `valueOf` is an unknown server, not an inherited method.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { McpReconcilerError } from '../../src/errors.js';
import { Harness, type Workspace } from '../controller/support.js';
import { stdioFixtureConfig } from '../helpers/fixtures.js';
import { waitFor } from '../helpers/processes.js';
import { runBinary } from './watch-process.js';

const h = new Harness();
afterAll(() => h.cleanup());

const NAMES = ['toString', 'constructor', '__proto__', 'hasOwnProperty'];
/** `__proto__` is listed but never run (an XState child id cannot be `__proto__`). */
const RUNNABLE = NAMES.filter((n) => n !== '__proto__');

/** A project `.mcp.json` with every name; written as text, since an object literal cannot hold a `__proto__` key. */
function writeProject(ws: Workspace): void {
  const entry = JSON.stringify(stdioFixtureConfig('basic-server'));
  writeFileSync(join(ws.root, '.mcp.json'), `{"mcpServers":{${NAMES.map((n) => `${JSON.stringify(n)}:${entry}`).join(',')}}}`);
}

function bin(ws: Workspace, ...argv: string[]): ReturnType<typeof runBinary> {
  return runBinary([...argv, '--cwd', ws.root, '--approvals', ws.approvals], ws.env);
}

describe('server names that are Object.prototype members', () => {
  it('the binary approves each one, status and why name them, and valueOf is unknown', async () => {
    const ws = h.workspace('mcp-proto-names-');
    writeProject(ws);
    for (const name of NAMES) {
      const r = await bin(ws, 'approve', name);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(`approved "${name}"`);
    }

    const status = await bin(ws, 'status', '--json');
    expect(status.code, status.stderr).toBe(0);
    const doc = JSON.parse(status.stdout) as { servers: { name: string; state: string; scope: string }[]; issues: { server?: string; message: string }[] };
    for (const name of RUNNABLE) expect(doc.servers.find((s) => s.name === name)).toMatchObject({ name, state: 'connected', scope: 'project' });
    expect(doc.issues).toEqual([expect.objectContaining({ server: '__proto__', message: expect.stringContaining('rename it') })]);

    for (const name of RUNNABLE) {
      const why = await bin(ws, 'why', name, '--json');
      expect(why.code, why.stderr).toBe(0);
      expect(JSON.parse(why.stdout)).toMatchObject({ kind: 'server', name });
    }

    // Configured, approved, but never run: why says so, not "no server named".
    const proto = await bin(ws, 'why', '__proto__', '--json');
    expect(proto.code, proto.stderr).toBe(0);
    expect(JSON.parse(proto.stdout)).toMatchObject({ kind: 'server', name: '__proto__', message: expect.stringContaining('rename it') });

    for (const verb of ['why', 'approve', 'reject']) {
      const r = await bin(ws, verb, 'valueOf');
      expect(r.code, `${verb} valueOf`).not.toBe(0);
      expect(r.stderr).toMatch(/no MCP server (or tool )?named "valueOf"/);
    }
  }, 300_000);

  it('the library approves each one, names them in status and why, and refuses valueOf as unknown', async () => {
    const ws = h.workspace('mcp-proto-names-');
    writeProject(ws);
    const c = h.controller(ws);
    for (const name of NAMES) await c.approve(name);
    await c.start();
    for (const name of RUNNABLE) {
      expect(c.status().find((s) => s.name === name)).toMatchObject({ name, state: 'connected', scope: 'project' });
      expect(c.unavailableReason(name)).toBeUndefined();
      expect(c.tools().some((t) => t.name === `mcp__${name}__echo`)).toBe(true);
      expect((await c.callTool(`mcp__${name}__echo`, { text: name })).isError).toBeFalsy();
    }
    for (const name of ['valueOf', 'isPrototypeOf']) {
      await expect(c.approve(name)).rejects.toMatchObject({ code: 'unknown_server' });
      await expect(c.reject(name)).rejects.toMatchObject({ code: 'unknown_server' });
      await expect(c.reconnect(name)).rejects.toBeInstanceOf(McpReconcilerError);
      expect(c.unavailableReason(name)).toBeUndefined();
      expect(c.toolUnavailableMessage(`mcp__${name}__echo`)).not.toMatch(/function|\[object/);
    }

    // A session approval and a rejection are kept per name, `__proto__` included.
    await c.reject('toString');
    expect(c.status().find((s) => s.name === 'toString')).toMatchObject({ state: 'rejected' });
    await c.approve('toString', { persist: false });
    await c.approve('__proto__', { persist: false });
    await waitFor(() => c.status().find((s) => s.name === 'toString')?.state === 'connected', 'toString to connect on its session approval', 30_000);
    expect(c.status().map((s) => s.name).sort()).toEqual([...RUNNABLE].sort());
  }, 120_000);
});
