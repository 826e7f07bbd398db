import { describe, expect, it } from 'vitest';
import type { ServerConfig } from '../../machines/types.js';
import { serversEqual } from '../../src/config/identity.js';
import { gatingEqual, type GatingLists } from '../../src/gating/equality.js';

type Servers = Record<string, ServerConfig> | undefined;

describe('serversEqual (SPEC §2.4)', () => {
  const cases: Array<[string, Servers, Servers, boolean]> = [
    ['identical', { a: { command: 'x', args: ['1'] } }, { a: { command: 'x', args: ['1'] } }, true],
    ['key order ignored', { a: { command: 'x', args: ['1'], env: { A: '1', B: '2' } } }, { a: { env: { B: '2', A: '1' }, args: ['1'], command: 'x' } }, true],
    ['server order ignored', { a: { command: 'x' }, b: { command: 'y' } }, { b: { command: 'y' }, a: { command: 'x' } }, true],
    ['array order significant', { a: { command: 'x', args: ['1', '2'] } }, { a: { command: 'x', args: ['2', '1'] } }, false],
    ['undefined map ≡ {}', undefined, {}, true],
    ['undefined env ≡ {}', { a: { command: 'x' } }, { a: { command: 'x', env: {} } }, true],
    ['undefined headers ≡ {}', { a: { url: 'http://h' } }, { a: { url: 'http://h', headers: {} } }, true],
    ['explicit undefined member ≡ absent', { a: { command: 'x', cwd: undefined } }, { a: { command: 'x' } }, true],
    ['value change', { a: { command: 'x', env: { A: '1' } } }, { a: { command: 'x', env: { A: '2' } } }, false],
    ['added server', { a: { command: 'x' } }, { a: { command: 'x' }, b: { command: 'x' } }, false],
    ['filter change counts as a change', { a: { command: 'x' } }, { a: { command: 'x', includeTools: ['t'] } }, false],
  ];
  it.each(cases)('%s', (_name, a, b, expected) => {
    expect(serversEqual(a, b)).toBe(expected);
    expect(serversEqual(b, a)).toBe(expected);
  });

  it('compares in-process instances by identity', () => {
    const one = {};
    const two = {};
    expect(serversEqual({ s: { type: 'sdk', instance: one } }, { s: { type: 'sdk', instance: one } })).toBe(true);
    expect(serversEqual({ s: { type: 'sdk', instance: one } }, { s: { type: 'sdk', instance: two } })).toBe(false);
  });
});

describe('gatingEqual (SPEC §2.4)', () => {
  const cases: Array<[string, GatingLists | undefined, GatingLists | undefined, boolean]> = [
    ['both undefined', undefined, undefined, true],
    ['excluded as a set', { excluded: ['a', 'b'] }, { excluded: ['b', 'a'] }, true],
    ['excluded duplicates ignored', { excluded: ['a', 'a'] }, { excluded: ['a'] }, true],
    ['allowed as a set', { allowed: ['a', 'b'] }, { allowed: ['b', 'a'] }, true],
    ['pending as a set', { pending: ['x', 'y'] }, { pending: ['y', 'x'] }, true],
    ['undefined excluded ≡ []', {}, { excluded: [] }, true],
    ['undefined pending ≡ []', { excluded: [] }, { pending: [] }, true],
    ['undefined lists ≡ [] (whole object)', undefined, { excluded: [], pending: [] }, true],
    ['absent allowed ≠ [] (allow all vs deny all)', {}, { allowed: [] }, false],
    ['absent allowed ≠ [] from undefined', undefined, { allowed: [] }, false],
    ['allowed [] ≡ []', { allowed: [] }, { allowed: [] }, true],
    ['different excluded', { excluded: ['a'] }, { excluded: ['b'] }, false],
    ['different allowed', { allowed: ['a'] }, { allowed: ['a', 'b'] }, false],
    ['different pending', { pending: ['a'] }, { pending: [] }, false],
  ];
  it.each(cases)('%s', (_name, a, b, expected) => {
    expect(gatingEqual(a, b)).toBe(expected);
    expect(gatingEqual(b, a)).toBe(expected);
  });
});
