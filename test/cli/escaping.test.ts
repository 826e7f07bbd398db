/**
 * Text that comes from config files and servers must not act on the user's
 * shell or terminal (docs/library.md):
 * - suggested commands quote server names for POSIX shells, so pasting one
 *   runs exactly the suggested command (checked by running it through `sh -c`
 *   with the CLI name replaced by `echo`);
 * - ESC/BEL/CSI/C1 in tool descriptions, server stderr and server names are
 *   escaped in every text output; `--json` stays valid with the same values.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/main.js';
import { terminalSafe } from '../../src/cli/output.js';
import { fixFor, shellQuote } from '../../src/controller/messages.js';
import type { Reason } from '../../src/controller/types.js';
import { dashboardView } from '../../src/dashboard/view.js';
import { Harness, cli, processesMatching, type Workspace } from '../controller/support.js';
import { stdioFixtureConfig } from '../helpers/fixtures.js';
import { waitFor } from '../helpers/processes.js';

const h = new Harness();
const sandboxes: string[] = [];
afterAll(async () => {
  await h.cleanup();
  for (const d of sandboxes) rmSync(d, { recursive: true, force: true });
});

/** Names that inject when pasted unquoted, including ones that break naive quoting. */
const HOSTILE_NAMES = ['docs; touch PWNED; echo', "it's; touch PWNED; echo '", '$(touch PWNED)', '`touch PWNED`', 'a|touch PWNED', 'x && touch PWNED'];

/** Same as the fixture's HOSTILE_TEXT (not imported: importing the fixture would start it). */
const HOSTILE_TEXT = '\x1b[2J\x1b[31mred\x1b[0m \x1b]0;owned\x07 bell\x07 c1\u009b1m done\rfake';
/** A server name that retitles the window and rings the bell. */
const CONTROL_NAME = 'evil\x1b]0;owned\x07name';

/** Raw terminal controls that must never be printed (newline and tab are fine). */
const RAW_CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/;

/**
 * Every `mcp-reconciler …` command quoted in backticks in `text`, run through
 * `sh -c` with `mcp-reconciler` replaced by `echo`, in an empty directory.
 * Returns what each printed; fails when any of them created a file.
 */
function pasteAndRun(text: string): string[] {
  const commands = [...text.matchAll(/`(mcp-reconciler [^`\n]*(?:`[^`\n]*`[^`\n]*)*?)`(?=[\s.,;)]|$)/g)].map((m) => m[1]!);
  expect(commands.length, `a suggested command in: ${text}`).toBeGreaterThan(0);
  const dir = mkdtempSync(join(tmpdir(), 'mcpr-paste-'));
  sandboxes.push(dir);
  const printed = commands.map((c) => execFileSync('sh', ['-c', c.replace(/^mcp-reconciler /, 'echo ')], { cwd: dir, encoding: 'utf8' }));
  expect(readdirSync(dir)).toEqual([]);
  expect(existsSync(join(dir, 'PWNED'))).toBe(false);
  return printed;
}

/** A workspace with the given servers in `.mcp.json` (gated: they wait for approval and never start). */
function gatedWorkspace(names: readonly string[]): Workspace {
  const ws = h.workspace('mcp-cli-esc-');
  ws.writeMcpJson(Object.fromEntries(names.map((n) => [n, stdioFixtureConfig('basic-server', { args: [`--marker=${ws.root}`] })])));
  return ws;
}

async function run(ws: Workspace, ...argv: string[]) {
  const r = await cli([...argv, '--cwd', ws.root, '--approvals', ws.approvals], ws.env, ws.root);
  expect(processesMatching(ws.root)).toEqual([]);
  return r;
}

describe('suggested commands quote server names for POSIX shells', () => {
  it('shellQuote leaves plain names alone and single-quotes the rest', () => {
    for (const plain of ['docs', 'team.docs', 'a-b_c', 'srv:1', 'me@host', 'x=1,y+2%']) expect(shellQuote(plain)).toBe(plain);
    expect(shellQuote('a b')).toBe("'a b'");
    expect(shellQuote("it's")).toBe("'it'\\''s'");
    expect(shellQuote('')).toBe("''");
  });

  it('fixFor: every suggested command, pasted into sh, echoes the exact name and runs nothing else', () => {
    const reasons: Reason[] = ['pending_approval', 'rejected', 'reconnecting', 'failed', 'needs_auth'];
    for (const name of HOSTILE_NAMES) {
      for (const reason of reasons) {
        for (const out of pasteAndRun(fixFor(reason, name))) expect(out).toMatch(new RegExp(`^(approve|reconnect|auth) ${escapeRe(name)}\\n$`));
      }
    }
  });

  it('`why` prints a fix that is safe to paste', async () => {
    const ws = gatedWorkspace(HOSTILE_NAMES);
    for (const name of HOSTILE_NAMES) {
      const r = await run(ws, 'why', name);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain('fix: approve it with `mcp-reconciler approve ');
      expect(pasteAndRun(r.stdout)).toEqual([`approve ${name}\n`]);
    }
  });

  it('`status` lists pending names shell-quoted in its hint', async () => {
    const ws = gatedWorkspace(['docs; touch PWNED; echo']);
    const r = await run(ws, 'status');
    expect(r.stderr).toContain("hint: 'docs; touch PWNED; echo' waits for approval: mcp-reconciler approve 'docs; touch PWNED; echo'");
  });

  it("the dashboard's fix text is safe to paste (approve and reconnect)", async () => {
    const ws = gatedWorkspace(HOSTILE_NAMES);
    const c = h.controller(ws, { backoff: { initialMs: 60_000, maxMs: 60_000, attempts: 10 } });
    // A runtime server that cannot start: its fix suggests `reconnect NAME`.
    await c.addRuntimeServer('dead; touch PWNED; echo', { command: join(ws.root, 'no-such-command'), args: [`--marker=${ws.root}`] });
    await c.start();
    await waitFor(() => ['reconnecting', 'failed'].includes(c.unavailableReason('dead; touch PWNED; echo') ?? ''), 'the dead server to be unavailable');
    const servers = dashboardView(c).servers;
    for (const name of HOSTILE_NAMES) {
      const s = servers.find((x) => x.name === name)!;
      expect(pasteAndRun(s.fix!)).toEqual([`approve ${name}\n`]);
    }
    const dead = servers.find((x) => x.name === 'dead; touch PWNED; echo')!;
    expect(pasteAndRun(dead.fix!)).toEqual(['reconnect dead; touch PWNED; echo\n']);
  });
});

describe('terminal control characters are escaped in text output', () => {
  /** User-scope servers (not gated): `shouty` has a hostile tool description, CONTROL_NAME a hostile name. */
  function hostileWorkspace(): Workspace {
    const ws = h.workspace('mcp-cli-ctl-');
    const hostile = (env?: Record<string, string>) => stdioFixtureConfig('hostile-server', { args: [`--marker=${ws.root}`], ...(env ? { env } : {}) });
    ws.writeUserSettings({ mcpServers: { shouty: hostile(), [CONTROL_NAME]: hostile() } });
    return ws;
  }

  function expectNoRawControl(text: string): void {
    expect(text).not.toMatch(RAW_CONTROL);
    expect(text).not.toContain('\x1b');
    expect(text).not.toContain('\x07');
  }

  it('terminalSafe escapes C0/C1/DEL/bidi controls, keeps newline and tab unless one-line, and is idempotent', () => {
    expect(terminalSafe('a\x1b[31mb\x07c\u009bd\x7fe\u202ef\r\n\tg')).toBe('a\\u001b[31mb\\u0007c\\u009bd\\u007fe\\u202ef\\u000d\n\tg');
    expect(terminalSafe('a\nb\tc', true)).toBe('a\\u000ab\\u0009c');
    expect(terminalSafe(terminalSafe(HOSTILE_TEXT))).toBe(terminalSafe(HOSTILE_TEXT));
  });

  it('`tools` shows a hostile description escaped; `tools --json` keeps the exact value', async () => {
    const ws = hostileWorkspace();
    const r = await run(ws, 'tools');
    expect(r.code).toBe(0);
    expectNoRawControl(r.stdout);
    expectNoRawControl(r.stderr);
    expect(r.stdout).toMatch(/^mcp__shouty__shout\s+shouty\s+\d+\s+Shouts\. \\u001b\[2J\\u001b\[31mred/m);
    expect(r.stdout).toContain('evil\\u001b]0;owned\\u0007name');

    const j = await run(ws, 'tools', '--json');
    expectNoRawControl(j.stdout);
    const tools = (JSON.parse(j.stdout) as { tools: Array<{ name: string; server: string; description?: string }> }).tools;
    expect(tools.find((t) => t.name === 'mcp__shouty__shout')?.description).toBe(`Shouts. ${HOSTILE_TEXT}`);
    expect(tools.some((t) => t.server === CONTROL_NAME)).toBe(true);
  });

  it('`status` and `config` escape a hostile server name', async () => {
    const ws = hostileWorkspace();
    for (const argv of [['status'], ['config']]) {
      const r = await run(ws, ...argv);
      expect(r.code).toBe(0);
      expectNoRawControl(r.stdout);
      expectNoRawControl(r.stderr);
      expect(r.stdout).toContain('evil\\u001b]0;owned\\u0007name');
    }
  });

  it("`why` escapes the server's stderr in its last error and the name in its answer", async () => {
    const ws = h.workspace('mcp-cli-ctl-');
    ws.writeUserSettings({
      mcpServers: { crashy: stdioFixtureConfig('hostile-server', { args: [`--marker=${ws.root}`], env: { HOSTILE_CRASH: '1' } }) },
    });
    // Crash-looping, so `why` answers after the readiness timeout (SPEC §3.3), with the stderr in the last error.
    const crashy = await run(ws, 'why', 'crashy');
    expect(crashy.code).toBe(0);
    expectNoRawControl(crashy.stdout);
    expect(crashy.stdout).toContain('hostile-server: \\u001b[2J\\u001b[31mred');

    // A separate workspace: without the crash loop `why` answers at once.
    const named = await run(gatedWorkspace([CONTROL_NAME]), 'why', CONTROL_NAME);
    expectNoRawControl(named.stdout);
    expect(named.stdout).toContain('MCP server "evil\\u001b]0;owned\\u0007name" is waiting for your approval');
  }, 60_000);

  it('`watch` on a terminal escapes names and descriptions; only its own screen clear goes out raw', async () => {
    const ws = hostileWorkspace();
    let out = '';
    const stop = new AbortController();
    const done = runCli(['watch', '--cwd', ws.root, '--approvals', ws.approvals], {
      stdout: { write: (s: string) => (out += s) },
      stderr: { write: (s: string) => (out += s) },
      env: ws.env,
      cwd: ws.root,
      isTTY: true,
      signal: stop.signal,
    });
    try {
      const screen = () => out.slice(out.lastIndexOf('\x1b[2J'));
      await waitFor(() => /^evil\\u001b\]0;owned\\u0007name\s+user\s+connected/m.test(screen()), `the hostile name connected (output: ${out.slice(-600)})`, 30_000);
    } finally {
      stop.abort();
    }
    expect(await done).toBe(0);
    expect(processesMatching(ws.root)).toEqual([]);
    expect(out).toContain('\x1b[H\x1b[2J');
    expectNoRawControl(out.replaceAll('\x1b[H\x1b[2J', ''));
  });
});

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
