import { describe, expect, it } from 'vitest';
import type { ServerConfig } from '../../machines/types.js';
import { approvalHash } from '../../src/approvals/hash.js';

const base: ServerConfig = { command: 'node', args: ['s.js'], env: { A: '1', B: '2' }, timeout: 1_000, includeTools: ['t'], description: 'd' };

describe('approvalHash (SPEC §4)', () => {
  it('ignores key order', () => {
    expect(approvalHash({ description: 'd', includeTools: ['t'], timeout: 1_000, env: { B: '2', A: '1' }, args: ['s.js'], command: 'node' })).toBe(approvalHash(base));
  });

  it('is stable across calls and a 32-hex-digit string', () => {
    expect(approvalHash({ ...base })).toBe(approvalHash(base));
    expect(approvalHash(base)).toMatch(/^[0-9a-f]{32}$/);
  });

  // Unlike the fingerprint, the approval is bound to the whole config: any edit asks again.
  const edits: Array<[string, ServerConfig]> = [
    ['command', { ...base, command: 'deno' }],
    ['args', { ...base, args: ['other.js'] }],
    ['args order', { ...base, args: ['s.js', 'x'] }],
    ['env', { ...base, env: { A: '1', B: '3' } }],
    ['timeout', { ...base, timeout: 2_000 }],
    ['includeTools', { ...base, includeTools: ['t', 'u'] }],
    ['excludeTools', { ...base, excludeTools: ['u'] }],
    ['description', { ...base, description: 'e' }],
    ['disabled', { ...base, disabled: true }],
    ['url', { ...base, url: 'http://h' }],
  ];
  it.each(edits)('a %s edit changes it', (_field, edited) => {
    expect(approvalHash(edited)).not.toBe(approvalHash(base));
  });

  it('hashes in-process instances by identity', () => {
    const one = {};
    expect(approvalHash({ type: 'sdk', instance: one })).toBe(approvalHash({ type: 'sdk', instance: one }));
    expect(approvalHash({ type: 'sdk', instance: one })).not.toBe(approvalHash({ type: 'sdk', instance: {} }));
  });
});
