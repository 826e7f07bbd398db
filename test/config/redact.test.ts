import { describe, expect, it } from 'vitest';
import { REDACTED, redactArgs, redactServerConfig, redactText } from '../../src/config/redact.js';

const R = REDACTED;

describe('redactArgs', () => {
  it('hides --flag=value and the value after a secret-named flag', () => {
    expect(redactArgs(['--token=abc', '--api-key', 'abc', '--password', 'pw', '-k', 'x', '--verbose', 'file.txt'])).toEqual([
      `--token=${R}`,
      '--api-key',
      R,
      '--password',
      R,
      '-k', // single-letter flags are not guessed at (curl -k is --insecure)
      'x',
      '--verbose',
      'file.txt',
    ]);
  });

  it('keeps file and path arguments of secret-ish flags, and plain args', () => {
    expect(redactArgs(['--token-file', '/run/secrets/t', '-y', '@modelcontextprotocol/server-github', '--port', '8080'])).toEqual([
      '--token-file',
      '/run/secrets/t',
      '-y',
      '@modelcontextprotocol/server-github',
      '--port',
      '8080',
    ]);
  });

  it('hides Bearer/Basic credentials, alone or inside a header argument', () => {
    expect(redactArgs(['Bearer', 'xyz', 'Bearer abc', '-H', 'Authorization: Bearer abc', '--header', 'X-Api-Key: k1'])).toEqual([
      'Bearer',
      R,
      `Bearer ${R}`,
      '-H',
      `Authorization: ${R}`,
      '--header',
      `X-Api-Key: ${R}`,
    ]);
  });

  it('hides NAME=value pairs with secret-shaped names (docker -e style)', () => {
    expect(redactArgs(['-e', 'GITHUB_TOKEN=ghx', '-e', 'MODE=dev', 'DB_PASSWORD=pw'])).toEqual(['-e', `GITHUB_TOKEN=${R}`, '-e', 'MODE=dev', `DB_PASSWORD=${R}`]);
  });
});

describe('redactText', () => {
  it('hides URL passwords and token-as-username', () => {
    expect(redactText('postgres://app:hunter2@db.internal:5432/app')).toBe(`postgres://app:${R}@db.internal:5432/app`);
    expect(redactText('https://ghtoken@github.com/o/r.git')).toBe(`https://${R}@github.com/o/r.git`);
    expect(redactText('https://example.com/a@b')).toBe('https://example.com/a@b');
  });

  it('hides secret query parameters and keeps the others', () => {
    expect(redactText('https://h/mcp?token=abc&x=1&api_key=k&key=v&sig=s')).toBe(`https://h/mcp?token=${R}&x=1&api_key=${R}&key=${R}&sig=${R}`);
  });

  it('hides well-known token formats anywhere', () => {
    const gh = `ghp_${'a'.repeat(36)}`;
    expect(redactText(`clone with ${gh} now`)).toBe(`clone with ${R} now`);
    expect(redactText('sk-ant-api03-abcdefghijklmnopqrstuvwxyz')).toBe(R);
    expect(redactText('AKIAABCDEFGHIJKLMNOP')).toBe(R);
  });
});

describe('redactServerConfig', () => {
  it('hides every env and header value, scans url/command/args/auth, drops instance', () => {
    const out = redactServerConfig({
      command: 'npx',
      args: ['-y', 'srv', '--api-key', 'abc'],
      env: { DATABASE_URL: 'postgres://u:p@h/d', MODE: 'dev', EMPTY: '' },
      url: 'https://u:p@h/mcp?token=t',
      headers: { Authorization: 'Bearer t', 'X-Trace': 'on' },
      auth: { clientId: 'id', clientSecret: 'cs', scopes: ['a'] },
      instance: {},
      timeout: 5,
    });
    expect(out).toEqual({
      command: 'npx',
      args: ['-y', 'srv', '--api-key', R],
      env: { DATABASE_URL: R, MODE: R, EMPTY: '' },
      url: `https://u:${R}@h/mcp?token=${R}`,
      headers: { Authorization: R, 'X-Trace': R },
      auth: { clientId: 'id', clientSecret: R, scopes: ['a'] },
      timeout: 5,
    });
  });
});
