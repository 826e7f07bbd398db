/**
 * `mcp-reconciler watch` as a subprocess (the built binary) on a copy of the
 * demo workspace, stdout a pipe so it speaks NDJSON: it starts, shows the
 * servers, reacts to a file edit, takes `approve NAME` on stdin, and exits 0
 * on SIGINT with no child left. One more run goes through a pseudo-terminal
 * (util-linux `script`) for the live view and the approval keys.
 */
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fixturePath, repoRoot } from '../helpers/fixtures.js';
import { descendantsOf, pidAlive, waitFor } from '../helpers/processes.js';
import { cliMain, WatchProcess as SharedWatch, type Line } from './watch-process.js';

const SLOW = 30_000;
const main = cliMain;
const demo = join(repoRoot, 'test', 'fixtures', 'watch-workspace');

interface StatusRow {
  name: string;
  state: string;
  pid?: number;
  tools: string[];
}

/** A temp copy of the demo workspace whose fixture paths point at this checkout's build. */
function copyDemo(): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'mcpr-watch-')));
  cpSync(demo, join(dir, 'ws'), { recursive: true });
  const fixture = fixturePath('basic-server');
  const rewrite = (path: string): void => {
    for (const name of readdirSync(path)) {
      const file = join(path, name);
      if (statSync(file).isDirectory()) rewrite(file);
      else writeFileSync(file, readFileSync(file, 'utf8').replaceAll('${workspaceFolder}/../../../dist/test/fixtures/basic-server.js', fixture));
    }
  };
  rewrite(join(dir, 'ws'));
  return dir;
}

/** The shared subprocess runner on a copy of the watch workspace, with stdin commands and the server PIDs its status lines showed. */
class WatchProcess extends SharedWatch {
  constructor(dir: string, extraArgs: string[] = []) {
    const ws = join(dir, 'ws');
    super(['--cwd', ws, '--user-config', join(ws, 'user-settings.json'), '--approvals', join(dir, 'approvals.json'), ...extraArgs], {
      ...process.env,
      HOME: dir,
      XDG_CONFIG_HOME: dir,
      MCP_RECONCILER_APPROVALS: '',
    });
  }

  /** Every server PID any status line showed. */
  get pids(): Set<number> {
    return new Set(this.lines.flatMap((l) => statusOf(l) ?? []).flatMap((r) => (typeof r.pid === 'number' ? [r.pid] : [])));
  }

  send(command: string): void {
    this.child.stdin.write(`${command}\n`);
  }

  /** Ask for `status` on stdin and return the rows of the answer. */
  async status(): Promise<StatusRow[]> {
    const from = this.lines.length;
    this.send('status');
    return statusOf(await this.next((l) => l.event === 'command' && l.line === 'status', 'the status answer', from))!;
  }
}

function statusOf(line: Line): StatusRow[] | undefined {
  return Array.isArray(line.status) ? (line.status as StatusRow[]) : undefined;
}

function rowsByName(rows: StatusRow[]): Record<string, StatusRow> {
  return Object.fromEntries(rows.map((r) => [r.name, r]));
}

let dir: string;
const running: WatchProcess[] = [];

beforeEach(() => {
  dir = copyDemo();
});
afterEach(async () => {
  for (const w of running.splice(0)) {
    if (w.child.exitCode === null && w.child.signalCode === null) {
      w.child.kill('SIGKILL');
      await w.exited;
    }
    const left = [...w.pids].filter(pidAlive);
    for (const pid of left) process.kill(-pid, 'SIGKILL');
  }
  rmSync(dir, { recursive: true, force: true });
});
afterAll(() => {
  expect(descendantsOf(process.pid)).toEqual([]);
});

describe('watch (NDJSON, as a subprocess)', () => {
  it('starts on the demo workspace, reacts to an edit, approves from stdin, and exits 0 on SIGINT with no child left', async () => {
    const w = new WatchProcess(dir);
    running.push(w);

    // Starts and shows every demo server with its state.
    const ready = rowsByName(statusOf(await w.next((l) => l.event === 'ready', 'the ready line'))!);
    expect(Object.keys(ready).sort()).toEqual(['docs', 'linter', 'metrics', 'notes', 'scratch', 'tickets']);
    expect(ready.notes).toMatchObject({ state: 'connected' });
    expect(ready.notes!.tools).toContain('mcp__notes__v1_tool');
    expect(ready.scratch).toMatchObject({ state: 'excluded', tools: [] });
    for (const gated of ['docs', 'linter', 'metrics', 'tickets']) expect(ready[gated]).toMatchObject({ state: 'pending_approval', tools: [] });
    expect(pidAlive(ready.notes!.pid!)).toBe(true);
    expect(descendantsOf(w.child.pid!)).toContain(ready.notes!.pid);

    // Reacts to a file edit: notes gets a new tools version.
    let from = w.lines.length;
    const userFile = join(dir, 'ws', 'user-settings.json');
    writeFileSync(userFile, readFileSync(userFile, 'utf8').replace('"TOOLS_VERSION": "1"', '"TOOLS_VERSION": "5"'));
    await w.next((l) => l.event === 'reconciled', 'a reconciled line after the edit', from);
    await w.next((l) => l.event === 'server-state' && l.name === 'notes' && l.state === 'connected', 'notes to reconnect', from);
    await waitFor(async () => rowsByName(await w.status()).notes?.tools.includes('mcp__notes__v5_tool') === true, 'notes to serve version 5', SLOW, 200);

    // Approves from stdin: docs connects.
    from = w.lines.length;
    w.send('approve docs');
    const answer = await w.next((l) => l.event === 'command' && l.line === 'approve docs', 'the approve answer', from);
    expect(answer.ok).toBe(true);
    await w.next((l) => l.event === 'server-state' && l.name === 'docs' && l.state === 'connected', 'docs to connect', from);
    const rows = rowsByName(await w.status());
    expect(rows.docs).toMatchObject({ state: 'connected' });
    expect(rows.docs!.tools).toContain('mcp__docs__echo');
    expect(rows.tickets?.state).toBe('pending_approval');
    const pids = [...w.pids];
    expect(pids.length).toBeGreaterThanOrEqual(2);
    const children = descendantsOf(w.child.pid!);
    expect(children).toEqual(expect.arrayContaining([rows.notes!.pid, rows.docs!.pid]));

    // Ctrl-C: exit 0, a last `stopped` line, and nothing left running.
    w.child.kill('SIGINT');
    const exit = await w.exited;
    expect(exit).toEqual({ code: 0, signal: null });
    expect(w.lines.at(-1)?.event).toBe('stopped');
    expect(descendantsOf(w.child.pid!)).toEqual([]);
    expect([...pids, ...children].filter(pidAlive)).toEqual([]);
    // The approval was persisted to the --approvals file, nowhere else.
    expect(JSON.parse(readFileSync(join(dir, 'approvals.json'), 'utf8'))).toMatchObject({ version: 1 });
  });

  it('answers bad stdin commands without dying, and `quit` exits 0 with no child left', async () => {
    const w = new WatchProcess(dir);
    running.push(w);
    await w.next((l) => l.event === 'ready', 'the ready line');

    let from = w.lines.length;
    w.send('approve nosuchserver');
    const bad = await w.next((l) => l.event === 'command' && l.line === 'approve nosuchserver', 'the failed approve answer', from);
    expect(bad.ok).toBe(false);
    expect(String(bad.error)).toContain('nosuchserver');

    from = w.lines.length;
    w.send('frobnicate');
    expect(await w.next((l) => l.event === 'command' && l.line === 'frobnicate', 'the unknown-command answer', from)).toMatchObject({ ok: false });

    from = w.lines.length;
    w.send('reject tickets');
    expect(await w.next((l) => l.event === 'command' && l.line === 'reject tickets', 'the reject answer', from)).toMatchObject({ ok: true });
    await w.next((l) => l.event === 'server-state' && l.name === 'tickets' && l.state === 'rejected', 'tickets to be rejected', from);

    const pids = [...w.pids, ...descendantsOf(w.child.pid!)];
    expect(pids.length).toBeGreaterThan(0);
    w.send('quit');
    expect(await w.exited).toEqual({ code: 0, signal: null });
    expect(pids.filter(pidAlive)).toEqual([]);
  });
});

describe('watch stopped early', () => {
  it('Ctrl-C while a server is still starting stops at once: no ready line, exit 0, no child left', async () => {
    // A workspace whose only server takes a minute to answer, so start() cannot settle by itself.
    rmSync(join(dir, 'ws'), { recursive: true, force: true });
    mkdirSync(join(dir, 'ws'));
    const server = { command: process.execPath, args: [fixturePath('slow-server')], env: { START_DELAY_MS: '60000' } };
    writeFileSync(join(dir, 'ws', 'user-settings.json'), JSON.stringify({ mcpServers: { sloth: server } }));
    const w = new WatchProcess(dir);
    running.push(w);
    await waitFor(() => descendantsOf(w.child.pid!).length > 0, 'the slow server to be spawned', SLOW);
    const children = descendantsOf(w.child.pid!);

    w.child.kill('SIGINT');
    expect(await w.exited).toEqual({ code: 0, signal: null });
    expect(w.lines.map((l) => l.event)).not.toContain('ready');
    expect(w.lines.at(-1)?.event).toBe('stopped');
    expect(children.filter(pidAlive)).toEqual([]);
  });
});

/** util-linux `script` gives the child a pseudo-terminal; without it the TTY test cannot run. */
const hasScript = existsSync('/usr/bin/script') && spawnSync('/usr/bin/script', ['--version']).status === 0;

describe('watch on a terminal', () => {
  it.skipIf(!hasScript)('shows the live table, asks for approval, approves on `a`, and stops on Ctrl-C with no child left', async () => {
    const ws = join(dir, 'ws');
    const argv = [process.execPath, main, 'watch', '--cwd', ws, '--user-config', join(ws, 'user-settings.json'), '--approvals', join(dir, 'approvals.json')];
    const quote = (a: string) => `'${a.replaceAll("'", `'\\''`)}'`;
    const child = spawn('/usr/bin/script', ['-qfec', argv.map(quote).join(' '), '/dev/null'], {
      env: { ...process.env, HOME: dir, XDG_CONFIG_HOME: dir, TERM: 'xterm' },
      stdio: 'pipe',
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (s: string) => (out += s));
    // Only what was drawn after the last clear-screen is on the screen now.
    const screen = (): string => out.slice(out.lastIndexOf('\x1b[2J'));
    let seen: number[] = [];
    try {
      const startedUp = () => /Approve MCP server "docs"/.test(screen()) && /^notes\s+user\s+connected\s/m.test(screen());
      await waitFor(startedUp, `the approval question and notes connected (output: ${out.slice(-800)})`, SLOW);
      expect(screen()).toMatch(/^scratch\s+user\s+excluded\s/m);
      expect(screen()).toMatch(/^docs\s+project\s+pending_approval\s/m);

      child.stdin.write('a');
      await waitFor(() => /^docs\s+project\s+connected\s/m.test(screen()), `docs to show as connected (screen: ${screen()})`, SLOW);
      // The next pending server is asked about.
      await waitFor(() => /Approve MCP server "linter"/.test(screen()), 'the next question', SLOW);
      seen = descendantsOf(child.pid!);
      expect(seen.length).toBeGreaterThanOrEqual(3); // the CLI and at least notes and docs

      child.stdin.write('\x03');
      expect(await exited).toBe(0);
      await waitFor(() => seen.every((p) => !pidAlive(p)), 'every process under the terminal to exit', 10_000).catch(() => undefined);
      expect(seen.filter(pidAlive)).toEqual([]);
    } finally {
      if (child.exitCode === null) {
        child.kill('SIGKILL');
        for (const pid of seen.filter(pidAlive)) process.kill(pid, 'SIGKILL');
      }
    }
  });
});
