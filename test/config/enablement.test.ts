/**
 * `disable` / `enable` in each host's own field, on real host config files:
 * the host's reader then reads the server (or tool) as off, and enabling
 * gives the file back byte for byte.
 */
import { copyFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { writeHostSwitch, type EntryLocation } from '../../src/config/enablement.js';
import type { FormatName } from '../../src/config/formats.js';
import { parseSourceText } from '../../src/config/load.js';
import { repoRoot } from '../helpers/fixtures.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mcpr-enable-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function copyFixture(rel: string): Promise<string> {
  const to = join(dir, basename(rel));
  await copyFile(join(repoRoot, 'test', 'fixtures', 'host-configs', rel), to);
  return to;
}

function read(loc: EntryLocation, text: string, name: string) {
  const loaded = parseSourceText(text, { scope: 'user', path: loc.path, format: loc.format }, {}, {});
  return loaded.servers[name];
}

const cases: Array<[string, FormatName, string, string, string[] | undefined, string]> = [
  ['default/settings.json', 'default', 'mcpServers', 'notes', undefined, 'disabled'],
  ['default/settings.json', 'default', 'mcpServers', 'notes', ['write'], 'excludeTools'],
  ['cline/cline_mcp_settings.json', 'cline', 'mcpServers', 'github.com/modelcontextprotocol/servers/tree/main/src/brave-search', undefined, 'disabled'],
  ['roo/mcp.json', 'roo', 'mcpServers', 'puppeteer', undefined, 'disabled'],
  ['roo/mcp.json', 'roo', 'mcpServers', 'puppeteer', ['puppeteer_click', 'puppeteer_fill'], 'disabledTools'],
  ['windsurf/mcp_config.json', 'windsurf', 'mcpServers', 'memory', undefined, 'disabled'],
  ['windsurf/mcp_config.json', 'windsurf', 'mcpServers', 'memory', ['delete_entities'], 'disabledTools'],
  ['codex/config.toml', 'codex', 'mcp_servers', 'context7', undefined, 'enabled'],
  ['codex/config.toml', 'codex', 'mcp_servers', 'docs', ['search'], 'disabled_tools'],
  ['opencode/opencode.jsonc', 'opencode', 'mcp', 'sentry', undefined, 'enabled'],
  ['zed/settings.json', 'zed', 'context_servers', 'local-notes', undefined, 'enabled'],
  ['gemini/user-settings.json', 'gemini', 'mcpServers', 'github', ['delete_repo'], 'excludeTools'],
];

describe('writeHostSwitch', () => {
  it.each(cases)('%s (%s): %s.%s tools %j: off reads back off, on gives the file back', async (rel, format, key, name, tools, field) => {
    const path = await copyFixture(rel);
    const original = await readFile(path, 'utf8');
    const loc: EntryLocation = { path, keyPath: [key], format, scope: 'user' };
    expect(read(loc, original, name)).toBeDefined();

    const off = await writeHostSwitch(loc, name, false, tools);
    expect(off).toMatchObject({ field, written: true, backup: `${path}.bak` });
    const changed = await readFile(path, 'utf8');
    const config = read(loc, changed, name)!;
    if (tools === undefined) expect(config.disabled).toBe(true);
    else expect(config.excludeTools).toEqual(expect.arrayContaining(tools));
    // Only the entry changed: every other server reads as before.
    const others = (text: string) => {
      const all = parseSourceText(text, { scope: 'user', path, format }, {}, {}).servers;
      delete all[name];
      return all;
    };
    expect(others(changed)).toEqual(others(original));
    // Saying it again changes nothing.
    expect((await writeHostSwitch(loc, name, false, tools))!.written).toBe(false);

    const on = await writeHostSwitch(loc, name, true, tools);
    expect(on!.written).toBe(true);
    expect(await readFile(path, 'utf8')).toBe(original);
  });

  it('a host with no field of its own (Claude Code, Cursor, VS Code, Claude Desktop; Gemini servers, Cline tools) is left to the state file', async () => {
    const path = await copyFixture('claude-code/project.mcp.json');
    const before = await readFile(path, 'utf8');
    const name = Object.keys((JSON.parse(before) as { mcpServers: Record<string, unknown> }).mcpServers)[0]!;
    expect(await writeHostSwitch({ path, keyPath: ['mcpServers'], format: 'claude-code', scope: 'project' }, name, false)).toBeUndefined();
    expect(await writeHostSwitch({ path, keyPath: ['mcpServers'], format: 'gemini', scope: 'project' }, name, false)).toBeUndefined();
    expect(await writeHostSwitch({ path, keyPath: ['mcpServers'], format: 'cline', scope: 'project' }, name, false, ['x'])).toBeUndefined();
    expect(await readFile(path, 'utf8')).toBe(before);
  });

  it('an entry written as something else than a table (Codex dotted keys) is refused with the fix, and the file is left alone', async () => {
    const path = join(dir, 'config.toml');
    const text = 'mcp_servers.x.command = "x"\n';
    await import('node:fs/promises').then((fs) => fs.writeFile(path, text));
    await expect(writeHostSwitch({ path, keyPath: ['mcp_servers'], format: 'codex', scope: 'user' }, 'x', false)).rejects.toMatchObject({
      code: 'config_invalid',
      message: expect.stringContaining('is not written as its own [mcp_servers.x] table'),
    });
    expect(await readFile(path, 'utf8')).toBe(text);
  });
});
