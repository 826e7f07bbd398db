import { describe, expect, it } from 'vitest';
import { presets, resolvePreset } from '../../src/config/presets.js';
import { McpReconcilerError } from '../../src/errors.js';

const ctx = { root: '/ws', home: '/home/u', env: {} };
const brief = (name: string, c = ctx) => presets[name]!.sources(c).map((s) => [s.scope, s.path, s.keys?.join(',') ?? 'both']);

describe('presets', () => {
  it('default (SPEC §8.3)', () => {
    expect(brief('default')).toEqual([
      ['user', '/home/u/.config/mcp-reconciler/settings.json', 'both'],
      ['project', '/ws/.mcp.json', 'both'],
      ['workspace', '/ws/.mcp-reconciler/settings.json', 'both'],
      ['workspace', '/ws/.mcp-reconciler/mcp.servers.yml', 'both'],
    ]);
  });

  it('default respects an absolute XDG_CONFIG_HOME and ignores a relative one', () => {
    expect(brief('default', { ...ctx, env: { XDG_CONFIG_HOME: '/xdg' } })[0]?.[1]).toBe('/xdg/mcp-reconciler/settings.json');
    expect(brief('default', { ...ctx, env: { XDG_CONFIG_HOME: 'rel' } })[0]?.[1]).toBe('/home/u/.config/mcp-reconciler/settings.json');
  });

  it.each([
    ['claude-code', [['user', '/home/u/.claude.json', 'mcpServers'], ['project', '/ws/.mcp.json', 'mcpServers']]],
    ['vscode', [['workspace', '/ws/.vscode/mcp.json', 'servers']]],
    ['cursor', [['user', '/home/u/.cursor/mcp.json', 'mcpServers'], ['project', '/ws/.cursor/mcp.json', 'mcpServers']]],
    ['gemini', [['user', '/home/u/.gemini/settings.json', 'mcpServers'], ['workspace', '/ws/.gemini/settings.json', 'mcpServers']]],
    ['qwen', [['user', '/home/u/.qwen/settings.json', 'mcpServers'], ['workspace', '/ws/.qwen/settings.json', 'mcpServers']]],
    ['workspace-yaml', [['workspace', '/ws/.dsh/mcp.servers.yml', 'both']]],
  ])('%s', (name, expected) => {
    expect(brief(name)).toEqual(expected);
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
