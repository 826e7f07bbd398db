/**
 * `add` / `remove` write the preset's own file in the host's own format:
 * real-looking files (with comments) from test/fixtures/host-configs get a
 * server added and removed; the add is read back by the host-faithful reader
 * as intended, the remove gives the original bytes back, the previous file
 * is kept, a file with secrets is 0600, and `${VAR}` is written as written.
 */
import { copyFile, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { addServer, editTargets, removeServer, type EditScope, type ServerSpec } from '../../src/config/edit.js';
import { ConfigReader, configSources } from '../../src/config/reader.js';
import { resolvePreset } from '../../src/config/presets.js';
import { McpReconcilerError } from '../../src/errors.js';
import { makeTempHome, removeTempHome, type TempHome } from '../helpers/temp-home.js';

const fixtures = resolve(import.meta.dirname, '../fixtures/host-configs');

let { home, ws, env }: TempHome = { home: '', ws: '', env: {} };
beforeEach(async () => void ({ home, ws, env } = await makeTempHome('mcpr-edit')));
afterEach(() => removeTempHome({ home, ws }));

/** Put fixture `file` where `preset` keeps its `scope` file; returns that path. */
async function place(preset: string, scope: EditScope, file: string): Promise<string> {
  const target = editTargets({ preset, cwd: ws, home, env }).find((t) => t.scope === scope || (scope === 'project' && t.scope === 'workspace'));
  if (!target) throw new Error(`${preset} has no ${scope} file`);
  await mkdir(dirname(target.path), { recursive: true });
  await copyFile(join(fixtures, file), target.path);
  // The local scope is this folder's entry in ~/.claude.json, which Claude Code writes the first time it runs there.
  if (scope === 'local') await writeFile(target.path, (await readFile(target.path, 'utf8')).replaceAll('/home/dev/src/website', ws));
  return target.path;
}

/** What the preset's reader makes of the workspace now. */
async function readBack(preset: string, readEnv: NodeJS.ProcessEnv = env) {
  const reader = new ConfigReader({ sources: configSources({ root: ws, home, env: readEnv, preset: resolvePreset(preset) }), env: readEnv, home });
  return (await reader.read()).assembled;
}

const stdio: ServerSpec = { command: 'node', args: ['server.js', '--root', '.'], env: { API_TOKEN: '${MY_TOKEN}' } };
const remote: ServerSpec = { url: 'https://mcp.example.com/mcp', headers: { Authorization: 'Bearer ${MY_TOKEN}' } };

// [preset, scope, fixture, can it take a URL]
const cases: [string, EditScope, string, boolean][] = [
  ['claude-code', 'user', 'claude-code/user.claude.json', true],
  ['claude-code', 'local', 'claude-code/user.claude.json', true],
  ['claude-code', 'project', 'claude-code/project.mcp.json', true],
  ['vscode', 'project', 'vscode/workspace-inputs.json', true],
  ['vscode', 'workspace', 'vscode/workspace-remote.json', true],
  ['vscode', 'user', 'vscode/workspace-remote.json', true],
  ['cursor', 'project', 'cursor/project.json', true],
  ['cursor', 'user', 'cursor/user-empty.json', true],
  ['gemini', 'user', 'gemini/user-settings.json', true],
  ['qwen', 'user', 'qwen/user-settings.json', true],
  ['codex', 'user', 'codex/config.toml', true],
  ['codex', 'project', 'codex/minimal.toml', true],
  ['zed', 'user', 'zed/settings.json', true],
  ['opencode', 'project', 'opencode/opencode.jsonc', true],
  ['cline', 'user', 'cline/cline_mcp_settings.json', true],
  ['windsurf', 'user', 'windsurf/mcp_config.json', true],
  ['claude-desktop', 'user', 'claude-desktop/claude_desktop_config.json', false],
  ['roo', 'project', 'roo/mcp.json', true],
  ['default', 'user', 'default/settings.json', true],
];

describe.each(cases)('%s %s scope: %s', (preset, scope, fixture, takesUrl) => {
  it('add writes a command server the host reads back as asked; remove restores every byte', async () => {
    const file = await place(preset, scope, fixture);
    const original = await readFile(file, 'utf8');
    const r = await addServer({ preset, cwd: ws, home, env, scope, name: 'added', server: stdio });
    expect(r.file).toBe(file);
    expect(r.backup).toBe(`${file}.bak`);
    expect(await readFile(`${file}.bak`, 'utf8')).toBe(original);
    const written = await readFile(file, 'utf8');
    // Written as given: the host expands ${MY_TOKEN} when it starts the server, we never do.
    expect(written).toContain('${MY_TOKEN}');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const desired = (await readBack(preset, { ...env, MY_TOKEN: 'secret' })).desired.added;
    expect(desired?.scope).toBe(r.scope);
    expect(desired?.config).toMatchObject({ type: 'stdio', command: 'node', args: ['server.js', '--root', '.'] });
    expect(Object.keys(desired?.config.env ?? {})).toContain('API_TOKEN');
    // Every server the file had is still read the same way.
    const before = Object.keys((await readBackText(preset, scope, original)).desired).sort();
    expect(Object.keys((await readBack(preset)).desired).filter((n) => n !== 'added').sort()).toEqual(expect.arrayContaining(before));

    await removeServer({ preset, cwd: ws, home, env, scope, name: 'added' });
    expect(await readFile(file, 'utf8')).toBe(original);
    expect((await readBack(preset)).desired.added).toBeUndefined();
  });

  it.runIf(takesUrl)('add writes a remote server with headers the host reads back; remove restores every byte', async () => {
    const file = await place(preset, scope, fixture);
    const original = await readFile(file, 'utf8');
    await addServer({ preset, cwd: ws, home, env, scope, name: 'remote-one', server: remote });
    const desired = (await readBack(preset, { ...env, MY_TOKEN: 'secret' })).desired['remote-one'];
    expect(desired?.config.type).toBe('http');
    expect(desired?.config.url).toBe('https://mcp.example.com/mcp');
    if (preset !== 'codex') expect(Object.keys(desired?.config.headers ?? {})).toEqual(['Authorization']);
    await removeServer({ preset, cwd: ws, home, env, name: 'remote-one' });
    expect(await readFile(file, 'utf8')).toBe(original);
  });
});

/** The servers the preset reads when `scope`'s file holds `text` (the original, before the add). */
async function readBackText(preset: string, scope: EditScope, text: string) {
  const file = editTargets({ preset, cwd: ws, home, env }).find((t) => t.scope === scope || (scope === 'project' && t.scope === 'workspace'))!.path;
  const now = await readFile(file, 'utf8');
  await writeFile(file, text);
  try {
    return await readBack(preset);
  } finally {
    await writeFile(file, now);
  }
}

describe('add / remove: rules', () => {
  it('claude-code adds to the local scope by default, keyed by the real root, and it wins over the project file', async () => {
    await place('claude-code', 'project', 'claude-code/project.mcp.json');
    const r = await addServer({ preset: 'claude-code', cwd: ws, home, env, name: 'sentry', server: { command: 'sentry-local' } });
    expect(r.scope).toBe('local');
    expect(r.keyPath).toEqual(['projects', ws, 'mcpServers']);
    expect(r.needsApproval).toBe(false);
    const text = JSON.parse(await readFile(join(home, '.claude.json'), 'utf8')) as { projects: Record<string, { mcpServers: Record<string, unknown> }> };
    expect(text.projects[ws]?.mcpServers.sentry).toEqual({ type: 'stdio', command: 'sentry-local', args: [] });
    const desired = (await readBack('claude-code')).desired.sentry;
    expect([desired?.scope, desired?.config.command]).toEqual(['local', 'sentry-local']);
    // No secrets given: a new file gets the usual mode.
    expect((await stat(join(home, '.claude.json'))).mode & 0o777).toBe(0o644);
  });

  it('a project-scope add still needs approval', async () => {
    const r = await addServer({ preset: 'claude-code', cwd: ws, home, env, scope: 'project', name: 'p', server: { command: 'x' } });
    expect(r.needsApproval).toBe(true);
    expect(r.created).toBe(true);
    expect(r.backup).toBeUndefined();
  });

  it('a file without a servers object gets one; remove leaves it, empty', async () => {
    const file = await place('gemini', 'project', 'gemini/workspace-settings.json');
    const original = await readFile(file, 'utf8');
    await addServer({ preset: 'gemini', cwd: ws, home, env, name: 'g', server: { command: 'x' } });
    await removeServer({ preset: 'gemini', cwd: ws, home, env, name: 'g' });
    expect(await readFile(file, 'utf8')).toBe(original.replace(/\n}\n$/, ',\n  "mcpServers": {}\n}\n'));
  });

  it('says what is wrong: unknown scope for the preset, an existing name, a missing one (with where it looked)', async () => {
    await place('cursor', 'project', 'cursor/project.json');
    const err = async (p: Promise<unknown>) => {
      const e = await p.then(() => undefined, (x: unknown) => x);
      expect(e).toBeInstanceOf(McpReconcilerError);
      return e as McpReconcilerError;
    };
    const local = await err(addServer({ preset: 'cursor', cwd: ws, home, env, scope: 'local', name: 'x', server: { command: 'x' } }));
    expect([local.code, local.message, local.hint]).toEqual(['usage', 'the cursor preset has no local scope', 'use --scope user or --scope project']);
    const dup = await err(addServer({ preset: 'cursor', cwd: ws, home, env, scope: 'project', name: 'linear', server: { command: 'x' } }));
    expect(dup.code).toBe('usage');
    expect(dup.message).toBe(`a server named "linear" is already in ${join(ws, '.cursor', 'mcp.json')} (mcpServers)`);
    expect(dup.hint).toMatch(/^remove it first \(mcp-reconciler remove linear --scope project\), or add this one under another name$/);
    const missing = await err(removeServer({ preset: 'cursor', cwd: ws, home, env, name: 'nope' }));
    expect(missing.code).toBe('unknown_server');
    expect(missing.message).toBe(`no server named "nope" in ${join(home, '.cursor', 'mcp.json')} (mcpServers) [user], ${join(ws, '.cursor', 'mcp.json')} (mcpServers) [project]`);
    const desktop = await err(addServer({ preset: 'claude-desktop', cwd: ws, home, env, name: 'r', server: { url: 'https://x.example/mcp' } }));
    expect(desktop.hint).toBe('add it as a command instead: add NAME -- npx mcp-remote https://x.example/mcp');
  });

  it('a name in two scopes is removed only with --scope', async () => {
    await addServer({ preset: 'claude-code', cwd: ws, home, env, scope: 'user', name: 'twice', server: { command: 'a' } });
    await addServer({ preset: 'claude-code', cwd: ws, home, env, scope: 'local', name: 'twice', server: { command: 'b' } });
    await expect(removeServer({ preset: 'claude-code', cwd: ws, home, env, name: 'twice' })).rejects.toThrow(/"twice" is in more than one file/);
    const r = await removeServer({ preset: 'claude-code', cwd: ws, home, env, scope: 'local', name: 'twice' });
    expect(r.scope).toBe('local');
    expect((await readBack('claude-code')).desired.twice?.config.command).toBe('a');
  });

  it('a file that does not parse is left alone', async () => {
    const file = join(ws, '.mcp.json');
    await writeFile(file, '{ "mcpServers": { "a": ');
    await expect(addServer({ preset: 'claude-code', cwd: ws, home, env, scope: 'project', name: 'b', server: { command: 'x' } })).rejects.toThrow(/^cannot edit .*\.mcp\.json:1: JSON syntax error/);
    expect(await readFile(file, 'utf8')).toBe('{ "mcpServers": { "a": ');
  });

  it('concurrent adds to one file all land', async () => {
    const names = Array.from({ length: 8 }, (_, i) => `s${i}`);
    await Promise.all(names.map((name) => addServer({ preset: 'cursor', cwd: ws, home, env, scope: 'user', name, server: { command: name } })));
    expect(Object.keys((await readBack('cursor')).desired).sort()).toEqual(names);
  });
});

describe('add: ${VAR} the host will not expand', () => {
  it('is written as given, with a note saying how the host spells it', async () => {
    const cursor = await addServer({ preset: 'cursor', cwd: ws, home, env, scope: 'user', name: 'c', server: { command: 'x', env: { T: '${TOKEN}', U: '${env:OTHER}' } } });
    expect(cursor.notes).toEqual(['Cursor reads environment variables as ${env:TOKEN}; ${TOKEN} is written as given and Cursor will not expand it']);
    const desktop = await addServer({ preset: 'claude-desktop', cwd: ws, home, env, name: 'd', server: { command: 'x', args: ['${HOME}'] } });
    expect(desktop.notes).toEqual(['Claude Desktop does not expand variables, so ${HOME} reaches the server as written']);
    const claude = await addServer({ preset: 'claude-code', cwd: ws, home, env, name: 'e', server: { command: 'x', env: { T: '${TOKEN}' } } });
    expect(claude.notes).toBeUndefined();
  });
});
