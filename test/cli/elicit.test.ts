/**
 * `mcp-reconciler call` answers a tool's elicitation on the terminal (issue
 * 11): the form is asked field by field on stderr, answers are typed, and the
 * server gets them (defaults filled, types checked). Without a terminal the
 * CLI does not offer elicitation, and the server says what it needed.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/main.js';
import { fixturePath } from '../helpers/fixtures.js';
import { runCliCaptured } from '../helpers/cli.js';

const ws = realpathSync(mkdtempSync(join(tmpdir(), 'cli-elicit-')));
afterAll(() => rmSync(ws, { recursive: true, force: true }));
const env = { ...process.env, HOME: ws, XDG_CONFIG_HOME: join(ws, '.config'), XDG_STATE_HOME: join(ws, '.state'), XDG_CACHE_HOME: join(ws, '.cache') };
const config = JSON.stringify({ mcpServers: { travel: { command: process.execPath, args: [fixturePath('elicit-server')] } } });
const argv = (tool: string) => ['call', `mcp__travel__${tool}`, '--cwd', ws, '--approvals', join(ws, 'approvals.json'), '--config', config];

/**
 * Run `call` in-process on a fake terminal: each time stderr ends with one of
 * `answers`' prompts (matched in order), the answer is typed.
 */
async function onTerminal(tool: string, answers: Array<[RegExp, string]>): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdin = Object.assign(new PassThrough(), { isTTY: true, setRawMode: () => undefined });
  let stdout = '';
  let stderr = '';
  let next = 0;
  const code = await runCli(argv(tool), {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: {
      write: (s: string) => {
        stderr += s;
        // Answer once the prompt is on screen, as a person would.
        while (next < answers.length && answers[next]![0].test(stderr)) stdin.write(`${answers[next++]![1]}\r`);
      },
    },
    env,
    cwd: ws,
    stdin,
    isTTY: true,
  });
  return { code, stdout, stderr };
}

describe('call with a tool that asks the user', () => {
  it('asks each field on the terminal, re-asks a bad answer, fills defaults, and sends the answer', async () => {
    const r = await onTerminal('book', [
      [/Date \(required\)[^\n]*: $/, ''], // required: asked again
      [/this field is required\n {2}Date \(required\)[^\n]*: $/, '2026-12-24'],
      [/Seats — a whole number \[2\]: $/, ''], // default 2
      [/Window seat — y\/n: $/, 'maybe'],
      [/answer y or n\n {2}Window seat — y\/n: $/, 'y'],
      [/Class — 1\) economy {2}2\) business: $/, '2'],
      [/Send this to MCP server "travel"\? \[Y\/n\/c\] $/, ''],
    ]);
    expect(r.stderr).toContain('MCP server "travel" asks: Which flight?');
    expect(r.stderr).toContain('Day of the flight, e.g. 2026-12-24');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ action: 'accept', content: { date: '2026-12-24', seats: 2, window: true, class: 'business' } });
  });

  it('n declines, Ctrl-D cancels, and a URL request shows the URL', async () => {
    const declined = await onTerminal('book', [
      [/Date \(required\)[^\n]*: $/, '2026-01-01'],
      [/Seats[^\n]*: $/, '3'],
      [/Window seat[^\n]*: $/, 'n'],
      [/Class[^\n]*: $/, 'economy'],
      [/\[Y\/n\/c\] $/, 'n'],
    ]);
    expect(JSON.parse(declined.stdout)).toEqual({ action: 'decline' });

    const cancelled = await onTerminal('book', [[/Date \(required\)[^\n]*: $/, '\x04']]);
    expect(cancelled.stderr).toContain('cancelled');
    expect(JSON.parse(cancelled.stdout)).toEqual({ action: 'cancel' });

    const url = await onTerminal('visit', [[/then press Enter \(n: decline, c: cancel\) $/, '']]);
    expect(url.stderr).toContain('asks you to open a page: Sign the form\n  https://example.com/form');
    expect(JSON.parse(url.stdout)).toEqual({ action: 'accept' });
  });

  it('without a terminal elicitation is not offered: the tool says what it needed and call exits 1', async () => {
    const r = await runCliCaptured(argv('book'), env, ws);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('needs a client that can ask the user');
  });
});

// A real pseudo-terminal (python3's pty module), through the built binary.
const main = resolve('dist/src/cli/main.js');
const python = spawnSync('python3', ['-c', 'import pty'], { encoding: 'utf8' }).status === 0;
describe.skipIf(!python)('on a real pseudo-terminal', () => {
  it('the form is asked and answered through the terminal', () => {
    const script = `
import os, pty, select, subprocess, sys
m, s = pty.openpty()
p = subprocess.Popen(sys.argv[1:], stdin=s, stdout=s, stderr=s, close_fds=True)
os.close(s)
out, step, seen = b'', 0, 0
answers = [(b'Date (required)', b'2026-05-01\\r'), (b'Seats', b'\\r'), (b'Window seat', b'n\\r'), (b'Class', b'1\\r'), (b'[Y/n/c] ', b'\\r')]
try:
    while True:
        r, _, _ = select.select([m], [], [], 30)
        if not r:
            break
        try:
            data = os.read(m, 4096)
        except OSError:
            break
        if not data:
            break
        out += data
        # Answer the next prompt once it is on screen (after what was already answered).
        if step < len(answers) and answers[step][0] in out[seen:] and out.endswith((b': ', b'] ')):
            os.write(m, answers[step][1]); step += 1; seen = len(out)
    p.wait(timeout=30)
finally:
    if p.poll() is None:
        p.kill(); p.wait()
sys.stdout.write(out.decode('utf8', 'replace'))
sys.exit(p.returncode)
`;
    const r = spawnSync('python3', ['-c', script, process.execPath, main, ...argv('book')], { encoding: 'utf8', env, timeout: 60_000 });
    expect(r.stdout).toContain('Which flight?');
    expect(r.stdout).toContain('"date":"2026-05-01"');
    expect(r.stdout).toContain('"seats":2');
    expect(r.status).toBe(0);
  });
});
