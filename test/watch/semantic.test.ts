import { describe, expect, it } from 'vitest';
import { sameContent, type ConfigContent } from '../../src/watch/index.js';

const base: ConfigContent = {
  servers: { foo: { command: 'node', args: ['a.js', '--x'], env: { A: '1', B: '2' } } },
  settings: { excluded: ['bar'] },
};

describe('sameContent', () => {
  it.each<[string, ConfigContent]>([
    ['an identical save', structuredClone(base)],
    ['a reformat (key order changed)', { settings: { excluded: ['bar'] }, servers: { foo: { env: { B: '2', A: '1' }, args: ['a.js', '--x'], command: 'node' } } }],
    ['a theme key added to settings', { ...base, settings: { excluded: ['bar'], theme: 'dark' } as ConfigContent['settings'] }],
    ['an excluded list reordered with a duplicate', { ...base, settings: { excluded: ['bar', 'bar'] } }],
    ['an explicit `allowed: undefined`', { ...base, settings: { excluded: ['bar'], allowed: undefined } }],
  ])('%s is the same', (_what, next) => {
    expect(sameContent(base, next)).toBe(true);
  });

  it.each<[string, ConfigContent]>([
    ['an args reorder', { ...base, servers: { foo: { ...base.servers!.foo, args: ['--x', 'a.js'] } } }],
    ['a new server', { ...base, servers: { ...base.servers, bar: { url: 'http://127.0.0.1:1/mcp' } } }],
    ['a removed server', { ...base, servers: {} }],
    ['a description change', { ...base, servers: { foo: { ...base.servers!.foo, description: 'new' } } }],
    ['allowed: [] (deny all) added', { ...base, settings: { excluded: ['bar'], allowed: [] } }],
    ['an excluded entry removed', { ...base, settings: {} }],
  ])('%s is a change', (_what, next) => {
    expect(sameContent(base, next)).toBe(false);
  });

  it('treats no previous content as a change', () => {
    expect(sameContent(undefined, base)).toBe(false);
  });

  it('treats absent env and {} env as the same', () => {
    expect(sameContent({ servers: { s: { command: 'x' } } }, { servers: { s: { command: 'x', env: {} } } })).toBe(true);
  });
});
