import { describe, expect, it } from 'vitest';
import type { ServerConfig } from '../../machines/types.js';
import { fingerprint, transportOf } from '../../src/config/identity.js';

const base: ServerConfig = {
  command: 'node',
  args: ['server.js', '--port', '1'],
  env: { A: '1' },
  cwd: '/srv',
  timeout: 5_000,
  includeTools: ['a'],
  description: 'one',
};

describe('fingerprint (SPEC §2.5)', () => {
  const kept: Array<[string, ServerConfig]> = [
    ['includeTools', { ...base, includeTools: ['a', 'b'] }],
    ['excludeTools', { ...base, excludeTools: ['c'] }],
    ['description', { ...base, description: 'two' }],
    ['timeout', { ...base, timeout: 60_000 }],
    ['disabled', { ...base, disabled: true }],
    ['key order', { description: 'one', includeTools: ['a'], timeout: 5_000, cwd: '/srv', env: { A: '1' }, args: ['server.js', '--port', '1'], command: 'node' }],
    ['explicit default type', { ...base, type: 'stdio' }],
  ];
  it.each(kept)('a %s change keeps the fingerprint', (_field, changed) => {
    expect(fingerprint(changed)).toBe(fingerprint(base));
  });

  const changed: Array<[string, ServerConfig]> = [
    ['args', { ...base, args: ['server.js', '--port', '2'] }],
    ['args order', { ...base, args: ['--port', '1', 'server.js'] }],
    ['env', { ...base, env: { A: '2' } }],
    ['env added', { ...base, env: { A: '1', B: '1' } }],
    ['command', { ...base, command: 'deno' }],
    ['cwd', { ...base, cwd: '/other' }],
    ['type', { ...base, type: 'sse' }],
    ['auth', { ...base, auth: { clientId: 'x' } }],
  ];
  it.each(changed)('a %s change changes the fingerprint', (_field, other) => {
    expect(fingerprint(other)).not.toBe(fingerprint(base));
  });

  it('url and headers are connection fields', () => {
    const http: ServerConfig = { url: 'http://127.0.0.1:1/mcp', headers: { H: '1' } };
    expect(fingerprint({ ...http, url: 'http://127.0.0.1:2/mcp' })).not.toBe(fingerprint(http));
    expect(fingerprint({ ...http, headers: { H: '2' } })).not.toBe(fingerprint(http));
  });

  it('treats an empty env or headers like an absent one', () => {
    const { env: _env, ...noEnv } = base;
    expect(fingerprint({ ...noEnv, env: {} })).toBe(fingerprint(noEnv));
    expect(fingerprint({ url: 'http://h', headers: {} })).toBe(fingerprint({ url: 'http://h' }));
  });

  it('hashes in-process instances by identity', () => {
    const one = {};
    expect(fingerprint({ type: 'sdk', instance: one })).toBe(fingerprint({ type: 'sdk', instance: one, description: 'x' }));
    expect(fingerprint({ type: 'sdk', instance: one })).not.toBe(fingerprint({ type: 'sdk', instance: {} }));
  });

  it('infers the transport', () => {
    expect(transportOf({ command: 'x' })).toBe('stdio');
    expect(transportOf({ url: 'http://h' })).toBe('http');
    expect(transportOf({ url: 'http://h', type: 'sse' })).toBe('sse');
    expect(transportOf({ instance: {} })).toBe('sdk');
  });
});
