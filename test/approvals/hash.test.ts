import { describe, expect, it } from 'vitest';
import type { ServerConfig } from '../../machines/types.js';
import { decisionsFor } from '../../src/approvals/hash.js';
import { approvalHash, configHash } from '../../src/config/identity.js';

const base: ServerConfig = { command: 'node', args: ['s.js'], env: { A: '1', B: '2' }, timeout: 1_000, includeTools: ['t'], description: 'd' };

describe('approvalHash (SPEC §4)', () => {
  it('ignores key order', () => {
    expect(approvalHash({ description: 'd', includeTools: ['t'], timeout: 1_000, env: { B: '2', A: '1' }, args: ['s.js'], command: 'node' })).toBe(approvalHash(base));
  });

  it('is stable across calls and a 32-hex-digit string', () => {
    expect(approvalHash({ ...base })).toBe(approvalHash(base));
    expect(approvalHash(base)).toMatch(/^[0-9a-f]{32}$/);
  });

  // Bound to what runs and what it reaches (SPEC §4): these edits ask again…
  const edits: Array<[string, ServerConfig]> = [
    ['command', { ...base, command: 'deno' }],
    ['args', { ...base, args: ['other.js'] }],
    ['args order', { ...base, args: ['s.js', 'x'] }],
    ['env', { ...base, env: { A: '1', B: '3' } }],
    ['cwd', { ...base, cwd: '/elsewhere' }],
    ['url', { ...base, url: 'http://h' }],
    ['headers', { ...base, headers: { Authorization: 'Bearer x' } }],
    ['headersHelper', { ...base, headersHelper: 'print-token' }],
    ['type', { ...base, type: 'sse' }],
  ];
  it.each(edits)('a %s edit changes it', (_field, edited) => {
    expect(approvalHash(edited)).not.toBe(approvalHash(base));
  });

  // …these do not: they change which tools are shown or how long a call waits, not what runs.
  const keeps: Array<[string, ServerConfig]> = [
    ['timeout', { ...base, timeout: 2_000 }],
    ['includeTools', { ...base, includeTools: ['t', 'u'] }],
    ['excludeTools', { ...base, excludeTools: ['u'] }],
    ['description', { ...base, description: 'e' }],
    ['startup', { ...base, startup: 'lazy' }],
    ['idleTimeoutMs', { ...base, idleTimeoutMs: 60_000 }],
    ['an empty env written out', { ...base, env: { A: '1', B: '2' }, headers: {} }],
  ];
  it.each(keeps)('a %s edit keeps it', (_field, edited) => {
    expect(approvalHash(edited)).toBe(approvalHash(base));
  });

  it('honours a decision stored under the earlier whole-config hash of the same config, and only that', () => {
    const entry = { name: 's', scope: 'project' as const, source: '.mcp.json', config: base, fingerprint: 'fp', hash: approvalHash(base) };
    const stored = { s: { hash: configHash(base), decision: 'approved' as const } };
    expect(decisionsFor(stored, { s: entry })).toEqual({ s: { hash: entry.hash, decision: 'approved' } });
    // A legacy decision for another config stays bound to that config.
    const other = { s: { hash: configHash({ ...base, command: 'deno' }), decision: 'approved' as const } };
    expect(decisionsFor(other, { s: entry }).s!.hash).not.toBe(entry.hash);
  });

  it('hashes in-process instances by identity', () => {
    const one = {};
    expect(approvalHash({ type: 'sdk', instance: one })).toBe(approvalHash({ type: 'sdk', instance: one }));
    expect(approvalHash({ type: 'sdk', instance: one })).not.toBe(approvalHash({ type: 'sdk', instance: {} }));
  });
});
