/**
 * `logLevel` (docs/manage.md): the connection sends `logging/setLevel` after
 * each connect to a server that declares `logging`, so a real SDK server
 * stops sending what is below it and those messages never reach the
 * server's log; `setLogLevel()` changes it at runtime; `logs --level`
 * filters what is shown. The fixture is a real SDK server over stdio.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/main.js';
import type { McpController } from '../../src/controller/controller.js';
import type { LogRecord } from '../../src/controller/server-logs.js';
import { fixturePath } from '../helpers/fixtures.js';
import { waitFor } from '../helpers/processes.js';
import { Harness, waitState, type Workspace } from './support.js';

const h = new Harness();
afterAll(() => h.cleanup());

const logServer = (extra: Record<string, unknown> = {}) => ({ command: process.execPath, args: [fixturePath('log-server')], ...extra });

/** The MCP log messages of `server` so far, as `level text`. */
async function mcpLines(c: McpController, server: string): Promise<string[]> {
  const out: string[] = [];
  for await (const r of c.logs(server)) if (r.source === 'mcp') out.push(`${r.level} ${r.text}`);
  return out;
}

/** Call `chatter` and wait until its `emergency` line (always sent) is in the log: everything before it is there too. */
async function chatter(c: McpController, server: string, round: number): Promise<string[]> {
  await c.callTool(`mcp__${server}__chatter`);
  await waitFor(async () => (await mcpLines(c, server)).filter((l) => l === 'emergency chatter emergency').length >= round, `chatter round ${round} in the log`, 30_000);
  return mcpLines(c, server);
}

const ALL = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'].map((l) => `${l} chatter ${l}`);
const FROM_WARNING = ALL.slice(3);

/** A controller whose user settings are `settings`, started, with each server connected. */
const connected: typeof h.connected = (settings, extra) => h.connected(settings, extra, 'mcp-loglevel-');

async function cliLogs(ws: Workspace, argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = { stdout: '', stderr: '' };
  const code = await runCli([...argv, '--cwd', ws.root], { stdout: { write: (s: string) => (out.stdout += s) }, stderr: { write: (s: string) => (out.stderr += s) }, env: ws.env, cwd: ws.root });
  return { code, ...out };
}

describe('logLevel', () => {
  it("an entry's logLevel is sent after connect and again after a reconnect: debug lines never reach the log", async () => {
    const { c } = await connected({ mcpServers: { quiet: logServer({ logLevel: 'warning' }), chatty: logServer() } });
    // Without a level the server sends everything (the SDK's default).
    expect(await chatter(c, 'chatty', 1)).toEqual(ALL);
    expect(await chatter(c, 'quiet', 1)).toEqual(FROM_WARNING);
    // A reconnect is a new process and a new session: the level is sent again.
    await c.reconnect('quiet');
    await waitState(c, 'quiet', 'connected');
    expect(await chatter(c, 'quiet', 2)).toEqual([...FROM_WARNING, ...FROM_WARNING]);
  });

  it('mcp.logLevel in a settings file is every server’s default; setLogLevel changes it at runtime and survives a reconnect', async () => {
    const { c } = await connected({ mcp: { logLevel: 'error' }, mcpServers: { a: logServer() } });
    const errorAndUp = ALL.slice(4);
    expect(await chatter(c, 'a', 1)).toEqual(errorAndUp);
    expect(await c.setLogLevel('a', 'debug')).toBe(true);
    expect(await chatter(c, 'a', 2)).toEqual([...errorAndUp, ...ALL]);
    await c.reconnect('a');
    await waitState(c, 'a', 'connected');
    expect(await chatter(c, 'a', 3)).toEqual([...errorAndUp, ...ALL, ...ALL]);
    await expect(c.setLogLevel('a', 'loud' as never)).rejects.toMatchObject({ code: 'usage' });
    await expect(c.setLogLevel('ghost', 'info')).rejects.toMatchObject({ code: 'unknown_server' });
  });

  it('an edit of logLevel is applied to the live connection without a reconnect', async () => {
    const { ws, c } = await connected({ mcpServers: { a: logServer({ logLevel: 'error' }) } }, { watch: true });
    const pid = c.pids()[0];
    expect(await chatter(c, 'a', 1)).toEqual(ALL.slice(4));
    ws.writeUserSettings({ mcpServers: { a: logServer({ logLevel: 'notice' }) } });
    // The level is sent by the reload; chatter until its notice line shows it arrived.
    await waitFor(async () => (await chatter(c, 'a', 0)).includes('notice chatter notice'), 'the notice level to apply', 30_000);
    expect(c.pids()).toEqual([pid]);
    expect((await mcpLines(c, 'a')).filter((l) => l.startsWith('debug') || l.startsWith('info'))).toEqual([]);
  });

  it('an invalid logLevel is a config problem naming the field', async () => {
    const ws = h.workspace('mcp-loglevel-');
    ws.writeUserSettings({ mcpServers: { a: logServer({ logLevel: 'loud' }) } });
    const c = h.controller(ws);
    const issues: string[] = [];
    c.on('config-error', (e) => issues.push(...e.issues.map((i) => `${i.field ?? ''}: ${i.message}`)));
    await c.start();
    expect(issues.join('\n')).toContain('logLevel: must be one of "debug", "info"');
  });

  it('`logs NAME --level LEVEL` shows MCP messages and supervisor lines at that level or above, and every stderr line', async () => {
    const { ws, c } = await connected({ mcpServers: { a: logServer() } });
    await chatter(c, 'a', 1);
    await c.callTool('mcp__a__say', { text: 'plain stderr', level: 'debug' });
    await waitFor(async () => (await mcpLines(c, 'a')).includes('debug plain stderr'), 'the say line', 30_000);
    const text = await cliLogs(ws, ['logs', 'a', '--level', 'error']);
    expect(text.code).toBe(0);
    const shown = text.stdout.trim().split('\n').map((l) => l.replace(/^\S+Z /, ''));
    expect(shown).toEqual(['log:error fixture  chatter error', 'log:critical fixture  chatter critical', 'log:alert fixture  chatter alert', 'log:emergency fixture  chatter emergency', 'stderr  plain stderr']);
    const json = await cliLogs(ws, ['logs', 'a', '--json', '--level', 'alert']);
    expect(json.stdout.trim().split('\n').map((l) => (JSON.parse(l) as LogRecord).text)).toEqual(['chatter alert', 'chatter emergency', 'plain stderr']);
    const bad = await cliLogs(ws, ['logs', 'a', '--level', 'loud']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--level "loud" is not an MCP log level');
    const lib: string[] = [];
    for await (const r of c.logs('a', { level: 'emergency' })) lib.push(r.text);
    expect(lib).toEqual(['chatter emergency', 'plain stderr']);
  });
});

describe('logLevel on the 2026-07-28 wire', () => {
  it('rides in each tool call: a v2 server sends what is at or above it, and nothing without one', async () => {
    const v2 = (extra: Record<string, unknown> = {}) => ({ command: process.execPath, args: [fixturePath('v2-log-server')], ...extra });
    const { c } = await connected({ mcpServers: { modern: v2({ logLevel: 'warning' }), silent: v2() } });
    expect(await chatter(c, 'modern', 1)).toEqual(FROM_WARNING);
    // No level asked: the new wire's servers send no log messages at all.
    await c.callTool('mcp__silent__chatter');
    expect(await mcpLines(c, 'silent')).toEqual([]);
    expect(await c.setLogLevel('modern', 'error')).toBe(true);
    expect(await chatter(c, 'modern', 2)).toEqual([...FROM_WARNING, ...ALL.slice(4)]);
  });
});
