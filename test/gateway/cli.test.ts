/**
 * `serve`'s command line: usage errors exit 2 with a hint, a port that is
 * taken exits 1 before any server starts, a gateway started by a gateway
 * refuses to run, and `--help` lists it.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCliCaptured } from '../helpers/cli.js';
import { cliMain, Workspace } from './support.js';

describe('serve command line', () => {
  const ws = new Workspace();
  ws.writeUser({ a: ws.server('1') });
  const run = (args: string[]) => runCliCaptured(['serve', ...args, ...ws.args()], ws.env(), ws.root);

  afterAll(async () => {
    expect(await ws.cleanup()).toBe(0);
  });

  it('usage errors exit 2 and say what to do', async () => {
    const none = await run([]);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/serve needs --stdio or --http/);
    expect(none.stderr).toMatch(/hint: /);

    const port = await run(['--http', '--port', '70000']);
    expect(port.code).toBe(2);
    expect(port.stderr).toMatch(/--port must be a port number from 0 to 65535/);

    const scopeOnHttp = await run(['--http', '--servers', 'a']);
    expect(scopeOnHttp.code).toBe(2);
    expect(scopeOnHttp.stderr).toMatch(/\?servers=a,b/);

    const emptyScope = await run(['--stdio', '--servers', ',']);
    expect(emptyScope.code).toBe(2);
    expect(emptyScope.stderr).toMatch(/--servers names no server/);

    expect((await run(['--http', '--call-timeout', 'soon'])).code).toBe(2);
    const resumableStdio = await run(['--stdio', '--resumable']);
    expect(resumableStdio.code).toBe(2);
    expect(resumableStdio.stderr).toMatch(/--resumable applies to --http only/);
    expect(ws.serverPids()).toEqual([]);
  });

  it('a port that is taken exits 1 with a hint, and no server was started', async () => {
    const blocker: Server = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const { port } = blocker.address() as { port: number };
    try {
      const taken = await run(['--http', '--port', String(port)]);
      expect(taken.code).toBe(1);
      expect(taken.stderr).toMatch(new RegExp(`port ${port} on 127.0.0.1 is already in use`));
      expect(taken.stderr).toMatch(/hint: pick another port/);
      expect(taken.stderr).not.toMatch(/\n\s+at /); // no stack trace
      expect(ws.serverPids()).toEqual([]);
    } finally {
      await new Promise<void>((resolve) => blocker.close(() => resolve()));
    }
  });

  it('refuses to run as a server of another gateway (the gateway configured as its own server), exit 2', () => {
    // A parent whose command line reads `node …/cli/main.js serve`, as the outer gateway's would.
    const parent = join(ws.dir, 'fake', 'cli', 'main.js');
    mkdirSync(dirname(parent), { recursive: true });
    writeFileSync(
      parent,
      `const r = require('node:child_process').spawnSync(process.execPath, ${JSON.stringify([cliMain, 'serve', '--stdio', ...ws.args()])}, { stdio: ['pipe', 'inherit', 'inherit'] }); process.exit(r.status ?? 1);\n`,
    );
    const r = spawnSync(process.execPath, [parent, 'serve'], { env: ws.env(), encoding: 'utf8', input: '' });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/started by another `mcp-reconciler serve`/);
    expect(r.stderr).toMatch(/hint: remove the `mcp-reconciler serve` entry/);
    expect(ws.serverPids()).toEqual([]);
  });

  it('is listed in --help', async () => {
    const help = await runCliCaptured(['--help'], ws.env(), ws.root);
    expect(help.stdout).toMatch(/\n {2}serve +serve the managed servers/);
  });
});
