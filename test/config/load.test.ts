import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadSource, parseSourceText } from '../../src/config/load.js';
import type { ConfigSource } from '../../src/config/sources.js';
import { tempDirAll } from '../helpers/temp-dir.js';

const json = (path = '/ws/.mcp.json'): ConfigSource => ({ scope: 'project', path });
const yml: ConfigSource = { scope: 'workspace', path: '/ws/.app/mcp.servers.yml' };

describe('parseSourceText: formats and keys', () => {
  it('reads JSON with comments and trailing commas', () => {
    const text = `{
      // a comment
      "mcpServers": {
        /* block */ "a": { "command": "node", "args": ["x.js",], },
      },
    }`;
    const r = parseSourceText(text, json(), {});
    expect(r.fatal).toBe(false);
    expect(r.issues).toEqual([]);
    expect(r.servers).toEqual({ a: { type: 'stdio', command: 'node', args: ['x.js'] } });
  });

  it('reads YAML, coercing unquoted scalar env values to strings', () => {
    const text = ['mcpServers:', '  a:', '    command: node', '    env:', '      PORT: 8080', '      DEBUG: true', '  b:', '    url: https://example.com/mcp'].join('\n');
    const r = parseSourceText(text, yml, {});
    expect(r.issues).toEqual([]);
    expect(r.servers).toEqual({
      a: { type: 'stdio', command: 'node', env: { PORT: '8080', DEBUG: 'true' } },
      b: { type: 'http', url: 'https://example.com/mcp' },
    });
  });

  it('reads both `mcpServers` and `servers` by default', () => {
    const r = parseSourceText('{"mcpServers":{"a":{"command":"x"}},"servers":{"b":{"type":"sse","url":"http://h/sse"}}}', json(), {});
    expect(Object.keys(r.servers).sort()).toEqual(['a', 'b']);
    expect(r.servers.b?.type).toBe('sse');
  });

  it('reads only the keys the source names', () => {
    const r = parseSourceText('{"mcpServers":{"a":{"command":"x"}},"servers":{"b":{"command":"y"}}}', { ...json(), keys: ['servers'] }, {});
    expect(Object.keys(r.servers)).toEqual(['b']);
  });

  it('a name under both keys of one file keeps the first and reports the second', () => {
    const r = parseSourceText('{"mcpServers":{"a":{"command":"x"}},"servers":{"a":{"command":"y"}}}', json(), {});
    expect(r.servers.a?.command).toBe('x');
    expect(r.issues).toHaveLength(1);
    expect(r.issues[0]).toMatchObject({ server: 'a', line: 1 });
  });

  it('fills in type: stdio with a command, http with only a url; accepts streamable-http and httpUrl spellings', () => {
    const r = parseSourceText(
      JSON.stringify({
        mcpServers: {
          s: { command: 'c', url: 'http://ignored' },
          h: { url: 'http://h/mcp' },
          alias: { type: 'streamable-http', url: 'http://h/mcp' },
          gem: { httpUrl: 'http://h/mcp' },
        },
      }),
      json(),
      {},
    );
    expect(r.issues).toEqual([]);
    expect(r.servers.s?.type).toBe('stdio');
    expect(r.servers.h?.type).toBe('http');
    expect(r.servers.alias?.type).toBe('http');
    expect(r.servers.gem).toEqual({ type: 'http', url: 'http://h/mcp' });
  });

  it('ignores unknown keys in entries (one warning per file naming them) and at the top level (silently)', () => {
    const r = parseSourceText('{"theme":"dark","mcpServers":{"a":{"command":"x","trust":true,"sandbox":{}},"b":{"command":"y","colour":1}}}', json(), {});
    expect(r.servers.a).toEqual({ type: 'stdio', command: 'x', trust: true });
    expect(r.servers.b).toEqual({ type: 'stdio', command: 'y' });
    expect(r.issues).toHaveLength(1);
    expect(r.issues[0]).toMatchObject({ file: '/ws/.mcp.json', severity: 'warning' });
    expect(r.issues[0]!.server).toBeUndefined();
    expect(r.issues[0]!.message).toContain('a.sandbox, b.colour');
  });

  it('keeps an "oauth.issuer" URL and rejects one that is not an http(s) URL', () => {
    const ok = parseSourceText('{"mcpServers":{"a":{"url":"https://h/mcp","oauth":{"clientId":"c","issuer":"https://auth.example.com"}}}}', yml, {});
    expect(ok.issues).toEqual([]);
    expect(ok.servers.a?.oauth).toEqual({ clientId: 'c', issuer: 'https://auth.example.com' });
    const bad = parseSourceText('{"mcpServers":{"a":{"url":"https://h/mcp","oauth":{"issuer":"auth.example.com"}}}}', yml, {});
    expect(bad.servers.a).toBeUndefined();
    expect(bad.issues.map((i) => i.message).join('\n')).toContain("must be the authorization server's issuer URL");
  });

  it('an empty or comment-only file is an empty config, not an error', () => {
    for (const [text, src] of [['', json()], ['  // nothing yet\n', json()], ['# nothing\n', yml]] as const) {
      const r = parseSourceText(text, src, {});
      expect(r).toMatchObject({ exists: true, fatal: false, servers: {}, issues: [] });
    }
  });

  it('resolves a relative cwd against the file’s directory', () => {
    const r = parseSourceText('{"mcpServers":{"a":{"command":"x","cwd":"../tools"},"b":{"command":"x","cwd":"/abs"}}}', { scope: 'workspace', path: '/ws/.app/settings.json' }, {});
    expect(r.servers.a?.cwd).toBe('/ws/tools');
    expect(r.servers.b?.cwd).toBe('/abs');
  });
});

describe('parseSourceText: expansion', () => {
  it('expands ${VAR} and ${VAR:-default}, and ${workspaceFolder} from the source root', () => {
    const r = parseSourceText(
      '{"mcpServers":{"a":{"command":"${BIN:-node}","args":["${workspaceFolder}/s.js"],"env":{"T":"${TOKEN}"}}}}',
      { ...json(), root: '/ws' },
      { TOKEN: 'abc' },
    );
    expect(r.servers.a).toEqual({ type: 'stdio', command: 'node', args: ['/ws/s.js'], env: { T: 'abc' } });
  });

  it('drops an entry with an unset variable with an issue naming server, field and line; others still load', () => {
    const text = ['{', '  "mcpServers": {', '    "ok": { "command": "node" },', '    "bad": {', '      "command": "node",', '      "env": { "API": "${MISSING_TOKEN}" }', '    }', '  }', '}'].join('\n');
    const r = parseSourceText(text, json(), {});
    expect(Object.keys(r.servers)).toEqual(['ok']);
    expect(r.fatal).toBe(false);
    expect(r.issues).toHaveLength(1);
    expect(r.issues[0]).toMatchObject({ file: '/ws/.mcp.json', server: 'bad', field: 'env.API', line: 6, code: 'config_unset_variable' });
    expect(r.issues[0]!.message).toContain('${MISSING_TOKEN}');
    expect(JSON.stringify(r.servers)).not.toContain('${');
  });
});

describe('parseSourceText: validation', () => {
  it('reports an invalid field with file, line, server and field while siblings load (JSON)', () => {
    const text = [
      '{',
      '  "mcpServers": {',
      '    "good": { "command": "node" },',
      '    "bad": {',
      '      "command": "node",',
      '      "args": "not-a-list"',
      '    },',
      '    "also-good": { "url": "http://localhost:1/mcp" }',
      '  }',
      '}',
    ].join('\n');
    const r = parseSourceText(text, json(), {});
    expect(Object.keys(r.servers).sort()).toEqual(['also-good', 'good']);
    expect(r.issues).toHaveLength(1);
    expect(r.issues[0]).toMatchObject({ file: '/ws/.mcp.json', line: 6, column: 7, server: 'bad', field: 'args', code: 'config_invalid' });
  });

  it('reports the line of the offending field in YAML', () => {
    const text = ['mcpServers:', '  good:', '    command: node', '  bad:', '    command: node', '    timeout: -5', '  other:', '    url: http://h/mcp'].join('\n');
    const r = parseSourceText(text, yml, {});
    expect(Object.keys(r.servers).sort()).toEqual(['good', 'other']);
    expect(r.issues).toEqual([expect.objectContaining({ file: yml.path, line: 6, server: 'bad', field: 'timeout' })]);
  });

  it.each([
    [{}, undefined, 'command'],
    [{ type: 'stdio', url: 'http://h' }, 'command', 'required'],
    [{ type: 'http', command: 'x' }, 'url', 'required'],
    [{ type: 'sdk' }, 'type', 'code'],
    [{ type: 'websocket', url: 'ws://h' }, 'type', 'stdio'],
    [{ url: 'not a url' }, 'url', 'valid URL'],
    [{ url: 'ftp://h/x' }, 'url', 'http'],
    [{ command: 'x', env: { A: { nested: 1 } } }, 'env.A', ''],
    [{ command: '' }, 'command', 'empty'],
    ['just a string', undefined, 'object'],
  ])('rejects %j (field %s)', (entry, field, words) => {
    const r = parseSourceText(JSON.stringify({ mcpServers: { s: entry, fine: { command: 'ok' } } }, null, 2), json(), {});
    expect(Object.keys(r.servers)).toEqual(['fine']);
    expect(r.issues.length).toBeGreaterThan(0);
    expect(r.issues[0]).toMatchObject({ server: 's', field });
    expect(r.issues[0]!.message).toContain(words);
    expect(r.issues[0]!.line).toBeGreaterThan(1);
  });

  it('a non-object servers block is an issue, not a crash', () => {
    const r = parseSourceText('{"mcpServers": [1, 2], "servers": {"a": {"command": "x"}}}', json(), {});
    expect(r.fatal).toBe(false);
    expect(r.servers).toEqual({ a: { type: 'stdio', command: 'x' } });
    expect(r.issues[0]?.message).toContain('mcpServers');
  });
});

describe('parseSourceText: syntax errors are fatal with file, line and column', () => {
  it('JSON', () => {
    const r = parseSourceText('{\n  "mcpServers": {\n    "a": { "command" "x" }\n  }\n}', json(), {});
    expect(r.fatal).toBe(true);
    expect(r.servers).toEqual({});
    expect(r.issues).toEqual([expect.objectContaining({ file: '/ws/.mcp.json', line: 3, column: 22 })]);
    expect(r.issues[0]!.message).toMatch(/JSON syntax error: colon expected/);
  });

  it('YAML', () => {
    const r = parseSourceText('mcpServers:\n  a:\n    args: [1,\n', yml, {});
    expect(r.fatal).toBe(true);
    expect(r.issues[0]).toMatchObject({ file: yml.path, line: expect.any(Number), column: expect.any(Number) });
    expect(r.issues[0]!.message).toMatch(/^YAML syntax error: /);
    expect(r.issues[0]!.message).not.toContain('\n');
  });

  it('a top level that is not an object', () => {
    expect(parseSourceText('[1]', json(), {})).toMatchObject({ fatal: true, issues: [{ line: 1, message: expect.stringContaining('object') }] });
  });
});

describe('parseSourceText: settings', () => {
  it('reads nested mcp.allowed / mcp.excluded', () => {
    const r = parseSourceText('{"mcp":{"allowed":["a","b"],"excluded":["c"]}}', json(), {});
    expect(r.settings).toEqual({ allowed: ['a', 'b'], excluded: ['c'] });
  });

  it('reads the flat dotted keys', () => {
    const r = parseSourceText('{"mcp.allowed":["a"],"mcp.excluded":[]}', json(), {});
    expect(r.settings).toEqual({ allowed: ['a'], excluded: [] });
  });

  it('keeps allowed: [] (deny all), distinct from absent', () => {
    expect(parseSourceText('{"mcp":{"allowed":[]}}', json(), {}).settings).toEqual({ allowed: [] });
    expect(parseSourceText('{"mcp":{}}', json(), {}).settings).toEqual({});
    expect('allowed' in parseSourceText('{"mcp":{}}', json(), {}).settings).toBe(false);
  });

  it('reports a malformed list with its line and ignores it', () => {
    const r = parseSourceText('{\n  "mcp": {\n    "excluded": "a"\n  }\n}', json(), {});
    expect(r.settings).toEqual({});
    expect(r.issues).toEqual([expect.objectContaining({ field: 'mcp.excluded', line: 3 })]);
  });

  it('reads settings from YAML too', () => {
    expect(parseSourceText('mcp:\n  allowed: []\n', yml, {}).settings).toEqual({ allowed: [] });
  });
});

describe('loadSource', () => {
  const tmp = tempDirAll('mcpr-load-');

  it('a missing file is exists: false with no issue', async () => {
    const r = await loadSource({ scope: 'user', path: join(tmp.path, 'nope.json') }, {});
    expect(r).toMatchObject({ exists: false, fatal: false, servers: {}, issues: [] });
  });

  it('reads a file from disk by extension', async () => {
    const file = join(tmp.path, 'servers.yaml');
    await writeFile(file, 'servers:\n  y:\n    command: node\n');
    const r = await loadSource({ scope: 'workspace', path: file }, {});
    expect(r).toMatchObject({ exists: true, fatal: false, servers: { y: { type: 'stdio', command: 'node' } } });
  });

  it('an unreadable path (a directory) is fatal, not a throw', async () => {
    const sub = join(tmp.path, 'adir.json');
    await mkdir(sub);
    const r = await loadSource({ scope: 'user', path: sub }, {});
    expect(r.fatal).toBe(true);
    expect(r.issues[0]?.message).toContain('cannot read');
  });
});
