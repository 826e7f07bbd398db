import { describe, expect, it } from 'vitest';
import type { ServerConfig } from '../../machines/types.js';
import { assemble } from '../../src/config/assemble.js';
import type { LoadedSource } from '../../src/config/load.js';
import type { ConfigSource } from '../../src/config/sources.js';
import { approvalHash, configHash, fingerprint } from '../../src/config/identity.js';

function loaded(source: ConfigSource, servers: Record<string, ServerConfig>, settings: LoadedSource['settings'] = {}, extra: Partial<LoadedSource> = {}): LoadedSource {
  return { source, exists: true, servers, settings, issues: [], fatal: false, ...extra };
}

const user = { scope: 'user', path: '/home/u/settings.json' } as const;
const project = { scope: 'project', path: '/ws/.mcp.json' } as const;
const ws1 = { scope: 'workspace', path: '/ws/.app/settings.json' } as const;
const ws2 = { scope: 'workspace', path: '/ws/.app/mcp.servers.yml' } as const;
const cli = { scope: 'cli', path: '/tmp/extra.json' } as const;

describe('assemble', () => {
  it('a higher scope replaces a lower one’s entry whole, whatever the input order', () => {
    const r = assemble([
      loaded(project, { a: { type: 'stdio', command: 'proj', env: { ONLY_IN_PROJECT: '1' } } }),
      loaded(user, { a: { type: 'stdio', command: 'user', args: ['u'] }, u: { type: 'stdio', command: 'u' } }),
    ]);
    expect(r.desired.a).toMatchObject({ scope: 'project', source: project.path, config: { type: 'stdio', command: 'proj', env: { ONLY_IN_PROJECT: '1' } } });
    // No field merge: the user entry's args do not leak into the winner.
    expect(r.desired.a?.config.args).toBeUndefined();
    expect(r.desired.u?.scope).toBe('user');
  });

  it('within one scope, the later source wins', () => {
    const r = assemble([loaded(ws1, { a: { type: 'stdio', command: 'first' } }), loaded(ws2, { a: { type: 'http', url: 'http://h' } })]);
    expect(r.desired.a).toMatchObject({ source: ws2.path, config: { type: 'http', url: 'http://h' } });
  });

  it('cli beats workspace; runtime and sdk beat files', () => {
    const r = assemble([loaded(cli, { a: { command: 'cli' }, b: { command: 'cli' } }), loaded(ws1, { a: { command: 'ws' }, b: { command: 'ws' }, c: { command: 'ws' } })], {
      runtime: { b: { command: 'rt' } },
      sdk: { c: { type: 'sdk', instance: {} } },
    });
    expect(r.desired.a).toMatchObject({ scope: 'cli', config: { command: 'cli' } });
    expect(r.desired.b).toMatchObject({ scope: 'runtime', source: 'runtime', config: { command: 'rt' } });
    expect(r.desired.c).toMatchObject({ scope: 'sdk', source: 'sdk' });
  });

  it('gives every entry its fingerprint, approval hash and whole-config hash', () => {
    const config: ServerConfig = { type: 'stdio', command: 'x', description: 'd' };
    const r = assemble([loaded(project, { a: config })]);
    expect(r.desired.a).toEqual({ name: 'a', scope: 'project', source: project.path, config, fingerprint: fingerprint(config), hash: approvalHash(config), configHash: configHash(config) });
  });

  it('settings: kept per source in precedence order, unmerged (the merge needs the folder’s trust)', () => {
    const r = assemble([
      loaded(ws1, {}, { excluded: ['w'] }),
      loaded(user, {}, { allowed: ['a', 'b'], excluded: ['u'] }),
      loaded(cli, {}, {}),
      loaded(project, {}, { allowed: ['p'] }),
    ]);
    expect(r.scopedSettings).toEqual([
      { scope: 'user', source: user.path, settings: { allowed: ['a', 'b'], excluded: ['u'] } },
      { scope: 'project', source: project.path, settings: { allowed: ['p'] } },
      { scope: 'workspace', source: ws1.path, settings: { excluded: ['w'] } },
    ]);
  });

  it('settings: allowed: [] is kept (deny all), not treated as absent', () => {
    const r = assemble([loaded(user, {}, { allowed: ['a'] }), loaded(ws1, {}, { allowed: [] })]);
    expect(r.scopedSettings.map((s) => s.settings.allowed)).toEqual([['a'], []]);
    expect(assemble([loaded(user, {}, {})]).scopedSettings).toEqual([]);
  });

  it('a fatal source contributes its issues but no servers or settings', () => {
    const issue = { file: ws1.path, line: 2, column: 3, message: 'JSON syntax error' };
    const r = assemble([loaded(user, { a: { command: 'u' } }), loaded(ws1, { a: { command: 'never' } }, { allowed: [] }, { fatal: true, issues: [issue] })]);
    expect(r.desired.a?.config.command).toBe('u');
    expect(r.scopedSettings).toEqual([]);
    expect(r.issues).toEqual([issue]);
  });
});
