import { describe, expect, it } from 'vitest';
import { presets, resolvePreset } from '../../src/config/presets.js';
import { McpReconcilerError } from '../../src/errors.js';

const ctx = { root: '/ws', home: '/home/u', env: {}, platform: 'linux' as const };
const brief = (name: string, c: Parameters<(typeof presets)[string]['sources']>[0] = ctx) =>
  presets[name]!.sources(c).map((s) => [s.scope, s.path, s.format ?? 'default']);

describe('presets', () => {
  it('default (SPEC §8.3)', () => {
    expect(brief('default')).toEqual([
      ['user', '/home/u/.config/mcp-reconciler/settings.json', 'default'],
      ['project', '/ws/.mcp.json', 'default'],
      ['workspace', '/ws/.mcp-reconciler/settings.json', 'default'],
      ['workspace', '/ws/.mcp-reconciler/mcp.servers.yml', 'default'],
    ]);
  });

  it('default respects an absolute XDG_CONFIG_HOME and ignores a relative one', () => {
    expect(brief('default', { ...ctx, env: { XDG_CONFIG_HOME: '/xdg' } })[0]?.[1]).toBe('/xdg/mcp-reconciler/settings.json');
    expect(brief('default', { ...ctx, env: { XDG_CONFIG_HOME: 'rel' } })[0]?.[1]).toBe('/home/u/.config/mcp-reconciler/settings.json');
  });

  // Each path is where that host itself reads (Linux layout; macOS/Windows below).
  it.each([
    ['claude-code', [['user', '/home/u/.claude.json', 'claude-code'], ['project', '/ws/.mcp.json', 'claude-code'], ['local', '/home/u/.claude.json', 'claude-code']]],
    ['claude-desktop', [['user', '/home/u/.config/Claude/claude_desktop_config.json', 'claude-desktop']]],
    ['vscode', [['user', '/home/u/.config/Code/User/mcp.json', 'vscode'], ['workspace', '/ws/.vscode/mcp.json', 'vscode']]],
    ['cursor', [['user', '/home/u/.cursor/mcp.json', 'cursor'], ['project', '/ws/.cursor/mcp.json', 'cursor']]],
    ['gemini', [['user', '/home/u/.gemini/settings.json', 'gemini'], ['workspace', '/ws/.gemini/settings.json', 'gemini']]],
    ['qwen', [['user', '/home/u/.qwen/settings.json', 'qwen'], ['workspace', '/ws/.qwen/settings.json', 'qwen']]],
    ['cline', [['user', '/home/u/.config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json', 'cline']]],
    [
      'roo',
      [
        ['user', '/home/u/.config/Code/User/globalStorage/rooveterinaryinc.roo-cline/settings/mcp_settings.json', 'roo'],
        ['project', '/ws/.roo/mcp.json', 'roo'],
      ],
    ],
    ['windsurf', [['user', '/home/u/.codeium/windsurf/mcp_config.json', 'windsurf']]],
    ['codex', [['user', '/home/u/.codex/config.toml', 'codex'], ['project', '/ws/.codex/config.toml', 'codex']]],
    [
      'opencode',
      [
        ['user', '/home/u/.config/opencode/opencode.json', 'opencode'],
        ['user', '/home/u/.config/opencode/opencode.jsonc', 'opencode'],
        ['project', '/ws/opencode.json', 'opencode'],
        ['project', '/ws/opencode.jsonc', 'opencode'],
      ],
    ],
    ['zed', [['user', '/home/u/.config/zed/settings.json', 'zed'], ['project', '/ws/.zed/settings.json', 'zed']]],
    ['workspace-yaml', [['workspace', '/ws/.dsh/mcp.servers.yml', 'default']]],
  ])('%s', (name, expected) => {
    expect(brief(name)).toEqual(expected);
    expect(presets[name]!.format ?? 'default').toBe(expected[0]![2]);
  });

  it('application-data files follow the OS: macOS Application Support, Windows %APPDATA%', () => {
    const mac = { ...ctx, platform: 'darwin' as const };
    expect(brief('claude-desktop', mac)[0]?.[1]).toBe('/home/u/Library/Application Support/Claude/claude_desktop_config.json');
    expect(brief('vscode', mac)[0]?.[1]).toBe('/home/u/Library/Application Support/Code/User/mcp.json');
    const win = { ...ctx, platform: 'win32' as const, env: { APPDATA: '/appdata' } };
    expect(brief('cline', win)[0]?.[1]).toBe('/appdata/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json');
    // Zed keeps ~/.config/zed on macOS too.
    expect(brief('zed', mac)[0]?.[1]).toBe('/home/u/.config/zed/settings.json');
  });

  it('codex honours an absolute CODEX_HOME', () => {
    expect(brief('codex', { ...ctx, env: { CODEX_HOME: '/opt/codex' } })[0]?.[1]).toBe('/opt/codex/config.toml');
  });

  it('every source carries the root, for ${workspaceFolder}', () => {
    for (const p of Object.values(presets)) for (const s of p.sources(ctx)) expect(s.root).toBe('/ws');
  });

  it('resolvePreset returns a preset by name and rejects unknown names with a usage error listing the valid ones', () => {
    expect(resolvePreset('vscode').name).toBe('vscode');
    let caught: unknown;
    try {
      resolvePreset('emacs');
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(McpReconcilerError);
    expect((caught as McpReconcilerError).code).toBe('usage');
    expect((caught as McpReconcilerError).hint).toContain('claude-code');
    expect(() => resolvePreset('toString')).toThrow(/unknown preset/);
  });
});
