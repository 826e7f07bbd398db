/**
 * `config --profile NAME` shows what that profile keeps (docs/manage.md):
 * servers it leaves out are not listed, a kept server's `includeTools` are
 * the tools the profile keeps, and a profile no file defines keeps nothing.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliCaptured } from '../helpers/cli.js';

let home: string;
let root: string;
let user: string;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), 'mcpr-config-profile-'));
  root = join(home, 'ws');
  await mkdir(root);
  user = join(home, 'user.json');
  env = { HOME: home, XDG_CONFIG_HOME: join(home, '.config'), XDG_STATE_HOME: join(home, '.state'), PATH: process.env.PATH };
  await writeFile(
    user,
    JSON.stringify({
      mcpServers: { search: { command: 'node', args: ['s.js'] }, docs: { command: 'node', args: ['d.js'] }, mail: { command: 'node', args: ['m.js'] } },
      profiles: { research: { servers: ['search', 'doc*'], tools: ['mcp__search__*', 'mcp__*__read_*'] } },
    }),
  );
});
afterAll(async () => {
  await rm(home, { recursive: true, force: true });
});

const args = (...more: string[]) => ['config', '--cwd', root, '--user-config', user, '--approvals', join(home, 'approvals.json'), ...more];

describe('config --profile', () => {
  it('lists only the servers the profile keeps, with the tools it keeps', async () => {
    const r = await runCliCaptured(args('--json', '--profile', 'research'), env, root);
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as { profile: unknown; servers: { name: string; config: { includeTools?: string[] } }[] };
    expect(doc.profile).toEqual({ name: 'research', file: user, leftOut: ['mail'] });
    expect(doc.servers.map((s) => [s.name, s.config.includeTools])).toEqual([
      ['docs', ['read_*']],
      ['search', ['*', 'read_*']],
    ]);
    const text = await runCliCaptured(args('--profile', 'research'), env, root);
    expect(text.stdout).toMatch(new RegExp(`profile +research \\(${user.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}\\)`));
    expect(text.stdout).toContain('left out by profile "research": mail');
    expect(text.stdout).not.toMatch(/^mail /m);
  });

  it('without --profile every server is listed; an undefined profile keeps nothing and says which exist', async () => {
    const all = JSON.parse((await runCliCaptured(args('--json'), env, root)).stdout) as { servers: { name: string }[]; profile?: unknown };
    expect(all.servers.map((s) => s.name)).toEqual(['docs', 'mail', 'search']);
    expect(all.profile).toBeUndefined();
    const none = await runCliCaptured(args('--profile', 'nope'), env, root);
    expect(none.code).toBe(0);
    expect(none.stdout).toContain('no servers kept by profile "nope"');
    expect(none.stderr).toContain('warning: no profile named "nope" is defined (defined: research)');
  });
});
