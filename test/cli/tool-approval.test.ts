/**
 * `call` of a tool that `permissions.ask` holds: asked on the terminal
 * (`y` once, `a` always, else no); without a terminal it fails with
 * tool_denied saying why.
 */
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { defaultWorkspaceStatePath } from '../../src/config/workspace-state.js';
import { runCliCaptured, runCliOnTerminal, type CliRun } from '../helpers/cli.js';
import { fixturePath } from '../helpers/fixtures.js';

const ws = realpathSync(mkdtempSync(join(tmpdir(), 'cli-approval-')));
afterAll(() => rmSync(ws, { recursive: true, force: true }));
const env = { ...process.env, HOME: ws, XDG_CONFIG_HOME: join(ws, '.config'), XDG_STATE_HOME: join(ws, '.state'), XDG_CACHE_HOME: join(ws, '.cache') };
const settings = join(ws, '.config', 'mcp-reconciler', 'settings.json');
mkdirSync(join(ws, '.config', 'mcp-reconciler'), { recursive: true });
writeFileSync(settings, JSON.stringify({ mcpServers: { a: { command: process.execPath, args: [fixturePath('basic-server')] } }, permissions: { ask: ['mcp__a__echo'] } }));
const argv = (text: string) => ['call', 'mcp__a__echo', JSON.stringify({ text }), '--cwd', ws, '--approvals', join(ws, 'approvals.json')];

/** Run `call` in-process on a fake terminal, typing `answer` to the approval question. */
function onTerminal(text: string, answer: string): Promise<CliRun> {
  let typed = false;
  return runCliOnTerminal(argv(text), env, ws, (stderr, type) => {
    if (!typed && /\[N\]o: $/.test(stderr)) {
      typed = true;
      type(answer);
    }
  });
}

describe('call and permissions.ask', () => {
  it('asks on the terminal: n refuses, a runs it and remembers, then no question', async () => {
    const no = await onTerminal('x', 'n');
    expect(no.stderr).toContain(`mcp__a__echo needs your approval (permissions.ask in ${settings}); arguments {"text":"x"}.\nRun it? [y]es once, [a]lways in this workspace, [N]o: `);
    expect(no.stderr).toContain(`error: Tool mcp__a__echo was not approved (permissions.ask in ${settings})`);
    expect(no.code).toBe(1);
    const always = await onTerminal('yes', 'a');
    expect([always.code, always.stdout]).toEqual([0, 'yes\n']);
    expect(JSON.parse(readFileSync(defaultWorkspaceStatePath(ws, env), 'utf8')).alwaysAllow).toEqual(['mcp__a__echo']);
    const quiet = await runCliCaptured(argv('quiet'), env, ws);
    expect([quiet.code, quiet.stdout]).toEqual([0, 'quiet\n']);
  });
});
