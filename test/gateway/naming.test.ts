/**
 * The gateway's names (`mcp<sep><server><sep><tool>`): which separators are
 * allowed, that the default is the registry's name unchanged, the mapping
 * back to registry entries, and collisions reported once, never shadowed.
 */
import { describe, expect, it } from 'vitest';
import { registeredToolName } from '../../src/registry/naming.js';
import type { RegisteredPrompt, RegisteredTool } from '../../src/registry/registry.js';
import { CLIENT_TOOL_NAME_PATTERN, gatewayName, GatewayNames, validateSeparator, type NameCollision } from '../../src/gateway/naming.js';

function tool(server: string, rawName: string): RegisteredTool {
  return { name: registeredToolName(server, rawName), server, rawName, inputSchema: { type: 'object' }, generation: 1, tokens: 1 };
}

function names(tools: RegisteredTool[], separator?: string, servers: string[] = [...new Set(tools.map((t) => t.server))]) {
  const reported: NameCollision[] = [];
  const prompts: RegisteredPrompt[] = [];
  const n = new GatewayNames({ tools: () => tools, prompts: () => prompts, servers: () => servers }, separator, (c) => reported.push(c));
  return { n, reported };
}

describe('gateway names', () => {
  it('accepts separators clients can use and refuses others, saying what is allowed', () => {
    for (const ok of ['__', '_', '-', '--', 'x', '_-_']) expect(validateSeparator(ok)).toBe(ok);
    for (const bad of ['.', '', ' ', '/', '::', 'a.b', 'é', '123456789']) {
      expect(() => validateSeparator(bad, '--separator')).toThrow(/--separator .* is not allowed: it must be 1 to 8 characters from A-Z, a-z, 0-9, "_" and "-"/);
    }
  });

  it('the default separator gives the registry’s own names, unchanged, even cut ones', () => {
    const long = 'a-very-long-tool-name-that-does-not-fit-in-sixty-four-characters-at-all';
    const tools = [tool('docs', 'search'), tool('files.v2', 'read'), tool('docs', long)];
    const { n } = names(tools);
    expect(n.tools().map((t) => t.name)).toEqual(tools.map((t) => t.name));
    expect(n.tool('mcp__docs__search')).toBe(tools[0]);
    expect(n.pattern).toBe('mcp__<server>__<tool>');
  });

  it('a custom separator names every part with it, maps names back both ways, and keeps names within 64 characters', () => {
    const tools = [tool('docs', 'search'), tool('my.files', 'read-all')];
    const { n } = names(tools, '-');
    expect(n.tools().map((t) => t.name)).toEqual(['mcp-docs-search', 'mcp-my_files-read-all']);
    expect(n.tool('mcp-my_files-read-all')).toBe(tools[1]);
    expect(n.tool('mcp__docs__search')).toBeUndefined();
    expect(n.pattern).toBe('mcp-<server>-<tool>');
    const long = gatewayName('--------', 'server-with-a-long-name', 'tool-with-an-even-longer-name-than-the-server');
    expect(long).toMatch(CLIENT_TOOL_NAME_PATTERN);
    expect(long).toHaveLength(64);
    expect(gatewayName('--------', 'server-with-a-long-name', 'tool-with-an-even-longer-name-than-the-servers')).not.toBe(long);
  });

  it('resolves a name to exactly the entry listed under it; other names to nothing, with the server whose prefix they have (for messages)', () => {
    const tools = [tool('a', 'x'), tool('a b', 'pid')];
    const { n } = names(tools, '-', ['a', 'a b', 'a-b', 'p']);
    expect(n.resolve('tool', 'mcp-a-x')).toEqual({ kind: 'entry', entry: tools[0] });
    expect(n.resolve('tool', 'mcp-a_b-pid')).toEqual({ kind: 'entry', entry: tools[1] });
    expect(n.resolve('tool', 'mcp-a-b-echo')).toEqual({ kind: 'unknown', server: 'a-b' });
    expect(n.resolve('tool', 'mcp-p-echo')).toEqual({ kind: 'unknown', server: 'p' });
    expect(n.resolve('tool', 'mcp-zzz-echo')).toEqual({ kind: 'unknown', server: undefined });
    // "a b" sanitises to a_b: the rest after a's prefix spells the registry name of "a b"'s tool,
    // and must not reach it.
    expect(tools[1]!.name).toBe('mcp__a_b__pid');
    expect(n.resolve('tool', 'mcp-a-_b__pid')).toEqual({ kind: 'unknown', server: 'a' });
    // The registry's own name is not served under a custom separator.
    expect(n.resolve('tool', 'mcp__a__x')).toEqual({ kind: 'renamed', server: 'a' });
    expect(names([tool('a', 'x')]).n.resolve('tool', 'mcp__a__x')).toEqual({ kind: 'entry', entry: expect.objectContaining({ server: 'a', rawName: 'x' }) });
    expect(n.rename('Tool mcp__p__echo is unavailable: "p" waits.', 'mcp__p__echo', 'mcp-p-echo')).toBe('Tool mcp-p-echo is unavailable: "p" waits.');
  });

  it('an entry from a table the registry has moved on from is looked up again in a fresh table', () => {
    let tools = [tool('x.y', 'echo')];
    const owner = new Map<string, string>([['mcp__x_y__echo', 'x.y']]);
    const n = new GatewayNames({ tools: () => tools, prompts: () => [], servers: () => ['x.y', 'x_y'], serverOf: (_kind, name) => owner.get(name) });
    expect(n.resolve('tool', 'mcp__x_y__echo')).toEqual({ kind: 'entry', entry: expect.objectContaining({ server: 'x.y' }) });
    // Not invalidated: the same registry name now stands for another server's tool.
    tools = [tool('x_y', 'echo')];
    owner.set('mcp__x_y__echo', 'x_y');
    expect(n.resolve('tool', 'mcp__x_y__echo')).toEqual({ kind: 'entry', entry: expect.objectContaining({ server: 'x_y' }) });
  });

  it('two tools a separator gives one name: the first keeps it, the other is left out and reported once', () => {
    const tools = [tool('a', 'b-c'), tool('a-b', 'c'), tool('a-b', 'd')];
    const { n, reported } = names(tools, '-');
    expect(n.tools().map((t) => `${t.name}=${t.entry.server}/${t.entry.rawName}`)).toEqual(['mcp-a-b-c=a/b-c', 'mcp-a-b-d=a-b/d']);
    expect(n.tool('mcp-a-b-c')).toBe(tools[0]);
    expect(reported).toEqual([{ kind: 'tool', name: 'mcp-a-b-c', kept: { server: 'a', rawName: 'b-c' }, dropped: { server: 'a-b', rawName: 'c' } }]);
    n.invalidate();
    expect(n.collisions()).toHaveLength(1);
    expect(reported).toHaveLength(1);
    // The default keeps them apart.
    expect(names(tools).n.tools()).toHaveLength(3);
  });
});
