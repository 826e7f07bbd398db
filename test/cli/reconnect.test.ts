/**
 * `reconnect SERVER` and `approve SERVER --session` from another process reach
 * a running `watch` (the built binary, NDJSON) through the request channel;
 * without a running watch they fail and say why and what to do instead.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { requestChannelPath } from '../../src/cli/request-channel.js';
import { runCliCaptured } from '../helpers/cli.js';
import { fixturePath } from '../helpers/fixtures.js';
import { runBinary, WatchProcess, type Line } from './watch-process.js';

interface Row {
  name: string;
  state: string;
  generation: number;
  tools: string[];
}

let dir: string;
const watches: WatchProcess[] = [];

afterEach(async () => {
  const left: number[] = [];
  for (const w of watches.splice(0)) left.push(...(await w.cleanup()));
  rmSync(dir, { recursive: true, force: true });
  expect(left).toEqual([]);
});

/**
 * A workspace with `fixable` in user scope (broken until `fixed` exists: it
 * rests in `failed`) and a gated `docs` in .mcp.json (pending approval).
 */
function setup(): { ws: string; env: NodeJS.ProcessEnv; approvals: string; marker: string; args: string[] } {
  dir = realpathSync(mkdtempSync(join(tmpdir(), 'mcpr-reconnect-')));
  const ws = join(dir, 'ws');
  mkdirSync(ws);
  const marker = join(dir, 'fixed');
  const node = (fixture: string, env: Record<string, string> = {}) => ({ command: process.execPath, args: [fixturePath(fixture)], env });
  writeFileSync(join(dir, 'user.json'), JSON.stringify({ mcpServers: { fixable: node('fixable-server', { FIXED_WHEN: marker }) } }));
  writeFileSync(join(ws, '.mcp.json'), JSON.stringify({ mcpServers: { docs: node('basic-server') } }));
  const approvals = join(dir, 'approvals.json');
  const env = { ...process.env, HOME: dir, XDG_CONFIG_HOME: dir, MCP_RECONCILER_APPROVALS: '' };
  return { ws, env, approvals, marker, args: ['--cwd', ws, '--user-config', join(dir, 'user.json'), '--approvals', approvals] };
}

const rows = (l: Line): Record<string, Row> => Object.fromEntries((l.status as Row[]).map((r) => [r.name, r]));

describe('reconnect and approve --session reach a running watch', () => {
  it('reconnects a failed server (new generation), approves for the session only (nothing stored), and explains refusals', async () => {
    const { env, approvals, marker, args } = setup();
    const w = new WatchProcess(args, env);
    watches.push(w);
    const ready = rows(await w.next((l) => l.event === 'ready', 'the ready line'));
    expect(ready.fixable).toMatchObject({ state: 'failed', generation: 1, tools: [] });
    expect(ready.docs).toMatchObject({ state: 'pending_approval' });

    // Fix the server's cause, then reconnect it from another process.
    writeFileSync(marker, '');
    let from = w.lines.length;
    const rc = await runBinary(['reconnect', 'fixable', ...args], env);
    expect(rc.stderr).toBe('');
    expect(rc.code).toBe(0);
    expect(rc.stdout).toMatch(/^reconnecting "fixable" now with a fresh retry budget \(it was failed\) \(running watch, pid \d+\)\n$/);
    const connected = await w.next((l) => l.event === 'server-state' && l.name === 'fixable' && l.state === 'connected', 'fixable to connect', from);
    expect(connected.generation).toBe(2);
    expect(await w.next((l) => l.event === 'request', 'the request line', from)).toMatchObject({ verb: 'reconnect', server: 'fixable', ok: true });

    // Connected already: nothing to do, and it says so.
    const again = await runBinary(['reconnect', 'fixable', '--json', ...args], env);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ ok: true, request: 'reconnect', server: 'fixable', message: '"fixable" is connected (generation 2); nothing to reconnect' });

    // Names the watch does not have, and servers reconnect does not apply to.
    const unknown = await runBinary(['reconnect', 'nosuch', ...args], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^error: the running watch \(pid \d+\) could not do it: no MCP server named "nosuch" is configured\nhint: configured servers: /);
    const gated = await runBinary(['reconnect', 'docs', ...args], env);
    expect(gated.code).toBe(2);
    expect(gated.stderr).toContain('MCP server "docs" is waiting for your approval; reconnect only acts on a server that failed');
    expect(gated.stderr).toMatch(/hint: approve it with/);

    // A session approval from another process connects docs in the watch and stores nothing.
    from = w.lines.length;
    const approve = await runBinary(['approve', 'docs', '--session', ...args], env);
    expect(approve.stderr).toBe('');
    expect(approve.code).toBe(0);
    expect(approve.stdout).toMatch(/^approved "docs" for this watch session only \(config [0-9a-f]{12}\); nothing was stored/);
    await w.next((l) => l.event === 'server-state' && l.name === 'docs' && l.state === 'connected', 'docs to connect', from);
    expect(existsSync(approvals) ? JSON.parse(readFileSync(approvals, 'utf8')) : { roots: {} }).toMatchObject({ roots: {} });

    // A user-scope server needs no approval: the watch's usage error comes back as exit 2.
    const user = await runBinary(['approve', 'fixable', '--session', ...args], env);
    expect(user.code).toBe(2);
    expect(user.stderr).toContain('"fixable" comes from the user scope and needs no approval');

    expect(await w.stop()).toEqual({ code: 0, signal: null });
    // The watch unregistered itself: nothing is left in the channel directory.
    const channelDir = dirname(requestChannelPath(approvals, realpathSync(join(dir, 'ws'))));
    expect(existsSync(channelDir) ? readdirSync(channelDir) : []).toEqual([]);
  });
});

describe('without a running watch', () => {
  it('reconnect and approve --session fail with exit 1, say why and what to do, and leave no request behind', async () => {
    const { env, approvals, args } = setup();
    const rc = await runBinary(['reconnect', 'fixable', ...args], env);
    expect(rc.code).toBe(1);
    expect(rc.stdout).toBe('');
    expect(rc.stderr).toMatch(/^error: no `mcp-reconciler watch` is running for .*ws \(with approvals file .*approvals\.json\), so nothing was done\n/);
    expect(rc.stderr).toContain('hint: reconnect acts on the servers of a running watch; one-shot commands');
    expect(rc.stderr).not.toMatch(/\n\s+at /);

    const approve = await runBinary(['approve', 'docs', '--session', ...args], env);
    expect(approve.code).toBe(1);
    expect(approve.stderr).toContain('error: no `mcp-reconciler watch` is running');
    expect(approve.stderr).toContain('run `mcp-reconciler approve` without --session to store the approval');
    expect(existsSync(approvals)).toBe(false);
    const channelDir = dirname(requestChannelPath(approvals, realpathSync(join(dir, 'ws'))));
    expect(existsSync(channelDir) ? readdirSync(channelDir) : []).toEqual([]);
  });

  it('is listed in --help, with its options', async () => {
    const help = await runCliCaptured(['--help'], process.env, tmpdir());
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^ {2}reconnect SERVER +make the running watch reconnect a failed, needs-auth or reconnecting server now$/m);
    const own = await runCliCaptured(['reconnect', '--help'], process.env, tmpdir());
    expect(own.stdout).toContain('Usage: mcp-reconciler reconnect SERVER [options]');
    expect(own.stdout).toContain('--timeout MS');
    const approve = await runCliCaptured(['approve', '--help'], process.env, tmpdir());
    expect(approve.stdout).toMatch(/--session +approve for the running watch of this workspace only; nothing is stored/);
  });

  it('checks usage first: a bad --timeout or a missing name exits 2', async () => {
    const { env, args } = setup();
    const bad = await runBinary(['reconnect', 'fixable', '--timeout', '0', ...args], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('error: --timeout must be a whole number of milliseconds from 1 to 86400000 (24 h), not "0"');
    const none = await runBinary(['reconnect', ...args], env);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('error: reconnect needs SERVER, but no arguments were given');
    const stored = await runBinary(['approve', 'docs', '--timeout', '100', ...args], env);
    expect(stored.code).toBe(2);
    expect(stored.stderr).toContain('--timeout only applies with --session');
  });
});
