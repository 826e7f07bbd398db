/**
 * Per-server logs: a server's stderr, the MCP log messages it sends and the
 * supervisor's lines land in one capped, 0600 file per server, readable with
 * `controller.logs()` and `mcp-reconciler logs` (followed with -f).
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/main.js';
import type { McpController } from '../../src/controller/controller.js';
import { defaultLogDir, logFile, ServerLogWriter, type LogRecord } from '../../src/controller/server-logs.js';
import { fixturePath } from '../helpers/fixtures.js';
import { waitFor } from '../helpers/processes.js';
import { Harness, waitState, type Workspace } from './support.js';

const h = new Harness();
afterAll(() => h.cleanup());

const logServer = (env: Record<string, string> = {}) => ({ command: process.execPath, args: [fixturePath('log-server')], env });

/** Every record of `server` so far. */
async function records(c: McpController, server: string): Promise<LogRecord[]> {
  const out: LogRecord[] = [];
  for await (const r of c.logs(server)) out.push(r);
  return out;
}

/** `mcp-reconciler logs …` running in-process: what it printed so far, and a stop like Ctrl-C. */
function cliRun(ws: Workspace, argv: string[]) {
  const out = { stdout: '', stderr: '' };
  const abort = new AbortController();
  const running = runCli([...argv, '--cwd', ws.root], { stdout: { write: (s: string) => (out.stdout += s) }, stderr: { write: (s: string) => (out.stderr += s) }, env: ws.env, cwd: ws.root, signal: abort.signal });
  return {
    out,
    until: (what: string, test: (stdout: string) => boolean) => waitFor(() => test(out.stdout), `${what} (have ${JSON.stringify(out.stdout.slice(-300))})`, 30_000),
    stop: async () => {
      abort.abort();
      return running;
    },
  };
}

/** Run `mcp-reconciler logs …` until `until(stdout)` holds, then stop it. */
async function cliUntil(ws: Workspace, argv: string[], until: (stdout: string) => boolean): Promise<{ code: number; stdout: string; stderr: string }> {
  const run = cliRun(ws, argv);
  try {
    await run.until('logs output to match', until);
  } finally {
    await run.stop();
  }
  return { code: await run.stop(), ...run.out };
}

describe('server logs', () => {
  it('stderr, MCP log messages and supervisor lines in one stream; `logs -f` shows a new line; escapes are neutralised', async () => {
    const { ws, c } = await h.connected({ mcpServers: { talk: logServer() } }, {}, 'mcp-logs-');

    const follow = cliRun(ws, ['logs', 'talk', '-f']);
    // What is there already is printed first; the line written after that must come through the follow.
    await follow.until('the supervisor lines', (out) => out.includes('supervisor  connected'));
    await c.callTool('mcp__talk__say', { text: 'hello \u001b[31mred' });
    await follow.until('the new stderr line', (out) => out.includes('stderr  hello \\u001b[31mred'));
    const r = { code: await follow.stop(), ...follow.out };
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).not.toContain('\u001b');
    expect(r.stdout).toMatch(/^\S+Z supervisor  connected$/m);

    await waitFor(async () => (await records(c, 'talk')).some((x) => x.source === 'mcp'), 'the MCP log message', 30_000);
    const all = await records(c, 'talk');
    // stderr and the MCP message travel different pipes: their order is not fixed.
    const said = all.filter((x) => x.source !== 'supervisor').map((x) => [x.source, x.level, x.logger, x.text]);
    expect(said).toHaveLength(2);
    expect(said).toEqual(
      expect.arrayContaining([
        ['stderr', undefined, undefined, 'hello \u001b[31mred'],
        ['mcp', 'warning', 'fixture', 'hello \u001b[31mred'],
      ]),
    );
    expect(all.filter((x) => x.source === 'supervisor').map((x) => x.text)).toEqual(['connecting', 'connected']);
    const dir = defaultLogDir(ws.root, ws.env);
    expect((await stat(logFile(dir, 'talk'))).mode & 0o777).toBe(0o600);
    expect((await stat(dir)).mode & 0o777).toBe(0o700);

    const json = await cliUntil(ws, ['logs', 'talk', '--json', '--since', '1h'], (out) => out.includes('"source":"mcp"'));
    expect(json.stdout.trim().split('\n').map((l) => (JSON.parse(l) as LogRecord).source)).toContain('stderr');
  });

  it("a server that fails has the supervisor's reason in its log", async () => {
    const ws = h.workspace('mcp-logs-');
    ws.writeUserSettings({ mcpServers: { broken: { command: 'mcp-reconciler-no-such-command' } } });
    const c = h.controller(ws);
    await c.start();
    await waitState(c, 'broken', 'failed');
    const lines = (await records(c, 'broken')).map((r) => `${r.source}:${r.level} ${r.text}`);
    expect(lines).toEqual(['supervisor:info connecting', 'supervisor:error failed: Server "broken": command not found: "mcp-reconciler-no-such-command" (spawn ENOENT)']);
  });

  it('a server writing 50 MB of stderr leaves a log no bigger than the cap', async () => {
    const ws = h.workspace('mcp-logs-');
    ws.writeUserSettings({ mcpServers: { flood: logServer({ FLOOD_BYTES: String(50 * 1024 * 1024) }) } });
    const cap = 256 * 1024;
    const c = h.controller(ws, { logMaxBytes: cap });
    await c.start();
    await waitFor(async () => (await records(c, 'flood')).some((r) => r.text === 'flood done'), 'the flood to end', 120_000);
    const dir = defaultLogDir(ws.root, ws.env);
    const files = await readdir(dir);
    expect(files.sort()).toEqual(['flood.log', 'flood.log.1']);
    for (const f of files) expect((await stat(join(dir, f))).size).toBeLessThanOrEqual(cap);
  }, 180_000);

  it('`logs` of a server that never ran says so', async () => {
    const ws = h.workspace('mcp-logs-');
    let stderr = '';
    const code = await runCli(['logs', 'ghost', '--cwd', ws.root], { stdout: { write: () => true }, stderr: { write: (s: string) => (stderr += s) }, env: ws.env, cwd: ws.root });
    expect(code).toBe(1);
    expect(stderr).toMatch(/^error: no log of "ghost" for .* \(looked for .*ghost\.log\)\nhint: a server gets a log once mcp-reconciler runs it/);
  });

  // /proc/self/fd tells which files this process holds open (Linux, where CI runs).
  it.runIf(process.platform === 'linux')('a log file stays open between writes that come close together, is closed when idle and on close(), and keeps its order across reopening', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'logs-'));
    try {
      const w = new ServerLogWriter(dir);
      const file = logFile(dir, 's');
      const held = (): number => {
        const real = realpathSync(file);
        return readdirSync('/proc/self/fd').filter((fd) => {
          try {
            return readlinkSync(`/proc/self/fd/${fd}`) === real;
          } catch {
            return false;
          }
        }).length;
      };
      w.supervisor('s', 'one');
      await w.flush();
      expect(held()).toBe(1);
      w.supervisor('s', 'two');
      await w.flush();
      // The same descriptor, not a second one.
      expect(held()).toBe(1);
      await waitFor(() => held() === 0, 'the idle log file to be closed', 10_000);
      w.supervisor('s', 'three');
      await w.flush();
      expect(held()).toBe(1);
      await w.close();
      expect(held()).toBe(0);
      const texts = readFileSync(file, 'utf8').trim().split('\n').map((l) => (JSON.parse(l) as LogRecord).text);
      expect(texts).toEqual(['one', 'two', 'three']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('records reach the file on their own after the turn that made them, together in one write', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'logs-'));
    try {
      const w = new ServerLogWriter(dir);
      const file = logFile(dir, 's');
      w.supervisor('s', 'one');
      w.stderr('s', Buffer.from('two\nthree\n'));
      // Written after this turn, never while the caller is still recording.
      expect(existsSync(file)).toBe(false);
      await waitFor(() => existsSync(file) && readFileSync(file, 'utf8').split('\n').length > 3, 'the records to be written', 10_000);
      expect(readFileSync(file, 'utf8').trim().split('\n').map((l) => (JSON.parse(l) as LogRecord).text)).toEqual(['one', 'two', 'three']);
      await w.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a log folder that cannot be made is reported once; recording goes on without throwing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'logs-'));
    try {
      // A file where the folder should be.
      writeFileSync(join(dir, 'taken'), '');
      const errors: unknown[] = [];
      const w = new ServerLogWriter(join(dir, 'taken', 'logs'), { onError: (err) => errors.push(err) });
      for (let i = 0; i < 3; i++) {
        w.supervisor('s', `line ${i}`);
        w.stderr('s', Buffer.from(`stderr ${i}\n`));
        await new Promise((resolve) => setImmediate(resolve));
      }
      await w.close();
      expect(errors).toHaveLength(1);
      expect((errors[0] as NodeJS.ErrnoException).code).toBe('ENOTDIR');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('rotates at the cap across many writes: both files within it, whole records only, the newest last', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'logs-'));
    try {
      const cap = 4096;
      const w = new ServerLogWriter(dir, { maxBytes: cap });
      for (let i = 0; i < 200; i++) {
        w.supervisor('s', `record ${i} ${'x'.repeat(i % 50)}`);
        if (i % 7 === 0) await w.flush();
      }
      await w.close();
      const file = logFile(dir, 's');
      const current = readFileSync(file, 'utf8').trim().split('\n').map((l) => (JSON.parse(l) as LogRecord).text);
      const older = readFileSync(`${file}.1`, 'utf8').trim().split('\n').map((l) => (JSON.parse(l) as LogRecord).text);
      expect(statSync(file).size).toBeLessThanOrEqual(cap);
      expect(statSync(`${file}.1`).size).toBeLessThanOrEqual(cap);
      expect(current.at(-1)).toBe(`record 199 ${'x'.repeat(199 % 50)}`);
      // No gap between the rotated file and the current one.
      const index = (t: string): number => Number(t.split(' ')[1]);
      expect(index(current[0]!)).toBe(index(older.at(-1)!) + 1);
      expect(current.map(index)).toEqual(current.map((_, k) => index(current[0]!) + k));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
