/**
 * The commands that run a controller — status, tools, call, why, approve,
 * reject — in-process through `runCli`, and once as the built binary. Every
 * server's command line carries the workspace root, so "nothing left running"
 * is checked by looking for it in /proc after each command.
 */
import { execFile } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import type { ServerStatus } from '../../src/controller/types.js';
import type { RegisteredTool } from '../../src/registry/registry.js';
import { Harness, cli, processesMatching, type Workspace } from '../controller/support.js';
import { stdioFixtureConfig, cliBin } from '../helpers/fixtures.js';
import { pidAlive } from '../helpers/processes.js';

const h = new Harness();
afterAll(() => h.cleanup());

type UserServer = 'notes' | 'tasks' | 'liar';
const FIXTURE: Record<UserServer, string> = { notes: 'basic-server', tasks: 'task-required-server', liar: 'bad-output-server' };

/**
 * A workspace with a gated `docs` in .mcp.json and user-scope servers picked
 * from `notes` (basic), `tasks` (a taskSupport: required tool) and `liar`
 * (breaks its outputSchema). Few servers per test keep each CLI run short.
 */
function setup(...user: UserServer[]): Workspace {
  const ws = h.workspace('mcp-cli-run-');
  const marked = (fixture: string) => stdioFixtureConfig(fixture, { args: [`--marker=${ws.root}`] });
  ws.writeUserSettings({ mcpServers: Object.fromEntries(user.map((name) => [name, marked(FIXTURE[name])])) });
  ws.writeMcpJson({ docs: marked('basic-server') });
  return ws;
}

async function run(ws: Workspace, ...argv: string[]) {
  const r = await cli([...argv, '--cwd', ws.root, '--approvals', ws.approvals], ws.env, ws.root);
  // A one-shot command leaves nothing running.
  expect(processesMatching(ws.root)).toEqual([]);
  return r;
}

/** {@link run}, which must exit 0 (its stderr is the failure message when it does not). */
async function succeeds(ws: Workspace, ...argv: string[]) {
  const r = await run(ws, ...argv);
  expect(r.code, r.stderr).toBe(0);
  return r;
}

function noStack(text: string): void {
  expect(text).not.toMatch(/\n\s+at /);
}

describe('status', () => {
  it('--json lists every server with state, tools, skipped tools and reason', async () => {
    const ws = setup('notes', 'tasks');
    const r = await run(ws, 'status', '--json');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as { servers: ServerStatus[]; issues: unknown[] };
    expect(doc.issues).toEqual([]);
    const by = Object.fromEntries(doc.servers.map((s) => [s.name, s]));
    expect(Object.keys(by)).toEqual(['docs', 'notes', 'tasks']);
    expect(by.notes).toMatchObject({ state: 'connected', status: 'connected', scope: 'user', generation: 1 });
    expect(by.notes!.tools).toContain('mcp__notes__echo');
    expect(by.docs).toMatchObject({ state: 'pending_approval', reason: 'pending_approval', scope: 'project', tools: [] });
    expect(by.tasks!.skippedTools).toEqual([{ rawName: 'long_job', reason: expect.stringContaining('taskSupport') }]);
  });

  it('prints a table and a hint for servers waiting for approval', async () => {
    const ws = setup('notes');
    const r = await succeeds(ws, 'status');
    expect(r.stdout).toMatch(/^NAME\s+SCOPE\s+STATE\s+TOOLS\s+TOKENS\s+REASON/);
    expect(r.stdout).toMatch(/notes\s+user\s+connected\s+5\s+[1-9]\d*\s/);
    expect(r.stdout).toMatch(/^total: 5 tools, [1-9]\d* tokens \(o200k_base\)$/m);
    expect(r.stdout).toMatch(/docs\s+project\s+pending_approval\s+0\s+0\s+pending_approval\s+\.mcp\.json/);
    expect(r.stderr).toContain('hint: docs waits for approval: mcp-reconciler approve docs');
  });
});

describe('tools', () => {
  it('--json lists registered tools and the skipped ones', async () => {
    const ws = setup('notes', 'tasks');
    const r = await succeeds(ws, 'tools', '--json');
    const doc = JSON.parse(r.stdout) as { tools: RegisteredTool[]; skipped: Array<{ server: string; rawName: string; reason: string }> };
    const names = doc.tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['mcp__notes__echo', 'mcp__tasks__quick']));
    expect(names.some((n) => n.startsWith('mcp__docs__'))).toBe(false);
    expect(names).not.toContain('mcp__tasks__long_job');
    expect(doc.skipped).toEqual([{ server: 'tasks', rawName: 'long_job', reason: expect.stringContaining('taskSupport') }]);
    expect(doc.tools.find((t) => t.name === 'mcp__notes__echo')).toMatchObject({ server: 'notes', rawName: 'echo' });
  });

  it('prints a table and names the skipped tools on stderr', async () => {
    const ws = setup('notes', 'tasks');
    const r = await succeeds(ws, 'tools');
    expect(r.stdout).toMatch(/mcp__notes__echo\s+notes\s+[1-9]\d*\s+Echoes its text argument\./);
    expect(r.stderr).toContain('not registered: tasks/long_job');
  });
});

describe('call', () => {
  it('calls a tool with JSON args and prints its text; --json prints the result', async () => {
    const ws = setup('notes');
    const r = await run(ws, 'call', 'mcp__notes__echo', '{"text":"from the cli"}');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('from the cli\n');

    const json = await succeeds(ws, 'call', 'mcp__notes__add', '{"a":4,"b":5}', '--json');
    expect(JSON.parse(json.stdout)).toMatchObject({ structuredContent: { sum: 9 } });

    // The server it talked to is gone once the command returns.
    const pid = await succeeds(ws, 'call', 'mcp__notes__pid');
    const serverPid = Number(pid.stdout.trim());
    h.remember(serverPid);
    expect(serverPid).toBeGreaterThan(0);
    expect(pidAlive(serverPid)).toBe(false);
  });

  it('exits 1 with the violation when a result breaks its outputSchema', async () => {
    const ws = setup('liar');
    const r = await run(ws, 'call', 'mcp__liar__report', '{"break":"extra"}');
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('mcp__liar__report returned structuredContent that breaks its outputSchema');
  });

  it('explains an unknown or gated tool (exit 1) and bad JSON (exit 2), without a stack trace', async () => {
    const ws = setup();
    const gated = await run(ws, 'call', 'mcp__docs__echo', '{"text":"x"}');
    expect(gated.code).toBe(1);
    expect(gated.stderr).toMatch(/^error: Tool mcp__docs__echo is unavailable: MCP server "docs" is waiting for your approval/);
    expect(gated.stderr).toContain('approve docs');
    noStack(gated.stderr);

    const unknown = await run(ws, 'call', 'mcp__nobody__echo');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/not provided by any configured MCP server/);
    expect(unknown.stderr).toContain('hint: list the registered tools with `mcp-reconciler tools`');
    noStack(unknown.stderr);

    const bad = await run(ws, 'call', 'mcp__notes__echo', '{text: nope}');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^error: JSON_ARGS is not valid JSON/);
    noStack(bad.stderr);

    const missing = await run(ws, 'call');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('error: call needs TOOL, but no arguments were given');
  });
});

describe('--timeout', () => {
  /** `slow` has a slow tool; `sloth` speaks MCP only after a minute, so it cannot settle within a short --timeout. */
  function slowWorkspace(withSloth: boolean): Workspace {
    const ws = h.workspace('mcp-cli-run-');
    const marker = `--marker=${ws.root}`;
    const servers: Record<string, unknown> = { slow: stdioFixtureConfig('slow-tool-server', { args: [marker] }) };
    if (withSloth) servers.sloth = stdioFixtureConfig('slow-server', { args: [marker], env: { START_DELAY_MS: '60000' } });
    ws.writeUserSettings({ mcpServers: servers });
    return ws;
  }

  it('call --timeout gives up on a slow tool with an error naming the tool and the limit (exit 1)', async () => {
    const ws = slowWorkspace(false);
    const r = await run(ws, 'call', 'mcp__slow__sleep', '{"ms":60000}', '--timeout', '1');
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^error: Tool mcp__slow__sleep did not answer within 1 ms; the call was cancelled\nhint: raise the limit with --timeout MS/);
    noStack(r.stderr);

    const quick = await succeeds(ws, 'call', 'mcp__slow__sleep', '{"ms":1}', '--timeout', '30000');
    expect(quick.stdout).toBe('slept\n');
  });

  it('status --timeout bounds the wait for servers to settle: a slow one is still connecting', async () => {
    const ws = slowWorkspace(true);
    const r = await succeeds(ws, 'status', '--json', '--timeout', '1');
    const by = Object.fromEntries((JSON.parse(r.stdout) as { servers: ServerStatus[] }).servers.map((s) => [s.name, s]));
    expect(by.sloth).toMatchObject({ state: 'connecting' });
  });

  it.each([['0'], ['-1'], ['1.5'], ['1e3'], ['abc'], ['86400001'], ['']])('rejects --timeout %j with exit 2 before starting anything', async (value) => {
    const ws = slowWorkspace(true);
    for (const argv of [['call', 'mcp__slow__sleep', `--timeout=${value}`], ['status', `--timeout=${value}`]]) {
      const r = await run(ws, ...argv);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`error: --timeout must be a whole number of milliseconds from 1 to 86400000 (24 h), not ${JSON.stringify(value)}`);
      expect(r.stderr).toContain('hint: e.g. --timeout 30000');
    }
  });
});

describe('why', () => {
  it('explains a connected server, a gated one, and a tool; an unknown name exits 1 readably', async () => {
    const ws = setup('notes', 'tasks');
    const ok = await succeeds(ws, 'why', 'notes');
    expect(ok.stdout).toBe('MCP server "notes" is connected with 5 tool(s).\n');

    const gated = await succeeds(ws, 'why', 'docs', '--json');
    expect(JSON.parse(gated.stdout)).toEqual({
      kind: 'server',
      name: 'docs',
      state: 'pending_approval',
      reason: 'pending_approval',
      message: 'MCP server "docs" is waiting for your approval.',
      fix: expect.stringContaining('mcp-reconciler approve docs'),
    });

    const skipped = await succeeds(ws, 'why', 'mcp__tasks__long_job');
    expect(skipped.stdout).toMatch(/not registered: .*taskSupport/);

    const unknown = await run(ws, 'why', 'nosuch');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('error: no MCP server or tool named "nosuch"');
    expect(unknown.stderr).toMatch(/hint: configured servers: docs, notes, tasks/);
    noStack(unknown.stderr);
  });

  it('finds the server of a tool whose server name was sanitised', async () => {
    const ws = h.workspace('mcp-cli-run-');
    ws.writeMcpJson({ 'team.docs': stdioFixtureConfig('basic-server', { args: [`--marker=${ws.root}`] }) });
    const r = await succeeds(ws, 'why', 'mcp__team_docs__echo', '--json');
    expect(JSON.parse(r.stdout)).toMatchObject({ kind: 'tool', name: 'mcp__team_docs__echo', reason: 'pending_approval' });
    expect(JSON.parse(r.stdout).message).toContain('MCP server "team.docs" is waiting for your approval');
  });
});

describe('approve / reject', () => {
  it('reject then approve change what the next run does; --json reports the decision', async () => {
    const ws = setup();
    const rejected = await succeeds(ws, 'reject', 'docs');
    expect(rejected.stdout).toMatch(/^rejected "docs" for its current config/);
    const status1 = JSON.parse((await run(ws, 'status', '--json')).stdout) as { servers: ServerStatus[] };
    expect(status1.servers.find((s) => s.name === 'docs')).toMatchObject({ state: 'rejected', reason: 'rejected' });
    const why = await run(ws, 'why', 'docs');
    expect(why.stdout).toMatch(/was rejected\.\nfix: .*approve docs.*edit the config/);

    const approved = await succeeds(ws, 'approve', 'docs', '--json');
    expect(JSON.parse(approved.stdout)).toMatchObject({ server: 'docs', decision: 'approved', root: ws.root });
    const status2 = JSON.parse((await run(ws, 'status', '--json')).stdout) as { servers: ServerStatus[] };
    const docs = status2.servers.find((s) => s.name === 'docs');
    expect(docs).toMatchObject({ state: 'connected', status: 'connected' });
    expect(docs!.reason).toBeUndefined();
    const call = await run(ws, 'call', 'mcp__docs__echo', '{"text":"approved"}');
    expect(call.stdout).toBe('approved\n');
  });

  it('an unknown server exits 1, a non-gated one or bad usage exits 2, each with a readable message', async () => {
    const ws = setup('notes');
    const unknown = await run(ws, 'approve', 'nosuch');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('error: no MCP server named "nosuch" is configured');
    expect(unknown.stderr).toContain('hint: configured servers: ');
    noStack(unknown.stderr);

    const rejectUnknown = await run(ws, 'reject', 'nosuch');
    expect(rejectUnknown.code).toBe(1);
    noStack(rejectUnknown.stderr);

    const user = await run(ws, 'approve', 'notes');
    expect(user.code).toBe(2);
    expect(user.stderr).toContain('"notes" comes from the user scope, which needs no approval');

    const none = await run(ws, 'approve');
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('error: approve needs SERVER, but no arguments were given');

    // A session approval needs a running watch to live in (see reconnect.test.ts for one that runs).
    const session = await run(ws, 'approve', 'docs', '--session');
    expect(session.code).toBe(1);
    expect(session.stderr).toContain('error: no `mcp-reconciler watch` is running');
    expect(session.stderr).toContain('without --session to store the approval');
  });
});

describe('the built binary', () => {
  const bin = cliBin;

  function exec(ws: Workspace, ...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    return new Promise((done) => {
      execFile(process.execPath, [bin, ...argv, '--cwd', ws.root, '--approvals', ws.approvals], { env: ws.env, timeout: 60_000 }, (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        done({ code, stdout, stderr });
      });
    });
  }

  it('runs status --json, call, and fails readably on an unknown server', async () => {
    const ws = setup('notes');
    const status = await exec(ws, 'status', '--json');
    expect(status.stderr).toBe('');
    expect(status.code).toBe(0);
    const doc = JSON.parse(status.stdout) as { servers: ServerStatus[] };
    expect(doc.servers.find((s) => s.name === 'notes')).toMatchObject({ state: 'connected' });
    expect(processesMatching(ws.root)).toEqual([]);

    const call = await exec(ws, 'call', 'mcp__notes__echo', '{"text":"binary"}');
    expect(call.code).toBe(0);
    expect(call.stdout).toBe('binary\n');
    expect(processesMatching(ws.root)).toEqual([]);

    const unknown = await exec(ws, 'why', 'nosuch');
    expect(unknown.code).toBe(1);
    expect(unknown.stdout).toBe('');
    expect(unknown.stderr).toMatch(/^error: no MCP server or tool named "nosuch"\nhint: /);
    noStack(unknown.stderr);
    expect(processesMatching(ws.root)).toEqual([]);
  });
});
