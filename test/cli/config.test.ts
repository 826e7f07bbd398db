import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalRoot, FileApprovalStore } from '../../src/approvals/store.js';
import { runCliCaptured, serverVerdicts, type CliRun as Run } from '../helpers/cli.js';
import { cliBin } from '../helpers/fixtures.js';

const repo = resolve(import.meta.dirname, '../..');
const demo = join(repo, 'test/fixtures/watch-workspace');
const demoUser = join(demo, 'user-settings.json');

let home: string;
let env: NodeJS.ProcessEnv;

function cli(argv: string[], cwd = repo): Promise<Run> {
  return runCliCaptured(argv, env, cwd);
}

interface ServerRow {
  name: string;
  scope: string;
  source: string;
  type: string;
  verdict: string;
  approval: string | null;
  hash: string;
  config: Record<string, unknown>;
}

const demoArgs = (...more: string[]) => ['config', '--json', '--cwd', demo, '--user-config', demoUser, ...more];

beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), 'mcpr-cli-home-'));
  // Never read the real user's config or approvals.
  env = { HOME: home, XDG_CONFIG_HOME: join(home, '.config'), PATH: process.env.PATH };
});
afterAll(async () => {
  await rm(home, { recursive: true, force: true });
});

describe('config --json on the demo workspace', () => {
  it('lists every demo server with scope, source, type and verdict', async () => {
    const r = await cli(demoArgs());
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as { root: string; preset: string; sources: unknown[]; gating: Record<string, unknown>; servers: ServerRow[]; issues: unknown[] };
    expect(doc.root).toBe(demo);
    expect(doc.preset).toBe('default');
    expect(doc.issues).toEqual([]);
    const rows = doc.servers.map((s) => [s.name, s.scope, s.source, s.type, s.verdict, s.approval]);
    expect(rows).toEqual([
      ['docs', 'project', join(demo, '.mcp.json'), 'stdio', 'pending_approval', 'pending'],
      ['linter', 'workspace', join(demo, '.mcp-reconciler/settings.json'), 'stdio', 'pending_approval', 'pending'],
      ['metrics', 'workspace', join(demo, '.mcp-reconciler/mcp.servers.yml'), 'stdio', 'pending_approval', 'pending'],
      ['notes', 'user', demoUser, 'stdio', 'admitted', null],
      ['scratch', 'user', demoUser, 'stdio', 'excluded', null],
      ['tickets', 'project', join(demo, '.mcp.json'), 'stdio', 'pending_approval', 'pending'],
    ]);
    expect(doc.gating).toEqual({ excluded: ['scratch'], pending: ['docs', 'linter', 'metrics', 'tickets'], rejected: [] });
    expect(doc.sources).toEqual([
      { path: demoUser, scope: 'user', exists: true },
      { path: join(demo, '.mcp.json'), scope: 'project', exists: true },
      { path: join(demo, '.mcp-reconciler/settings.json'), scope: 'workspace', exists: true },
      { path: join(demo, '.mcp-reconciler/mcp.servers.yml'), scope: 'workspace', exists: true },
    ]);
  });

  it('demo servers point at the compiled fixture by absolute path, whatever the cwd', async () => {
    const r = await cli(demoArgs(), tmpdir());
    const doc = JSON.parse(r.stdout) as { servers: ServerRow[] };
    for (const s of doc.servers) {
      expect(s.config.command).toBe('node');
      expect(resolve((s.config.args as string[])[0]!)).toBe(join(repo, 'dist/test/fixtures/basic-server.js'));
    }
    // A relative cwd in .mcp-reconciler/settings.json resolves against that file's folder.
    expect(doc.servers.find((s) => s.name === 'linter')?.config.cwd).toBe(demo);
  });

  it('reflects stored approvals for the current hash', async () => {
    const approvals = join(home, 'approvals-a.json');
    const first = JSON.parse((await cli(demoArgs('--approvals', approvals))).stdout) as { servers: ServerRow[] };
    const docs = first.servers.find((s) => s.name === 'docs')!;
    const tickets = first.servers.find((s) => s.name === 'tickets')!;
    const store = new FileApprovalStore(approvals);
    const root = await canonicalRoot(demo);
    await store.set(root, 'docs', { hash: docs.hash, decision: 'approved', at: new Date().toISOString() });
    await store.set(root, 'tickets', { hash: tickets.hash, decision: 'rejected', at: new Date().toISOString() });
    await store.set(root, 'metrics', { hash: 'some-older-config', decision: 'approved', at: new Date().toISOString() });

    const r = await cli(demoArgs('--approvals', approvals));
    const doc = JSON.parse(r.stdout) as { servers: ServerRow[]; gating: { pending: string[]; rejected: string[] } };
    const by = Object.fromEntries(doc.servers.map((s) => [s.name, [s.verdict, s.approval]]));
    expect(by.docs).toEqual(['admitted', 'approved']);
    expect(by.tickets).toEqual(['rejected', 'rejected']);
    expect(by.metrics).toEqual(['pending_approval', 'pending']);
    expect(doc.gating.rejected).toEqual(['tickets']);
    expect(doc.gating.pending).toEqual(['linter', 'metrics']);
  });

  it('the approvals file can come from MCP_RECONCILER_APPROVALS', async () => {
    const approvals = join(home, 'approvals-env.json');
    const docsHash = (JSON.parse((await cli(demoArgs())).stdout) as { servers: ServerRow[] }).servers.find((s) => s.name === 'docs')!.hash;
    await new FileApprovalStore(approvals).set(await canonicalRoot(demo), 'docs', { hash: docsHash, decision: 'approved', at: new Date().toISOString() });
    env = { ...env, MCP_RECONCILER_APPROVALS: approvals };
    try {
      const doc = JSON.parse((await cli(demoArgs())).stdout) as { servers: ServerRow[] };
      expect(doc.servers.find((s) => s.name === 'docs')?.approval).toBe('approved');
    } finally {
      delete env.MCP_RECONCILER_APPROVALS;
    }
  });

  it('--allowed-mcp-server-names bounds admission', async () => {
    const doc = JSON.parse((await cli(demoArgs('--allowed-mcp-server-names', 'notes,scratch'))).stdout) as { servers: ServerRow[]; gating: { allowed?: string[] } };
    expect(doc.gating.allowed).toEqual(['notes', 'scratch']);
    const by = Object.fromEntries(doc.servers.map((s) => [s.name, s.verdict]));
    expect(by).toEqual({ docs: 'not_allowed', linter: 'not_allowed', metrics: 'not_allowed', notes: 'admitted', scratch: 'excluded', tickets: 'not_allowed' });
  });

  it('--config adds a cli-scope file that replaces a lower entry whole', async () => {
    const extra = join(home, 'extra.json');
    await writeFile(extra, JSON.stringify({ mcpServers: { docs: { url: 'http://127.0.0.1:9/mcp' } } }));
    const doc = JSON.parse((await cli(demoArgs('--config', extra))).stdout) as { servers: ServerRow[] };
    const docs = doc.servers.find((s) => s.name === 'docs')!;
    expect([docs.scope, docs.source, docs.type, docs.verdict, docs.approval]).toEqual(['cli', extra, 'http', 'admitted', null]);
    expect(docs.config).toEqual({ type: 'http', url: 'http://127.0.0.1:9/mcp' });
  });

  it('does not print credential-shaped env values', async () => {
    const extra = join(home, 'secret.json');
    await writeFile(extra, JSON.stringify({ mcpServers: { s: { command: 'x', env: { GITHUB_TOKEN: 'ghp_supersecret', MODE: 'dev' } } } }));
    const r = await cli(demoArgs('--config', extra));
    expect(r.stdout).not.toContain('ghp_supersecret');
    const s = (JSON.parse(r.stdout) as { servers: ServerRow[] }).servers.find((x) => x.name === 's')!;
    // Every env value is hidden: names like DATABASE_URL say nothing reliable (see test/cli/config-redact.test.ts).
    expect(s.config.env).toEqual({ GITHUB_TOKEN: '<redacted>', MODE: '<redacted>' });
  });
});

describe('config, human output and errors', () => {
  let ws: string;
  beforeAll(async () => {
    ws = await mkdtemp(join(tmpdir(), 'mcpr-cli-ws-'));
    await mkdir(join(ws, '.mcp-reconciler'));
  });
  afterAll(async () => {
    await rm(ws, { recursive: true, force: true });
  });

  it('prints an aligned table of the demo servers', async () => {
    const r = await cli(['config', '--cwd', demo, '--user-config', demoUser]);
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    const header = lines.find((l) => l.startsWith('NAME'))!;
    expect(header.split(/\s{2,}/)).toEqual(['NAME', 'SCOPE', 'TYPE', 'VERDICT', 'APPROVAL', 'SOURCE']);
    const verdictCol = header.indexOf('VERDICT');
    const row = (name: string) => lines.find((l) => l.startsWith(`${name} `))!;
    expect(row('scratch').slice(verdictCol)).toMatch(/^excluded\s/);
    expect(row('docs').slice(verdictCol)).toMatch(/^pending_approval\s+pending\s+\.mcp\.json$/);
    expect(row('metrics')).toContain('.mcp-reconciler/mcp.servers.yml');
    expect(r.stdout).toMatch(/excluded\s+scratch/);
  });

  it('reports config issues on stderr without failing, and the good entries still show', async () => {
    await writeFile(join(ws, '.mcp.json'), '{\n  "mcpServers": {\n    "ok": { "command": "node" },\n    "bad": { "command": 42 },\n    "env": { "command": "x", "args": ["${DEFINITELY_UNSET_VAR}"] }\n  }\n}\n');
    const r = await cli(['config', '--cwd', ws]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^ok\s+project/m);
    expect(r.stdout).not.toMatch(/^bad\s/m);
    expect(r.stderr).toContain(`warning: ${join(ws, '.mcp.json')}:4:`);
    expect(r.stderr).toContain('server "bad" field "command"');
    expect(r.stderr).toContain('server "env" field "args[0]": ${DEFINITELY_UNSET_VAR} is not set');

    const j = await cli(['config', '--cwd', ws, '--json']);
    expect(j.code).toBe(0);
    const doc = JSON.parse(j.stdout) as { servers: ServerRow[]; issues: { server: string; field: string; line: number }[] };
    expect(doc.servers.map((s) => s.name)).toEqual(['ok']);
    expect(doc.issues.map((i) => [i.server, i.field, i.line])).toEqual([
      ['bad', 'command', 4],
      ['env', 'args[0]', 5],
    ]);
  });

  it('a fatally unparseable file exits 2 with file:line:col', async () => {
    await writeFile(join(ws, '.mcp-reconciler', 'mcp.servers.yml'), 'mcpServers:\n  a:\n    args: [1,\n');
    await writeFile(join(ws, '.mcp.json'), '{\n  "mcpServers": {\n    "a": { "command": "x" },,\n  }\n}');
    const r = await cli(['config', '--cwd', ws]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(new RegExp(`^error: ${join(ws, '.mcp.json').replace(/[.\\/]/g, '\\$&')}:3:29: JSON syntax error`));
    expect(r.stderr).toContain(`${join(ws, '.mcp-reconciler', 'mcp.servers.yml')}:`);
    expect(r.stderr).toMatch(/^hint: /m);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it.each([
    [['config', '--bogus'], /error: Unknown option '--bogus'/],
    [['frobnicate'], /error: unknown command "frobnicate"\nhint: commands: (\w+, )*config/],
    [[], /error: no command given/],
    [['config', '--preset', 'emacs'], /error: unknown preset "emacs"\nhint: use one of: default, claude-code/],
    [['config', '--cwd', '/definitely/not/here'], /error: --cwd: "\/definitely\/not\/here" is not a directory/],
    [['config', 'extra-arg'], /error: config takes no arguments/],
    [['config', '--cwd'], /error: Option '--cwd <value>' argument missing/],
  ])('usage error %j exits 2 with a readable message and no stack', async (argv, pattern) => {
    const r = await cli(argv);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(pattern);
    expect(r.stderr).toMatch(/^hint: /m);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('--help lists commands and exits 0', async () => {
    const r = await cli(['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^\s+config\s+the merged desired map/m);
    const c = await cli(['config', '--help']);
    expect(c.code).toBe(0);
    expect(c.stdout).toContain('Usage: mcp-reconciler config');
  });

  it('MCP_RECONCILER_DEBUG=1 adds the stack trace', async () => {
    env = { ...env, MCP_RECONCILER_DEBUG: '1' };
    try {
      const r = await cli(['config', '--preset', 'emacs']);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/\n\s+at /);
    } finally {
      delete env.MCP_RECONCILER_DEBUG;
    }
  });
});

describe('the built binary', () => {
  const bin = cliBin;

  function run(argv: string[]): Promise<Run> {
    return new Promise((done) => {
      // execFile waits for exit; the timeout kills a hung child so none outlives the test.
      execFile(process.execPath, [bin, ...argv], { cwd: tmpdir(), env, timeout: 30_000 }, (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        done({ code, stdout, stderr });
      });
    });
  }

  it('exists (built with `npm run build`)', () => {
    expect(existsSync(bin), `${bin} is missing: run \`npm run build\` first`).toBe(true);
  });

  it('config --json on the demo workspace', async () => {
    const r = await run(demoArgs());
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(serverVerdicts(r.stdout)).toEqual(['docs project pending_approval', 'linter workspace pending_approval', 'metrics workspace pending_approval',
      'notes user admitted', 'scratch user excluded', 'tickets project pending_approval']);
  });

  it('a usage error exits 2', async () => {
    const r = await run(['config', '--nope']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("error: Unknown option '--nope'");
  });
});
