/**
 * VS Code `${input:id}` in the CLI: asked once on a terminal (a `password`
 * input without echo), remembered in a 0600 store per workspace, never
 * printed; without a terminal, the env fallback and an actionable issue.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/main.js';
import { runCliCaptured } from '../helpers/cli.js';
import { ptyAvailable, runInPty } from '../helpers/pty.js';
import { cliBin } from '../helpers/fixtures.js';

const SECRET = 's3cret-4b9e1d';
let home: string;
let ws: string;

interface Row {
  name: string;
  config: Record<string, unknown>;
}
interface Doc {
  servers: Row[];
  issues: { server?: string; field?: string; message: string; code?: string }[];
}

/** stdin of a terminal: `setRawMode` is recorded; answers are typed when a question appears. */
class FakeTty extends PassThrough {
  isTTY = true;
  isRaw = false;
  modes: boolean[] = [];
  setRawMode(mode: boolean): this {
    this.isRaw = mode;
    this.modes.push(mode);
    return this;
  }
}

const env = (): NodeJS.ProcessEnv => ({ HOME: home, XDG_CONFIG_HOME: join(home, '.config'), PATH: process.env.PATH });

beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), 'mcpr-inputs-home-'));
  ws = realpathSync(mkdtempSync(join(tmpdir(), 'mcpr-inputs-ws-')));
  mkdirSync(join(ws, '.vscode'));
  writeFileSync(
    join(ws, '.vscode', 'mcp.json'),
    JSON.stringify({
      inputs: [
        { type: 'pickString', id: 'region', description: 'Region', options: ['eu', 'us'], default: 'eu' },
        { type: 'promptString', id: 'token', description: 'API token', password: true },
      ],
      servers: { svc: { command: 'node', args: ['--region', '${input:region}', '--auth', '${input:token}'], env: { TOKEN: '${input:token}' } } },
    }),
  );
});
afterAll(() => {
  rmSync(home, { recursive: true, force: true });
  rmSync(ws, { recursive: true, force: true });
});

async function runOnTty(argv: string[], answers: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string; stdin: FakeTty }> {
  const stdin = new FakeTty();
  let stdout = '';
  let stderr = '';
  const answered = new Set<string>();
  const code = await runCli(argv, {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: {
      write: (s: string) => {
        stderr += s;
        for (const [prompt, answer] of Object.entries(answers)) {
          if (!answered.has(prompt) && stderr.endsWith(prompt)) {
            answered.add(prompt);
            stdin.write(answer);
          }
        }
      },
    },
    env: env(),
    cwd: ws,
    stdin,
    isTTY: true,
  });
  stdin.destroy();
  return { code, stdout, stderr, stdin };
}

describe('${input:…} answered on a terminal and remembered', () => {
  const store = () => join(home, 'answers', 'inputs.json');

  it('asks each input once, the password without echo, and never prints the answer', async () => {
    const r = await runOnTty(['config', '--json', '--cwd', ws, '--preset', 'vscode', '--inputs', store()], {
      'region [eu]: ': '2\n',
      'token (typing is hidden): ': `${SECRET}\r`,
    });
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as Doc;
    expect(doc.issues).toEqual([]);
    const svc = doc.servers.find((s) => s.name === 'svc')!;
    expect(svc.config.args).toEqual(['--region', 'us', '--auth', '<redacted>']);
    expect(svc.config.env).toEqual({ TOKEN: '<redacted>' });
    // The question named the input and its file; the answer appears nowhere.
    expect(r.stderr).toContain('needs input "token" (API token)');
    expect(r.stderr).toContain('1) eu');
    expect(r.stdout + r.stderr).not.toContain(SECRET);
    // Raw mode (no echo) for the password only, and the terminal is put back.
    expect(r.stdin.modes).toEqual([true, false]);
    expect(statSync(store()).mode & 0o777).toBe(0o600);
    const saved = JSON.parse(readFileSync(store(), 'utf8')) as { workspaces: Record<string, Record<string, string>> };
    expect(saved.workspaces[ws]).toEqual({ 'input:region': 'us', 'input:token': SECRET });
  });

  it('a later run, with or without a terminal, uses the remembered answers and asks nothing', async () => {
    const tty = await runOnTty(['config', '--json', '--cwd', ws, '--preset', 'vscode', '--inputs', store()], {});
    expect(tty.stderr).toBe('');
    expect(tty.stdin.modes).toEqual([]);
    const plain = await runCliCaptured(['config', '--json', '--cwd', ws, '--preset', 'vscode'], { ...env(), MCP_RECONCILER_INPUTS: store() }, ws);
    expect(plain.stderr).toBe('');
    const doc = JSON.parse(plain.stdout) as Doc;
    expect(doc.servers.find((s) => s.name === 'svc')!.config.args).toEqual(['--region', 'us', '--auth', '<redacted>']);
    expect(plain.stdout).not.toContain(SECRET);
  });

  it('Ctrl-C at a question skips the server with the issue and stores nothing', async () => {
    const other = join(home, 'cancel', 'inputs.json');
    const r = await runOnTty(['config', '--json', '--cwd', ws, '--preset', 'vscode', '--inputs', other], { 'region [eu]: ': '\x03' });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('cancelled');
    expect((JSON.parse(r.stdout) as Doc).servers).toEqual([]);
    expect(existsSync(other)).toBe(false);
  });
});

describe.runIf(process.platform !== 'win32')('a remembered-answers file that group or others can write', () => {
  it.each([
    ['0666', 0o666],
    ['0620', 0o620],
  ])('mode %s: its answers are not used, and a warning names the file and the fix', async (_octal, mode) => {
    const file = join(home, `untrusted-${_octal}`, 'inputs.json');
    mkdirSync(join(file, '..'), { recursive: true });
    writeFileSync(file, JSON.stringify({ version: 1, workspaces: { [ws]: { 'input:region': 'us', 'input:token': SECRET } } }), { mode: 0o600 });
    const trusted = await runCliCaptured(['config', '--json', '--cwd', ws, '--preset', 'vscode', '--inputs', file], env(), ws);
    expect((JSON.parse(trusted.stdout) as Doc).servers.map((r) => r.name)).toEqual(['svc']);

    chmodSync(file, mode);
    const r = await runCliCaptured(['config', '--json', '--cwd', ws, '--preset', 'vscode', '--inputs', file], env(), ws);
    // Anyone could have chosen those answers (and so what the server runs): the server is skipped.
    expect((JSON.parse(r.stdout) as Doc).servers).toEqual([]);
    expect(r.stderr).toContain(file);
    expect(r.stderr).toMatch(/writable by (group|others)/);
    expect(r.stderr).toContain(`chmod 600 ${file}`);
  });
});

describe('without a terminal', () => {
  it('nothing is asked: MCP_RECONCILER_INPUT_<ID> answers, else the server is skipped with an issue saying what to do', async () => {
    const empty = join(home, 'none', 'inputs.json');
    const skipped = await runCliCaptured(['config', '--json', '--cwd', ws, '--preset', 'vscode', '--inputs', empty], env(), ws);
    const doc = JSON.parse(skipped.stdout) as Doc;
    expect(doc.servers).toEqual([]);
    const issue = doc.issues.find((i) => i.server === 'svc' && i.field === 'args[3]')!;
    expect(issue.code).toBe('config_unset_variable');
    expect(issue.message).toContain('set MCP_RECONCILER_INPUT_TOKEN');
    expect(issue.message).toContain('`mcp-reconciler config` in a terminal');
    const viaEnv = await runCliCaptured(['config', '--json', '--cwd', ws, '--preset', 'vscode', '--inputs', empty], { ...env(), MCP_RECONCILER_INPUT_TOKEN: SECRET, MCP_RECONCILER_INPUT_REGION: 'eu' }, ws);
    expect(JSON.parse(viaEnv.stdout).servers.map((s: Row) => s.name)).toEqual(['svc']);
    expect(viaEnv.stdout).not.toContain(SECRET);
    expect(existsSync(empty)).toBe(false);
  });
});

// A real pseudo-terminal: the password is not echoed by the terminal either.
const main = cliBin;
describe.skipIf(!ptyAvailable || !existsSync(main))('on a real pseudo-terminal', () => {
  it('the typed password never appears in what the terminal shows', () => {
    const store = join(home, 'pty', 'inputs.json');
    const r = runInPty(
      [process.execPath, main, 'config', '--cwd', ws, '--preset', 'vscode', '--inputs', store],
      [
        ['region [eu]: ', 'eu\r'],
        ['token (typing is hidden): ', `${SECRET}-pty\r`],
      ],
      env(),
    );
    expect(r.status).toBe(0);
    expect(r.output).toContain('typing is hidden');
    expect(r.output).toContain('svc');
    expect(r.output).not.toContain(SECRET);
    const saved = JSON.parse(readFileSync(store, 'utf8')) as { workspaces: Record<string, Record<string, string>> };
    expect(saved.workspaces[ws]?.['input:token']).toBe(`${SECRET}-pty`);
  });
});
