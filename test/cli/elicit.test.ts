/**
 * `mcp-reconciler call` answers a tool's elicitation on the terminal (issue
 * 11): the form is asked field by field on stderr, answers are typed, and the
 * server gets them (defaults filled, types checked). Without a terminal the
 * CLI does not offer elicitation, and the server says what it needed.
 */
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fixturePath, cliBin } from '../helpers/fixtures.js';
import { runCliCaptured, runCliOnTerminal, type CliRun } from '../helpers/cli.js';
import { ptyAvailable, runInPty } from '../helpers/pty.js';

const ws = realpathSync(mkdtempSync(join(tmpdir(), 'cli-elicit-')));
afterAll(() => rmSync(ws, { recursive: true, force: true }));
const env = { ...process.env, HOME: ws, XDG_CONFIG_HOME: join(ws, '.config'), XDG_STATE_HOME: join(ws, '.state'), XDG_CACHE_HOME: join(ws, '.cache') };
const config = JSON.stringify({ mcpServers: { travel: { command: process.execPath, args: [fixturePath('elicit-server')] } } });
const argv = (tool: string) => ['call', `mcp__travel__${tool}`, '--cwd', ws, '--approvals', join(ws, 'approvals.json'), '--config', config];

/**
 * Run `call` in-process on a fake terminal: each time stderr ends with one of
 * `answers`' prompts (matched in order), the answer is typed.
 */
function onTerminal(tool: string, answers: Array<[RegExp, string]>): Promise<CliRun> {
  let next = 0;
  return runCliOnTerminal(argv(tool), env, ws, (stderr, type) => {
    while (next < answers.length && answers[next]![0].test(stderr)) type(answers[next++]![1]);
  });
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

// A real pseudo-terminal, through the built binary.
const main = cliBin;
describe.skipIf(!ptyAvailable)('on a real pseudo-terminal', () => {
  it('the form is asked and answered through the terminal', () => {
    const r = runInPty(
      [process.execPath, main, ...argv('book')],
      [
        ['Date (required)', '2026-05-01\r'],
        ['Seats', '\r'],
        ['Window seat', 'n\r'],
        ['Class', '1\r'],
        ['[Y/n/c] ', '\r'],
      ],
      env,
    );
    expect(r.output).toContain('Which flight?');
    expect(r.output).toContain('"date":"2026-05-01"');
    expect(r.output).toContain('"seats":2');
    expect(r.status).toBe(0);
  });
});
