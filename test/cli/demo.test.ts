/**
 * The bundled demo workspace (`npm start`, `npm run demo:status`): real
 * published servers (memory, filesystem, everything) next to a crashing
 * fixture, a server whose command does not exist, a checked-in server that
 * waits for approval and one that workspace settings exclude. Run through the
 * CLI in-process with a private HOME and approvals file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../helpers/fixtures.js';
import { runCliCaptured, serverVerdicts } from '../helpers/cli.js';
import { pidAlive, waitFor } from '../helpers/processes.js';

const demo = join(repoRoot, 'examples', 'demo-workspace');
const home = mkdtempSync(join(tmpdir(), 'mcpr-demo-home-'));
const env = { ...process.env, HOME: home, XDG_CONFIG_HOME: join(home, '.config'), MCP_RECONCILER_APPROVALS: '' };
const base = ['--cwd', demo, '--user-config', join(demo, 'user-settings.json'), '--approvals', join(home, 'approvals.json')];
const run = (...argv: string[]) => runCliCaptured([...argv, ...base], env, repoRoot);

afterAll(() => rmSync(home, { recursive: true, force: true }));

interface Row {
  name: string;
  state: string;
  reason?: string;
  tools: string[];
  lastError?: string;
  pid?: number;
}

describe('the demo workspace', () => {
  it('config: every server with its verdict, no config issue', async () => {
    const r = await run('config', '--json');
    expect(r.code).toBe(0);
    expect((JSON.parse(r.stdout) as { issues: unknown[] }).issues).toEqual([]);
    expect(serverVerdicts(r.stdout)).toEqual(['broken user admitted', 'everything project pending_approval', 'files user admitted',
      'flaky user admitted', 'memory user admitted', 'scratch user excluded']);
  });

  it('status: the published servers connect with their real tools, the broken one fails with why, and nothing is left running', async () => {
    const r = await run('status', '--json');
    const rows = Object.fromEntries((JSON.parse(r.stdout) as { servers: Row[] }).servers.map((s) => [s.name, s]));
    expect(rows.memory).toMatchObject({ state: 'connected' });
    expect(rows.memory!.tools).toContain('mcp__memory__create_entities');
    expect(rows.files).toMatchObject({ state: 'connected' });
    expect(rows.files!.tools).toContain('mcp__files__read_text_file');
    expect(rows.flaky!.tools).toEqual(expect.arrayContaining(['mcp__flaky__crash', 'mcp__flaky__ping']));
    expect(rows.broken).toMatchObject({ state: 'failed', reason: 'failed' });
    expect(rows.broken!.lastError).toMatch(/command not found: "mcp-server-that-is-not-installed"/);
    expect(rows.everything).toMatchObject({ state: 'pending_approval', tools: [] });
    expect(rows.scratch).toMatchObject({ state: 'excluded', tools: [] });
    // status disposes before it returns: every server it started is gone.
    const pids = Object.values(rows).flatMap((s) => (s.pid ? [s.pid] : []));
    expect(pids.length).toBeGreaterThanOrEqual(3);
    await waitFor(() => pids.every((p) => !pidAlive(p)), 'the demo servers to exit', 10_000);
  });

  it('why broken: the reason and the fix', async () => {
    const r = await run('why', 'broken');
    expect(r.stdout).toMatch(/failed/);
    expect(r.stdout).toMatch(/command not found/);
  });
});
