/**
 * The resource registry's rules (SPEC §13): URIs kept as listed, one owner
 * per URI (first in code-point order, whatever the commit order), ownership
 * within a view of servers, templates as the fallback owner, conflicts
 * reported and nothing rejected; resources come and go with the server's
 * tool listing in `ToolRegistry`.
 */
import { describe, expect, it } from 'vitest';
import type { Resource, ResourceTemplate, Tool } from '@modelcontextprotocol/sdk/types.js';
import { ToolRegistry } from '../../src/registry/registry.js';
import { ResourceRegistry, type ResourceChange } from '../../src/registry/resources.js';

const res = (uri: string, extra: Partial<Resource> = {}): Resource => ({ uri, name: uri.split('/').pop()!, ...extra });
const tpl = (uriTemplate: string): ResourceTemplate => ({ uriTemplate, name: uriTemplate });
const tool = (name: string): Tool => ({ name, inputSchema: { type: 'object' } });
const listing = (resources: Resource[], resourceTemplates: ResourceTemplate[] = []) => ({ resources, resourceTemplates });

describe('ResourceRegistry', () => {
  it('keeps URIs as listed and gives a shared URI to the first server in code-point order, whatever the commit order', () => {
    for (const order of [['b', 'a'], ['a', 'b']]) {
      const reg = new ResourceRegistry();
      for (const server of order) reg.commit(server, 1, listing([res('file:///shared.md', { description: server }), res(`file:///${server}.md`)]));
      expect(reg.resources().map((r) => [r.uri, r.server])).toEqual([
        ['file:///shared.md', 'a'],
        ['file:///a.md', 'a'],
        ['file:///b.md', 'b'],
      ]);
      expect(reg.ownerOf('file:///shared.md')?.server).toBe('a');
      expect(reg.conflicts()).toEqual([{ uri: 'file:///shared.md', owner: 'a', servers: ['a', 'b'] }]);
    }
  });

  it('picks the owner among the servers in view, so a scoped view reads its own copy', () => {
    const reg = new ResourceRegistry();
    reg.commit('a', 1, listing([res('x://shared')]));
    reg.commit('b', 1, listing([res('x://shared'), res('x://only-b')]));
    const onlyB = (s: string) => s === 'b';
    expect(reg.resources(onlyB).map((r) => [r.uri, r.server])).toEqual([
      ['x://shared', 'b'],
      ['x://only-b', 'b'],
    ]);
    expect(reg.ownerOf('x://shared', onlyB)?.server).toBe('b');
    expect(reg.ownerOf('x://only-b', (s) => s === 'a')).toBeUndefined();
  });

  it('falls back to the first server with a matching template for a URI nobody lists', () => {
    const reg = new ResourceRegistry();
    reg.commit('notes', 1, listing([res('note://static/hello')], [tpl('note://notes/{id}')]));
    reg.commit('files', 1, listing([], [tpl('file:///{+path}'), tpl('{broken')]));
    expect(reg.ownerOf('note://notes/7')).toMatchObject({ server: 'notes', template: { uriTemplate: 'note://notes/{id}' } });
    expect(reg.ownerOf('note://static/hello')).toMatchObject({ server: 'notes', resource: { uri: 'note://static/hello' } });
    expect(reg.ownerOf('file:///etc/hosts')?.server).toBe('files');
    expect(reg.ownerOf('other://x')).toBeUndefined();
    expect(reg.resourceTemplates().map((t) => [t.uriTemplate, t.server])).toEqual([
      ['file:///{+path}', 'files'],
      ['{broken', 'files'],
      ['note://notes/{id}', 'notes'],
    ]);
  });

  it('reports added, removed and updated URIs with the conflicts after the change; a recommit with a new generation is no change', () => {
    const reg = new ResourceRegistry();
    const changes: ResourceChange[] = [];
    reg.onChange((c) => changes.push(c));
    reg.commit('a', 1, listing([res('x://1'), res('x://2')], [tpl('x://t/{id}')]));
    reg.commit('a', 2, listing([res('x://1'), res('x://2')], [tpl('x://t/{id}')]));
    reg.commit('a', 3, listing([res('x://1', { description: 'new' }), res('x://3')]));
    reg.commit('b', 1, listing([res('x://3')]));
    reg.drop('a');
    expect(changes).toEqual([
      { server: 'a', added: ['x://1', 'x://2'], removed: [], updated: [], templates: { added: ['x://t/{id}'], removed: [], updated: [] }, conflicts: [] },
      { server: 'a', added: ['x://3'], removed: ['x://2'], updated: ['x://1'], templates: { added: [], removed: ['x://t/{id}'], updated: [] }, conflicts: [] },
      { server: 'b', added: ['x://3'], removed: [], updated: [], templates: { added: [], removed: [], updated: [] }, conflicts: [{ uri: 'x://3', owner: 'a', servers: ['a', 'b'] }] },
      { server: 'a', added: [], removed: ['x://1', 'x://3'], updated: [], templates: { added: [], removed: [], updated: [] }, conflicts: [] },
    ]);
    expect(reg.resources().map((r) => r.server)).toEqual(['b']);
  });

  it('serves the first of a URI one server lists twice, and marks cached entries', () => {
    const reg = new ResourceRegistry();
    reg.commit('a', 1, listing([res('x://d', { description: 'first' }), res('x://d', { description: 'second' })]), { cached: true });
    expect(reg.resources()).toEqual([{ uri: 'x://d', name: 'd', description: 'first', server: 'a', generation: 1, cached: true }]);
  });
});

describe('ToolRegistry with resources', () => {
  it('commits resources with an accepted listing, none with a rejected one, and drops them with the server', () => {
    const reg = new ToolRegistry();
    expect(reg.commit('a', 1, { tools: [tool('x')], prompts: [], resources: [res('x://a')], resourceTemplates: [] }).ok).toBe(true);
    // Duplicate tool names reject the whole listing: its resources are not registered either.
    expect(reg.commit('b', 1, { tools: [tool('y'), tool('y')], prompts: [], resources: [res('x://b')] }).ok).toBe(false);
    expect(reg.resources.resources().map((r) => r.uri)).toEqual(['x://a']);
    // A listing without resources (an old cache file) leaves the known ones alone.
    reg.commit('a', 2, { tools: [tool('x')], prompts: [] });
    expect(reg.resources.resourcesOf('a').map((r) => r.uri)).toEqual(['x://a']);
    reg.drop('a');
    expect(reg.resources.resources()).toEqual([]);
    reg.commit('c', 1, { tools: [], prompts: [], resources: [res('x://c')] });
    reg.clear();
    expect(reg.resources.resources()).toEqual([]);
  });
});
