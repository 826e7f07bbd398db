import { describe, expect, it } from 'vitest';
import { expandServerConfig, expandString } from '../../src/config/expand.js';

describe('expandString', () => {
  const env = { HOME: '/home/u', EMPTY: '', PORT: '8080' };
  it.each([
    ['${HOME}/bin', '/home/u/bin'],
    ['x${PORT}y${PORT}', 'x8080y8080'],
    ['${NOPE:-fallback}', 'fallback'],
    ['${NOPE:-}', ''],
    ['${PORT:-1}', '8080'],
    ['${EMPTY:-used}', 'used'],
    ['${EMPTY}', ''],
    ['${env:HOME}', '/home/u'],
    ['${NOPE:-a:-b}', 'a:-b'],
    ['no vars $HOME', 'no vars $HOME'],
  ])('%s → %s', (input, expected) => {
    expect(expandString(input, { env })).toEqual({ value: expected, missing: [] });
  });

  it('reports unset variables without default', () => {
    expect(expandString('${A}-${B:-b}-${C}', { env: {} }).missing).toEqual(['A', 'C']);
  });

  it('reports forms it cannot resolve (VS Code inputs) instead of leaving them literal', () => {
    expect(expandString('${input:token}', { env: {} }).missing).toEqual(['input:token']);
  });

  it('built-ins win over the env', () => {
    expect(expandString('${workspaceFolder}/x', { env: { workspaceFolder: '/env' }, builtins: { workspaceFolder: '/root' } }).value).toBe('/root/x');
  });
});

describe('expandServerConfig', () => {
  it('expands command, args, env, url, headers and cwd, and nothing else', () => {
    const { config, missing } = expandServerConfig(
      {
        type: 'stdio',
        command: '${BIN}',
        args: ['--port', '${PORT:-9}'],
        env: { TOKEN: '${TOKEN}' },
        url: 'http://${HOST}/mcp',
        headers: { Authorization: 'Bearer ${TOKEN}' },
        cwd: '${HOME}',
        description: '${TOKEN}',
      },
      { env: { BIN: 'node', TOKEN: 't0k', HOST: 'h', HOME: '/h' } },
    );
    expect(missing).toEqual([]);
    expect(config).toEqual({
      type: 'stdio',
      command: 'node',
      args: ['--port', '9'],
      env: { TOKEN: 't0k' },
      url: 'http://h/mcp',
      headers: { Authorization: 'Bearer t0k' },
      cwd: '/h',
      description: '${TOKEN}',
    });
  });

  it('names the field of every unset variable', () => {
    const { missing } = expandServerConfig({ command: 'x', args: ['a', '${A}'], env: { 'K.1': '${B}' }, headers: { H: '${C}' } }, { env: {} });
    expect(missing).toEqual([
      { field: 'args[1]', path: ['args', 1], variable: 'A' },
      { field: 'env.K.1', path: ['env', 'K.1'], variable: 'B' },
      { field: 'headers.H', path: ['headers', 'H'], variable: 'C' },
    ]);
  });
});
