/**
 * Claude Code's local scope: `claude mcp add` (without `--scope`) writes to
 * `projects[<root>].mcpServers` in `~/.claude.json`. The claude-code preset
 * reads it with Claude Code's precedence (local > project > user), and, the
 * file being the user's own, without the approval gate.
 */
import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliCaptured } from '../helpers/cli.js';

interface Row {
  name: string;
  scope: string;
  source: string;
  verdict: string;
  approval: string | null;
  config: Record<string, unknown>;
}
interface Doc {
  sources: { path: string; scope: string; exists: boolean; at?: string[] }[];
  servers: Row[];
  issues: { server?: string; message: string; line?: number }[];
}

let home: string;
let ws: string;
let link: string;

async function put(path: string, text: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, text);
}

async function config(cwd: string, extra: string[] = []): Promise<Doc> {
  const r = await runCliCaptured(['config', '--json', '--preset', 'claude-code', '--cwd', cwd, ...extra], { HOME: home, XDG_CONFIG_HOME: join(home, '.config'), PATH: process.env.PATH }, cwd);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout) as Doc;
}

const node = (tag: string) => ({ command: 'node', args: [tag] });

beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), 'mcpr-local-home-'));
  // The real path: tmpdir() may itself be behind a symlink (macOS /var → /private/var).
  ws = await realpath(await mkdtemp(join(tmpdir(), 'mcpr-local-ws-')));
  link = join(home, 'ws-link');
  await symlink(ws, link);
  await put(
    join(home, '.claude.json'),
    JSON.stringify(
      {
        numStartups: 12,
        mcpServers: { shared: node('user'), 'only-user': node('user') },
        projects: {
          [ws]: { allowedTools: [], mcpServers: { shared: node('local'), 'only-local': node('local'), both: node('local') }, hasTrustDialogAccepted: true },
          '/some/other/project': { mcpServers: { elsewhere: node('other') } },
        },
      },
      null,
      2,
    ),
  );
  await put(join(ws, '.mcp.json'), JSON.stringify({ mcpServers: { both: node('project'), 'only-project': node('project') } }));
});
afterAll(async () => {
  await rm(home, { recursive: true, force: true });
  await rm(ws, { recursive: true, force: true });
});

describe('claude-code preset: local scope', () => {
  it('reads projects[<root>].mcpServers; local wins over project, project over user', async () => {
    const doc = await config(ws);
    expect(doc.issues).toEqual([]);
    const rows = Object.fromEntries(doc.servers.map((s) => [s.name, [s.scope, (s.config.args as string[])[0]]]));
    expect(rows).toEqual({
      shared: ['local', 'local'],
      both: ['local', 'local'],
      'only-local': ['local', 'local'],
      'only-project': ['project', 'project'],
      'only-user': ['user', 'user'],
    });
    expect(doc.sources).toContainEqual({ path: join(home, '.claude.json'), scope: 'local', exists: true, at: ['projects', ws] });
  });

  it('local servers are the user\'s own: admitted without approval, unlike the project file', async () => {
    const by = Object.fromEntries((await config(ws)).servers.map((s) => [s.name, s]));
    expect([by['only-local']?.verdict, by['only-local']?.approval]).toEqual(['admitted', null]);
    expect([by.both?.verdict, by.both?.approval]).toEqual(['admitted', null]);
    expect([by['only-project']?.verdict, by['only-project']?.approval]).toEqual(['pending_approval', 'pending']);
  });

  it('the root is keyed by its real path, so a symlinked --cwd finds the same entries', async () => {
    const names = (await config(link)).servers.map((s) => s.name).sort();
    expect(names).toContain('only-local');
    expect(names).not.toContain('elsewhere');
  });

  it('an issue in a local entry points at its line in ~/.claude.json', async () => {
    const other = await realpath(await mkdtemp(join(tmpdir(), 'mcpr-local-bad-')));
    try {
      const text = `{\n  "projects": {\n    ${JSON.stringify(other)}: {\n      "mcpServers": {\n        "bad": { "command": 42 }\n      }\n    }\n  }\n}\n`;
      const alt = join(home, 'alt.json');
      await put(alt, text);
      const doc = await config(other, ['--user-config', alt]);
      // --user-config stands in for ~/.claude.json, the local scope with it.
      expect(doc.sources.filter((s) => s.path === alt).map((s) => s.scope)).toEqual(['user', 'local']);
      const issue = doc.issues.find((i) => i.server === 'bad');
      expect(issue?.line).toBe(5);
    } finally {
      await rm(other, { recursive: true, force: true });
    }
  });
});
