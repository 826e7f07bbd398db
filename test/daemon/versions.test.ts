/**
 * Shim and daemon of different versions, with real processes: a session of
 * an older installation runs its own daemon, and a session of this build
 * started beside it gets a daemon of its own build instead of the old one,
 * in the same directory; each serves its own sessions, each `status
 * --shared` names its own build (docs/daemon.md, "Versions").
 */
import { cpSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { execFile } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, describe, expect, it } from 'vitest';
import type { DaemonStatus } from '../../src/daemon/protocol.js';
import { repoRoot } from '../helpers/fixtures.js';
import { cliMain } from '../gateway/support.js';
import { DaemonWorkspace } from './support.js';

/** A copy of the built bin under `dir` that says it is version `version` (another installation). */
function otherInstallation(dir: string, version: string): string {
  mkdirSync(dir, { recursive: true });
  cpSync(dirname(cliMain), join(dir, 'cli'), { recursive: true });
  symlinkSync(join(repoRoot, 'node_modules'), join(dir, 'node_modules'));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'mcp-reconciler', version, type: 'module' }));
  return join(dir, 'cli', 'main.js');
}

function run(ws: DaemonWorkspace, bin: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { env: ws.env(), cwd: ws.root, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? 1 : 0, stdout, stderr });
    });
  });
}

async function session(ws: DaemonWorkspace, bin: string): Promise<Client> {
  const client = new Client({ name: 'versions', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [bin, 'serve', '--stdio', '--shared', ...ws.args()], env: ws.env() as Record<string, string>, stderr: 'ignore' }));
  return client;
}

describe('a shim of another version than the running daemon', () => {
  const ws = new DaemonWorkspace();
  const old = otherInstallation(join(ws.dir, 'old-install'), '0.0.9-old');
  const clients: Client[] = [];

  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await run(ws, old, ['daemon', '--stop']);
    expect(await ws.shutdown(), 'processes left behind').toBe(0);
  });

  it('starts a daemon of its own build beside the old one; each serves its own sessions', async () => {
    ws.writeUser({ a: ws.server('1') });
    clients.push(await session(ws, old));
    expect((await clients[0]!.listTools()).tools.map((t) => t.name)).toContain('mcp__a__echo');
    clients.push(await session(ws, cliMain));
    expect((await clients[1]!.listTools()).tools.map((t) => t.name)).toContain('mcp__a__echo');

    const oldStatus = JSON.parse((await run(ws, old, ['status', '--shared', '--json'])).stdout) as DaemonStatus;
    const status = (await ws.status())!;
    expect(oldStatus.version).toBe('0.0.9-old');
    expect(status.version).not.toBe('0.0.9-old');
    expect(status.build).not.toBe(oldStatus.build);
    expect(status.pid).not.toBe(oldStatus.pid);
    expect(dirname(status.socket)).toBe(dirname(oldStatus.socket));
    expect(status.socket).not.toBe(oldStatus.socket);
    expect(ws.daemonPids().sort()).toEqual([status.pid, oldStatus.pid].sort());
    // Each daemon serves only the session of its own build.
    expect(oldStatus.workspaces[0]!.sessions).toHaveLength(1);
    expect(status.workspaces[0]!.sessions).toHaveLength(1);
  }, 300_000);
});
