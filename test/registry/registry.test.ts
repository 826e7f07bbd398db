import type { Prompt, Tool } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { hasCode, ErrorCode } from '../../src/errors.js';
import { ToolRegistry, type RegistryChange } from '../../src/registry/registry.js';

function tool(name: string, extra: Partial<Tool> = {}): Tool {
  return { name, description: `${name} tool`, inputSchema: { type: 'object', properties: {} }, ...extra };
}

function prompt(name: string): Prompt {
  return { name, description: `${name} prompt` };
}

/** Everything a host can observe, cloned so later mutation cannot hide a change. */
function snapshot(r: ToolRegistry) {
  return structuredClone({
    tools: r.tools(),
    prompts: r.prompts(),
    servers: r.servers(),
    skipped: Object.fromEntries(r.servers().map((s) => [s, r.skippedOf(s)])),
  });
}

function recorder(r: ToolRegistry): RegistryChange[] {
  const changes: RegistryChange[] = [];
  r.onChange((c) => changes.push(c));
  return changes;
}

describe('ToolRegistry.commit', () => {
  it('registers tools and prompts under mcp__<server>__<name> with their definitions', () => {
    const r = new ToolRegistry();
    const outputSchema = { type: 'object' as const, properties: { n: { type: 'number' } } };
    const result = r.commit('fs', 3, {
      tools: [tool('read', { title: 'Read', outputSchema, annotations: { readOnlyHint: true } })],
      prompts: [{ name: 'review', arguments: [{ name: 'file', required: true }] }],
    });
    expect(result.ok).toBe(true);
    expect(r.tools()).toEqual([
      {
        name: 'mcp__fs__read',
        server: 'fs',
        rawName: 'read',
        title: 'Read',
        description: 'read tool',
        inputSchema: { type: 'object', properties: {} },
        outputSchema,
        annotations: { readOnlyHint: true },
        generation: 3,
        tokens: expect.any(Number),
      },
    ]);
    expect(r.prompts()).toEqual([{ name: 'mcp__fs__review', server: 'fs', rawName: 'review', arguments: [{ name: 'file', required: true }], generation: 3 }]);
    expect(r.getTool('mcp__fs__read')?.rawName).toBe('read');
    expect(r.getPrompt('mcp__fs__review')?.server).toBe('fs');
    expect(r.has('fs')).toBe(true);
    expect(r.servers()).toEqual(['fs']);
  });

  it('replaces the previous generation whole', () => {
    const r = new ToolRegistry();
    r.commit('s', 1, { tools: [tool('a'), tool('b')], prompts: [prompt('p')] });
    r.commit('s', 2, { tools: [tool('b'), tool('c')], prompts: [] });
    expect(r.tools().map((t) => [t.name, t.generation])).toEqual([
      ['mcp__s__b', 2],
      ['mcp__s__c', 2],
    ]);
    expect(r.getTool('mcp__s__a')).toBeUndefined();
    expect(r.prompts()).toEqual([]);
  });

  it('orders by server name, then listing order', () => {
    const r = new ToolRegistry();
    r.commit('zeta', 1, { tools: [tool('z2'), tool('z1')], prompts: [] });
    r.commit('alpha', 1, { tools: [tool('a2'), tool('a1')], prompts: [prompt('q'), prompt('p')] });
    expect(r.tools().map((t) => t.name)).toEqual(['mcp__alpha__a2', 'mcp__alpha__a1', 'mcp__zeta__z2', 'mcp__zeta__z1']);
    expect(r.prompts().map((p) => p.rawName)).toEqual(['q', 'p']);
    expect(r.servers()).toEqual(['alpha', 'zeta']);
  });

  it('gives every registered tool the one lazy `tokens` getter (one hidden class for all, not a getter per tool)', () => {
    const r = new ToolRegistry();
    r.commit('s', 1, { tools: [tool('a'), tool('b')], prompts: [] });
    r.commit('t', 1, { tools: [tool('c')], prompts: [] });
    const getters = new Set(r.tools().map((t) => Object.getOwnPropertyDescriptor(t, 'tokens')?.get));
    expect(getters.size).toBe(1);
    // Still each tool's own count, enumerable like any field.
    const [a, b] = r.tools();
    expect(a!.tokens).toBeGreaterThan(0);
    expect(Object.keys(a!)).toContain('tokens');
    expect({ ...b }.tokens).toBe(b!.tokens);
  });

  it('hands out entries that cannot be changed from outside', () => {
    const r = new ToolRegistry();
    r.commit('s', 1, { tools: [tool('a')], prompts: [] });
    const [t] = r.tools();
    expect(() => {
      (t as { name: string }).name = 'mcp__s__hijacked';
    }).toThrow(TypeError);
    r.tools().pop();
    expect(r.tools().map((x) => x.name)).toEqual(['mcp__s__a']);
  });
});

describe('conflicts reject the whole generation', () => {
  it('duplicate raw names: rejected, nothing registered, previous generation exactly as before', () => {
    const r = new ToolRegistry();
    r.commit('s', 1, { tools: [tool('echo'), tool('ping')], prompts: [prompt('greet')] });
    r.commit('other', 1, { tools: [tool('x')], prompts: [] });
    const before = snapshot(r);
    const changes = recorder(r);

    const result = r.commit('s', 2, { tools: [tool('echo'), tool('new_one'), tool('echo', { description: 'again' })], prompts: [prompt('fresh')] });

    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(hasCode(result.error, ErrorCode.ToolConflict)).toBe(true);
    expect(result.error.message).toContain('"echo" more than once');
    expect(result.error.message).toContain('"s"');
    expect(result.error.hint).toBeTruthy();
    expect(snapshot(r)).toEqual(before);
    expect(r.getTool('mcp__s__new_one')).toBeUndefined();
    expect(r.getPrompt('mcp__s__fresh')).toBeUndefined();
    expect(changes).toEqual([]);
    expect(r.conflictOf('s')).toBe(result.error);
  });

  it('a first generation with duplicates registers nothing', () => {
    const r = new ToolRegistry();
    const result = r.commit('s', 1, { tools: [tool('a'), tool('a')], prompts: [prompt('p')] });
    expect(result.ok).toBe(false);
    expect(r.tools()).toEqual([]);
    expect(r.prompts()).toEqual([]);
    expect(!result.ok && result.error.message).toContain('None of this listing was registered.');
  });

  it('duplicate prompt names reject the tools of the same generation too', () => {
    const r = new ToolRegistry();
    const result = r.commit('s', 1, { tools: [tool('a')], prompts: [prompt('p'), prompt('p')] });
    expect(!result.ok && result.error.message).toContain('prompt "p" more than once');
    expect(r.tools()).toEqual([]);
  });

  it('two raw names that sanitise to the same registered name are rejected, naming both', () => {
    const r = new ToolRegistry();
    const result = r.commit('s', 1, { tools: [tool('a.b'), tool('a_b')], prompts: [] });
    expect(result.ok).toBe(false);
    expect(!result.ok && result.error.message).toContain('"a.b", "a_b" both become mcp__s__a_b');
    expect(r.tools()).toEqual([]);
  });

  it('a registered name owned by another server: rejected, naming both servers; the owner keeps it', () => {
    const r = new ToolRegistry();
    r.commit('a', 1, { tools: [tool('b__c')], prompts: [] });
    r.commit('a__b', 1, { tools: [tool('old')], prompts: [] });
    const before = snapshot(r);

    const result = r.commit('a__b', 2, { tools: [tool('c'), tool('d')], prompts: [] });

    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.code).toBe('tool_conflict');
    expect(result.error.message).toContain('MCP server "a__b"');
    expect(result.error.message).toContain('tool "c" of MCP server "a__b" and tool "b__c" of MCP server "a" both become mcp__a__b__c, which "a" owns');
    expect(result.error.details.taken_tools).toEqual([{ name: 'mcp__a__b__c', rawName: 'c', owner: 'a', ownerRawName: 'b__c' }]);
    expect(snapshot(r)).toEqual(before);
    expect(r.getTool('mcp__a__b__c')?.server).toBe('a');
  });

  it('prompt names clash across servers like tool names', () => {
    const r = new ToolRegistry();
    r.commit('a', 1, { tools: [], prompts: [prompt('b__c')] });
    const result = r.commit('a__b', 1, { tools: [tool('t')], prompts: [prompt('c')] });
    expect(!result.ok && result.error.message).toContain('prompt "c" of MCP server "a__b" and prompt "b__c" of MCP server "a" both become mcp__a__b__c');
    expect(r.toolsOf('a__b')).toEqual([]);
  });

  it('a tool and a prompt may share a registered name', () => {
    const r = new ToolRegistry();
    expect(r.commit('s', 1, { tools: [tool('x')], prompts: [prompt('x')] }).ok).toBe(true);
    expect(r.getTool('mcp__s__x')).toBeDefined();
    expect(r.getPrompt('mcp__s__x')).toBeDefined();
  });

  it('a pending listing is registered once the other server releases the name', () => {
    const r = new ToolRegistry();
    r.commit('a', 1, { tools: [tool('b__c')], prompts: [] });
    expect(r.commit('a__b', 1, { tools: [tool('c')], prompts: [] }).ok).toBe(false);
    const changes = recorder(r);

    expect(r.drop('a')).toBe(true);

    expect(r.getTool('mcp__a__b__c')?.server).toBe('a__b');
    expect(r.conflictOf('a__b')).toBeUndefined();
    expect(changes.map((c) => [c.server, c.added, c.removed])).toEqual([
      ['a', [], ['mcp__a__b__c']],
      ['a__b', ['mcp__a__b__c'], []],
    ]);
  });

  it('a later commit supersedes a pending one', () => {
    const r = new ToolRegistry();
    r.commit('s', 1, { tools: [tool('a'), tool('a')], prompts: [] });
    const result = r.commit('s', 2, { tools: [tool('a')], prompts: [] });
    expect(result.ok).toBe(true);
    expect(r.conflictOf('s')).toBeUndefined();
    expect(r.tools().map((t) => [t.name, t.generation])).toEqual([['mcp__s__a', 2]]);
  });
});

describe('commitTools / commitPrompts', () => {
  it('commitTools replaces only tools, commitPrompts only prompts', () => {
    const r = new ToolRegistry();
    r.commit('s', 1, { tools: [tool('a')], prompts: [prompt('p')] });
    expect(r.commitTools('s', 1, [tool('b')]).ok).toBe(true);
    expect(r.toolsOf('s').map((t) => t.rawName)).toEqual(['b']);
    expect(r.promptsOf('s').map((p) => p.rawName)).toEqual(['p']);
    expect(r.commitPrompts('s', 1, [prompt('q')]).ok).toBe(true);
    expect(r.toolsOf('s').map((t) => t.rawName)).toEqual(['b']);
    expect(r.promptsOf('s').map((p) => p.rawName)).toEqual(['q']);
  });

  it('a rejected re-list keeps everything as before', () => {
    const r = new ToolRegistry();
    r.commit('s', 1, { tools: [tool('a')], prompts: [prompt('p')] });
    const before = snapshot(r);
    expect(r.commitTools('s', 1, [tool('a'), tool('b'), tool('b')]).ok).toBe(false);
    expect(r.commitPrompts('s', 1, [prompt('p'), prompt('p')]).ok).toBe(false);
    expect(snapshot(r)).toEqual(before);
  });

  it('commitTools with a filter stores and applies it', () => {
    const r = new ToolRegistry();
    r.commit('s', 1, { tools: [tool('a'), tool('b')], prompts: [] });
    r.commitTools('s', 1, [tool('a'), tool('b'), tool('c')], { excludeTools: ['b'] });
    expect(r.toolsOf('s').map((t) => t.rawName)).toEqual(['a', 'c']);
  });
});

describe('taskSupport: required', () => {
  it('is not registered and is listed as skipped with the reason', () => {
    const r = new ToolRegistry();
    const result = r.commit('s', 1, {
      tools: [tool('quick', { execution: { taskSupport: 'forbidden' } }), tool('long', { execution: { taskSupport: 'required' } }), tool('maybe', { execution: { taskSupport: 'optional' } })],
      prompts: [],
    });
    expect(result.ok && result.skipped).toEqual([{ rawName: 'long', reason: expect.stringContaining("taskSupport is 'required'") }]);
    expect(r.toolsOf('s').map((t) => t.rawName)).toEqual(['quick', 'maybe']);
    expect(r.skippedOf('s')).toEqual([{ rawName: 'long', reason: expect.stringContaining("taskSupport is 'required'") }]);
    expect(r.getTool('mcp__s__long')).toBeUndefined();
  });

  it('is read from the wire object even when the type does not declare it', () => {
    const r = new ToolRegistry();
    const untyped = JSON.parse('{"name":"bg","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}}') as Tool;
    r.commit('s', 1, { tools: [untyped], prompts: [] });
    expect(r.toolsOf('s')).toEqual([]);
    expect(r.skippedOf('s').map((s) => s.rawName)).toEqual(['bg']);
  });
});

describe('include/exclude filters', () => {
  const listing = { tools: [tool('read'), tool('write'), tool('delete')], prompts: [prompt('p')] };

  it('includeTools registers only the named raw tools; the rest are skipped saying why', () => {
    const r = new ToolRegistry();
    r.commit('fs', 1, listing, { includeTools: ['read', 'write'] });
    expect(r.toolsOf('fs').map((t) => t.rawName)).toEqual(['read', 'write']);
    expect(r.skippedOf('fs')).toEqual([{ rawName: 'delete', reason: 'not listed in includeTools' }]);
    expect(r.promptsOf('fs')).toHaveLength(1);
  });

  it('excludeTools hides the named raw tools', () => {
    const r = new ToolRegistry();
    r.commit('fs', 1, listing, { excludeTools: ['delete'] });
    expect(r.toolsOf('fs').map((t) => t.rawName)).toEqual(['read', 'write']);
    expect(r.skippedOf('fs')).toEqual([{ rawName: 'delete', reason: 'listed in excludeTools' }]);
  });

  it('both: include first, then exclude', () => {
    const r = new ToolRegistry();
    r.commit('fs', 1, listing, { includeTools: ['read', 'write'], excludeTools: ['write'] });
    expect(r.toolsOf('fs').map((t) => t.rawName)).toEqual(['read']);
    expect(r.skippedOf('fs').map((s) => s.reason)).toEqual(['listed in excludeTools', 'not listed in includeTools']);
  });

  it('excludeTools can hide a duplicated tool so the rest registers', () => {
    const r = new ToolRegistry();
    const result = r.commit('s', 1, { tools: [tool('dup'), tool('ok'), tool('dup')], prompts: [] }, { excludeTools: ['dup'] });
    expect(result.ok).toBe(true);
    expect(r.toolsOf('s').map((t) => t.rawName)).toEqual(['ok']);
  });

  it('setFilter re-applies to the stored listing without a new commit', () => {
    const r = new ToolRegistry();
    r.commit('fs', 7, listing);
    const changes = recorder(r);

    expect(r.setFilter('fs', { excludeTools: ['delete', 'write'] })).toEqual({ changed: true });
    expect(r.toolsOf('fs').map((t) => [t.rawName, t.generation])).toEqual([['read', 7]]);
    expect(changes).toEqual([{ server: 'fs', added: [], removed: ['mcp__fs__write', 'mcp__fs__delete'], updated: [], prompts: { added: [], removed: [], updated: [] } }]);

    expect(r.setFilter('fs', { excludeTools: ['delete', 'write'] })).toEqual({ changed: false });
    expect(r.setFilter('fs', {})).toEqual({ changed: true });
    expect(r.toolsOf('fs').map((t) => t.rawName)).toEqual(['read', 'write', 'delete']);
    expect(r.skippedOf('fs')).toEqual([]);
    expect(r.promptsOf('fs')).toHaveLength(1);
  });

  it('setFilter before the first commit is used by that commit', () => {
    const r = new ToolRegistry();
    expect(r.setFilter('fs', { includeTools: ['read'] })).toEqual({ changed: false });
    expect(r.has('fs')).toBe(false);
    r.commit('fs', 1, listing);
    expect(r.toolsOf('fs').map((t) => t.rawName)).toEqual(['read']);
  });

  it('a filter that lets a clashing tool through keeps the previous tools and reports; narrowing it again clears it', () => {
    const r = new ToolRegistry();
    r.commit('a', 1, { tools: [tool('b__c')], prompts: [] });
    r.commit('a__b', 1, { tools: [tool('c'), tool('d')], prompts: [] }, { excludeTools: ['c'] });
    expect(r.toolsOf('a__b').map((t) => t.rawName)).toEqual(['d']);

    const widened = r.setFilter('a__b', {});
    expect(widened.changed).toBe(false);
    expect(widened.error?.code).toBe('tool_conflict');
    expect(widened.error?.message).toContain('which "a" owns');
    expect(widened.error?.message).toContain('Its previously registered tools stay');
    expect(r.toolsOf('a__b').map((t) => t.rawName)).toEqual(['d']);
    expect(r.conflictOf('a__b')).toBe(widened.error);

    expect(r.setFilter('a__b', { excludeTools: ['c'] })).toEqual({ changed: false });
    expect(r.conflictOf('a__b')).toBeUndefined();
  });

  it('narrowing a filter releases names a pending listing of another server needs', () => {
    const r = new ToolRegistry();
    r.commit('a', 1, { tools: [tool('b__c'), tool('keep')], prompts: [] });
    expect(r.commit('a__b', 1, { tools: [tool('c')], prompts: [] }).ok).toBe(false);
    r.setFilter('a', { excludeTools: ['b__c'] });
    expect(r.getTool('mcp__a__b__c')?.server).toBe('a__b');
    expect(r.toolsOf('a').map((t) => t.rawName)).toEqual(['keep']);
  });
});

describe('drop and clear', () => {
  it('drop removes tools AND prompts and reports whether anything was known', () => {
    const r = new ToolRegistry();
    r.commit('s', 1, { tools: [tool('a')], prompts: [prompt('p')] });
    r.commit('t', 1, { tools: [tool('a')], prompts: [prompt('p')] });
    expect(r.drop('s')).toBe(true);
    expect(r.getTool('mcp__s__a')).toBeUndefined();
    expect(r.getPrompt('mcp__s__p')).toBeUndefined();
    expect(r.toolsOf('s')).toEqual([]);
    expect(r.promptsOf('s')).toEqual([]);
    expect(r.has('s')).toBe(false);
    expect(r.servers()).toEqual(['t']);
    expect(r.tools().map((x) => x.name)).toEqual(['mcp__t__a']);
    expect(r.drop('s')).toBe(false);
    expect(r.drop('never')).toBe(false);
  });

  it('drop forgets the filter', () => {
    const r = new ToolRegistry();
    r.commit('s', 1, { tools: [tool('a'), tool('b')], prompts: [] }, { includeTools: ['a'] });
    r.drop('s');
    r.commit('s', 2, { tools: [tool('a'), tool('b')], prompts: [] });
    expect(r.toolsOf('s').map((t) => t.rawName)).toEqual(['a', 'b']);
  });

  it('clear empties everything and reports each server once', () => {
    const r = new ToolRegistry();
    r.commit('a', 1, { tools: [tool('x')], prompts: [] });
    r.commit('b', 1, { tools: [], prompts: [prompt('p')] });
    const changes = recorder(r);
    r.clear();
    expect(r.tools()).toEqual([]);
    expect(r.prompts()).toEqual([]);
    expect(r.servers()).toEqual([]);
    expect(changes.map((c) => [c.server, c.removed, c.prompts.removed])).toEqual([
      ['a', ['mcp__a__x'], []],
      ['b', [], ['mcp__b__p']],
    ]);
  });
});

describe('isolation', () => {
  it('two registries never see each other’s tools', () => {
    const one = new ToolRegistry();
    const two = new ToolRegistry();
    one.commit('s', 1, { tools: [tool('a')], prompts: [prompt('p')] });
    expect(two.tools()).toEqual([]);
    expect(two.getTool('mcp__s__a')).toBeUndefined();
    expect(two.has('s')).toBe(false);
    // The same name in the other registry is no conflict.
    expect(two.commit('other', 1, { tools: [], prompts: [] }).ok).toBe(true);
    expect(two.commit('s', 1, { tools: [tool('a')], prompts: [] }).ok).toBe(true);
    two.drop('s');
    expect(one.getTool('mcp__s__a')?.server).toBe('s');
  });
});

describe('onChange', () => {
  it('reports added, removed and updated tools and prompts per server', () => {
    const r = new ToolRegistry();
    const changes = recorder(r);
    r.commit('s', 1, { tools: [tool('a'), tool('b')], prompts: [prompt('p')] });
    r.commit('s', 2, { tools: [tool('a', { description: 'new text' }), tool('c')], prompts: [prompt('p')] });
    expect(changes).toEqual([
      { server: 's', added: ['mcp__s__a', 'mcp__s__b'], removed: [], updated: [], prompts: { added: ['mcp__s__p'], removed: [], updated: [] } },
      { server: 's', added: ['mcp__s__c'], removed: ['mcp__s__b'], updated: ['mcp__s__a'], prompts: { added: [], removed: [], updated: [] } },
    ]);
  });

  it('says nothing when a new generation lists the same definitions', () => {
    const r = new ToolRegistry();
    r.commit('s', 1, { tools: [tool('a')], prompts: [] });
    const changes = recorder(r);
    r.commit('s', 2, { tools: [tool('a')], prompts: [] });
    expect(changes).toEqual([]);
    expect(r.getTool('mcp__s__a')?.generation).toBe(2);
  });

  it('a throwing listener breaks neither the registry nor other listeners; unsubscribe stops delivery', () => {
    const errors: unknown[] = [];
    const r = new ToolRegistry({ onListenerError: (e) => errors.push(e) });
    r.onChange(() => {
      throw new Error('listener bug');
    });
    const seen: string[] = [];
    const off = r.onChange((c) => seen.push(...c.added));
    expect(r.commit('s', 1, { tools: [tool('a')], prompts: [] }).ok).toBe(true);
    expect(r.tools().map((t) => t.name)).toEqual(['mcp__s__a']);
    expect(seen).toEqual(['mcp__s__a']);
    expect(errors).toHaveLength(1);
    off();
    r.commit('s', 2, { tools: [tool('b')], prompts: [] });
    expect(seen).toEqual(['mcp__s__a']);
  });
});
