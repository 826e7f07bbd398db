import { describe, expect, it } from 'vitest';
import { expandServerConfig, expandString } from '../../src/config/expand.js';
import type { ServerConfig } from '../../machines/types.js';

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
    // Each field as written and as expanded.
    const fields: Record<string, [written: unknown, expanded: unknown]> = {
      type: ['stdio', 'stdio'],
      command: ['${BIN}', 'node'],
      args: [['--port', '${PORT:-9}'], ['--port', '9']],
      env: [{ TOKEN: '${TOKEN}' }, { TOKEN: 't0k' }],
      url: ['http://${HOST}/mcp', 'http://h/mcp'],
      headers: [{ Authorization: 'Bearer ${TOKEN}' }, { Authorization: 'Bearer t0k' }],
      cwd: ['${HOME}', '/h'],
      description: ['${TOKEN}', '${TOKEN}'],
    };
    const column = (i: 0 | 1): ServerConfig => Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, v[i]])) as ServerConfig;
    const { config, missing } = expandServerConfig(column(0), { env: { BIN: 'node', TOKEN: 't0k', HOST: 'h', HOME: '/h' } });
    expect(missing).toEqual([]);
    expect(config).toEqual(column(1));
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

describe('expandString: host rules', () => {
  const env = { SET: 'v' };
  it.each([
    // [style, input, expected]
    ['gemini keeps unset, expands bare $VAR', { style: 'braces-and-bare', defaults: false, envPrefix: false, unset: 'keep', envUnset: 'keep', inputs: false }, '$SET-${SET}-${NOPE}-$NOPE', 'v-v-${NOPE}-$NOPE'],
    ['vscode empties unset plain and env:', { style: 'braces', defaults: false, envPrefix: true, unset: 'empty', envUnset: 'empty', inputs: true }, '[${NOPE}][${env:NOPE}][${env:SET}]', '[][][v]'],
    ['none leaves everything', { style: 'none', defaults: false, envPrefix: false, unset: 'error', envUnset: 'error', inputs: false }, '${SET} $SET', '${SET} $SET'],
    ['opencode {env:} empties unset', { style: 'opencode', defaults: false, envPrefix: false, unset: 'error', envUnset: 'error', inputs: false }, '{env:SET}/{env:NOPE}/${SET}', 'v//${SET}'],
  ] as const)('%s', (_name, syntax, input, expected) => {
    expect(expandString(input, { env, syntax })).toEqual({ value: expected, missing: [] });
  });

  it('an input without an answer is missing even where unset variables are empty', () => {
    const syntax = { style: 'braces', defaults: false, envPrefix: true, unset: 'empty', envUnset: 'empty', inputs: true } as const;
    expect(expandString('${input:k}', { env, syntax }).missing).toEqual(['input:k']);
    expect(expandString('${input:k}', { env, syntax, input: (id) => (id === 'k' ? 'answer' : undefined) }).value).toBe('answer');
  });
});
