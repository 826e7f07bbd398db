/**
 * Shared setup of the gateway tests: a temp workspace whose config lists
 * fixture servers, `serve` as a subprocess of the built binary, and a leak
 * check that finds every process of the test by a marker variable (servers
 * get it through their config `env`, so it survives the controller's env
 * allow-list and reparenting).
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fixturePath, repoRoot } from '../helpers/fixtures.js';
import { pidAlive, waitFor } from '../helpers/processes.js';

/** The built CLI entry point (`npx tsc -p tsconfig.json` first). */
export const cliMain = join(repoRoot, 'dist', 'src', 'cli', 'main.js');

/** Environment variable marking every process one test file starts. */
export const MARKER = 'MCPR_GATEWAY_TEST';

/** A temp workspace: user settings (`user.json`), a project `.mcp.json`, an approvals file. */
export class Workspace {
  readonly dir: string;
  readonly root: string;
  readonly userConfig: string;
  readonly approvals: string;
  readonly mark = randomBytes(6).toString('hex');

  constructor() {
    this.dir = realpathSync(mkdtempSync(join(tmpdir(), 'mcpr-gateway-')));
    this.root = this.dir;
    this.userConfig = join(this.dir, 'user.json');
    this.approvals = join(this.dir, 'approvals.json');
    this.writeUser({});
  }

  /** A basic-server fixture entry carrying this workspace's marker. */
  server(version = '1', extraEnv: Record<string, string> = {}): Record<string, unknown> {
    return { command: process.execPath, args: [fixturePath('basic-server')], env: { TOOLS_VERSION: version, [MARKER]: this.mark, ...extraEnv } };
  }

  /** Write the user-scope settings (not gated). */
  writeUser(servers: Record<string, unknown>): void {
    writeFileSync(this.userConfig, `${JSON.stringify({ mcpServers: servers }, null, 2)}\n`);
  }

  /** Write the project `.mcp.json` (gated: its servers need approval). */
  writeProject(servers: Record<string, unknown>): void {
    writeFileSync(join(this.root, '.mcp.json'), `${JSON.stringify({ mcpServers: servers }, null, 2)}\n`);
  }

  /** Global CLI options pointing at this workspace. */
  args(): string[] {
    return ['--cwd', this.root, '--user-config', this.userConfig, '--approvals', this.approvals];
  }

  /** Environment for subprocesses: HOME inside the workspace, the marker set. */
  env(): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: this.dir, [MARKER]: this.mark };
    delete env.NODE_OPTIONS;
    delete env.MCP_RECONCILER_APPROVALS;
    return env;
  }

  /** Live processes carrying this workspace's marker (the serve process, its servers, clients). */
  markedPids(): number[] {
    const needle = `${MARKER}=${this.mark}\0`;
    const out: number[] = [];
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
      let environ: string;
      try {
        environ = readFileSync(`/proc/${entry}/environ`, 'latin1');
      } catch {
        continue;
      }
      if (`\0${environ}`.includes(`\0${needle}`) && pidAlive(Number(entry))) out.push(Number(entry));
    }
    return out;
  }

  /** Marked processes running the basic-server fixture: the managed servers. */
  serverPids(): number[] {
    return this.markedPids().filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('basic-server');
      } catch {
        return false;
      }
    });
  }

  /** SIGKILL whatever is still marked, then remove the directory; returns how many were left. */
  async cleanup(): Promise<number> {
    const left = this.markedPids();
    for (const pid of left) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
    await waitFor(() => left.every((p) => !pidAlive(p)), 'leftover processes to die', 10_000);
    rmSync(this.dir, { recursive: true, force: true });
    return left.length;
  }
}

/** `serve` as a subprocess, with its stderr collected. */
export class ServeProcess {
  readonly child: ChildProcessWithoutNullStreams;
  stderr = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(ws: Workspace, args: string[]) {
    this.child = spawn(process.execPath, [cliMain, 'serve', ...args, ...ws.args()], { env: ws.env(), stdio: 'pipe' });
    this.child.stderr.setEncoding('utf8');
    this.child.stderr.on('data', (chunk: string) => (this.stderr += chunk));
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve({ code, signal })));
  }

  /** The first capture group of `re` in stderr, once it appears. */
  async fromStderr(re: RegExp, what: string): Promise<string> {
    let found: string | undefined;
    await waitFor(() => (found = re.exec(this.stderr)?.[1]) !== undefined, `${what} on serve's stderr (so far: ${this.stderr})`);
    return found!;
  }

  /** SIGTERM and wait for the exit (SIGKILL after 15 s so a hung stop cannot hang the suite). */
  async stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 15_000);
    const result = await this.exited;
    clearTimeout(timer);
    return result;
  }
}

/** The text of a tool result's first text part. */
export function textOf(result: unknown): string {
  const content = (result as { content?: Array<{ type: string; text?: string }> }).content ?? [];
  return content.find((c) => c.type === 'text')?.text ?? '';
}
