/**
 * Two server names that sanitise alike (`x.y`, `x_y`) share the prefix
 * `mcp__x_y__`. The first in code-point order owns it, whatever the connect
 * order; the other is refused with an error naming both, and the config
 * layer reports the pair up front.
 */
import type { Prompt, Tool } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import type { DesiredServer } from '../../machines/types.js';
import { nameCollisionIssues } from '../../src/config/name-collisions.js';
import { ErrorCode, hasCode } from '../../src/errors.js';
import { compareCodePoints, prefixOwner } from '../../src/registry/naming.js';
import { ToolRegistry, type RegistryChange } from '../../src/registry/registry.js';

function tool(name: string): Tool {
  return { name, description: `${name} tool`, inputSchema: { type: 'object', properties: {} } };
}
function prompt(name: string): Prompt {
  return { name };
}

/** What each server ends up with, plus the conflict of each. */
function outcome(r: ToolRegistry) {
  return {
    tools: r.tools().map((t) => `${t.server}:${t.name}`),
    prompts: r.prompts().map((p) => `${p.server}:${p.name}`),
    conflicts: Object.fromEntries(r.servers().map((s) => [s, r.conflictOf(s)?.message ?? null])),
  };
}

type Listing = Parameters<ToolRegistry['commit']>[2];

/** Both connect orders of two servers, as `it.each` rows. */
function bothOrders<K extends string>(one: K, two: K): Array<[K, K]> {
  return [
    [one, two],
    [two, one],
  ];
}

/** A registry that committed generation 1 of each listing, in `order`. */
function committed<K extends string>(listings: Record<K, Listing>, order: readonly K[]): ToolRegistry {
  const r = new ToolRegistry();
  for (const server of order) r.commit(server, 1, listings[server]);
  return r;
}

// Different tool names on purpose: without prefix ownership nothing would clash
// and both servers would mix their tools under one prefix.
const listings = {
  'x.y': { tools: [tool('read')], prompts: [prompt('p')] },
  x_y: { tools: [tool('write')], prompts: [prompt('q')] },
};

describe('prefix ownership between names that sanitise alike', () => {
  it.each(bothOrders('x.y', 'x_y'))('connect order %s then %s: "x.y" (first in code-point order) owns mcp__x_y__', (...order) => {
    const r = committed(listings, order);
    const o = outcome(r);
    expect(o.tools).toEqual(['x.y:mcp__x_y__read']);
    expect(o.prompts).toEqual(['x.y:mcp__x_y__p']);
    expect(o.conflicts['x.y']).toBeNull();
    expect(o.conflicts.x_y).toMatch(/"x_y" and "x\.y" both become the tool prefix mcp__x_y__, which "x\.y" owns/);
    expect(hasCode(r.conflictOf('x_y'), ErrorCode.ToolConflict)).toBe(true);
    expect(r.conflictOf('x_y')!.details).toMatchObject({ server: 'x_y', prefix_owner: 'x.y' });
  });

  it('the later-sorting server that connected first gives its tools up, with a change event', () => {
    const r = new ToolRegistry();
    r.commit('x_y', 1, listings.x_y);
    const changes: RegistryChange[] = [];
    r.onChange((c) => changes.push(c));
    const result = r.commit('x.y', 1, listings['x.y']);
    expect(result.ok).toBe(true);
    expect(changes).toEqual([
      { server: 'x_y', added: [], removed: ['mcp__x_y__write'], updated: [], prompts: { added: [], removed: ['mcp__x_y__q'], updated: [] } },
      { server: 'x.y', added: ['mcp__x_y__read'], removed: [], updated: [], prompts: { added: ['mcp__x_y__p'], removed: [], updated: [] } },
    ]);
  });

  it('same tool names: the owner takes them over instead of being refused as "already owned"', () => {
    const r = new ToolRegistry();
    r.commit('x_y', 1, { tools: [tool('echo')], prompts: [] });
    expect(r.commit('x.y', 1, { tools: [tool('echo')], prompts: [] }).ok).toBe(true);
    expect(r.getTool('mcp__x_y__echo')?.server).toBe('x.y');
  });

  it('a re-list by the refused server stays refused; once the owner is dropped its latest listing registers', () => {
    const r = new ToolRegistry();
    r.commit('x.y', 1, listings['x.y']);
    const again = r.commitTools('x_y', 2, [tool('write'), tool('delete')]);
    expect(again.ok).toBe(false);
    expect(!again.ok && again.error.message).toContain('"x.y" owns');
    r.drop('x.y');
    expect(outcome(r).tools).toEqual(['x_y:mcp__x_y__write', 'x_y:mcp__x_y__delete']);
    expect(r.conflictOf('x_y')).toBeUndefined();
  });

  it('orders by code point, not UTF-16 unit: U+FF0E sorts before U+1F600 though its unit is larger', () => {
    const fullwidthStop = 'a\uFF0E';
    const emoji = 'a\u{1F600}';
    expect(compareCodePoints(fullwidthStop, emoji)).toBeLessThan(0);
    expect(fullwidthStop < emoji).toBe(false); // what plain `<` would decide
    expect(prefixOwner([emoji, fullwidthStop])).toBe(fullwidthStop);
  });
});

describe('ownership of a registered name two servers produce (`a` + `b__c`, `a__b` + `c`)', () => {
  const clash = {
    a: { tools: [tool('b__c'), tool('own_a')], prompts: [] },
    a__b: { tools: [tool('c'), tool('own_ab')], prompts: [] },
  };

  it.each(bothOrders('a', 'a__b'))('connect order %s then %s: "a" (first in code-point order) owns mcp__a__b__c; "a__b" has nothing registered', (...order) => {
    const r = committed(clash, order);
    expect(r.getTool('mcp__a__b__c')).toMatchObject({ server: 'a', rawName: 'b__c' });
    expect(outcome(r).tools).toEqual(['a:mcp__a__b__c', 'a:mcp__a__own_a']);
    expect(r.conflictOf('a')).toBeUndefined();
    const conflict = r.conflictOf('a__b')!;
    expect(hasCode(conflict, ErrorCode.ToolConflict)).toBe(true);
    // The same sentence in both orders: both servers, both raw names, the owner.
    expect(conflict.message).toContain('tool "c" of MCP server "a__b" and tool "b__c" of MCP server "a" both become mcp__a__b__c, which "a" owns');
    expect(conflict.details.taken_tools).toEqual([{ name: 'mcp__a__b__c', rawName: 'c', owner: 'a', ownerRawName: 'b__c' }]);
  });

  it('the owner arriving later takes the name with one change event for the loser, and the loser registers again once the owner is dropped', () => {
    const r = new ToolRegistry();
    r.commit('a__b', 1, clash.a__b);
    const changes: RegistryChange[] = [];
    r.onChange((c) => changes.push(c));
    expect(r.commit('a', 1, clash.a).ok).toBe(true);
    expect(changes.map((c) => [c.server, c.added, c.removed])).toEqual([
      ['a__b', [], ['mcp__a__b__c', 'mcp__a__b__own_ab']],
      ['a', ['mcp__a__b__c', 'mcp__a__own_a'], []],
    ]);
    expect(r.commit('a__b', 2, clash.a__b).ok).toBe(false);
    r.drop('a');
    expect(outcome(r).tools).toEqual(['a__b:mcp__a__b__c', 'a__b:mcp__a__b__own_ab']);
    expect(r.conflictOf('a__b')).toBeUndefined();
  });

  it('prompts follow the same rule', () => {
    const r = new ToolRegistry();
    r.commit('a__b', 1, { tools: [], prompts: [prompt('c')] });
    expect(r.commit('a', 1, { tools: [], prompts: [prompt('b__c')] }).ok).toBe(true);
    expect(r.getPrompt('mcp__a__b__c')?.server).toBe('a');
    expect(r.conflictOf('a__b')?.message).toContain('prompt "c" of MCP server "a__b" and prompt "b__c" of MCP server "a" both become mcp__a__b__c');
  });
});

describe('nameCollisionIssues', () => {
  const entry = (name: string, source: string, disabled = false): DesiredServer => ({
    name,
    scope: 'user',
    source,
    config: { type: 'stdio', command: 'x', ...(disabled ? { disabled: true } : {}) },
    fingerprint: 'f',
    hash: 'h',
  });

  it('one issue on the losing server naming both and the prefix; none for distinct or disabled names', () => {
    const desired = {
      x_y: entry('x_y', '/a.json'),
      'x.y': entry('x.y', '/b.json'),
      'x y': entry('x y', '/c.json', true),
      other: entry('other', '/a.json'),
    };
    expect(nameCollisionIssues(desired)).toEqual([
      {
        file: '/a.json',
        server: 'x_y',
        code: 'config_invalid',
        message: expect.stringMatching(/server "x_y" and server "x\.y" both get the tool prefix mcp__x_y__; "x\.y" sorts first and owns it.*rename one/),
      },
    ]);
    expect(nameCollisionIssues({ a: entry('a', '/a.json'), b: entry('b', '/a.json') })).toEqual([]);
  });

  it('reports a `__proto__` server, which the controller cannot run', () => {
    const desired: Record<string, DesiredServer> = {};
    Object.defineProperty(desired, '__proto__', { value: entry('__proto__', '/a.json'), enumerable: true });
    expect(nameCollisionIssues(desired)).toEqual([
      expect.objectContaining({ server: '__proto__', file: '/a.json', message: expect.stringContaining('rename it') }),
    ]);
  });
});
