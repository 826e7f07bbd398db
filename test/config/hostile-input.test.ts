/**
 * Config files written to hurt (docs/library.md, "Hostile input"): nesting that
 * overflows recursive parsers, files too large to parse, timeouts that
 * overflow Node's timer, and server names that are Object.prototype members.
 * Each must load or fail as issues for that file only, never throw.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assemble } from '../../src/config/assemble.js';
import { expandString } from '../../src/config/expand.js';
import { loadSource, parseSourceText } from '../../src/config/load.js';
import { MAX_CONFIG_BYTES, MAX_CONFIG_DEPTH } from '../../src/config/parse.js';
import { parseServerConfig } from '../../src/config/schema.js';
import type { ConfigSource } from '../../src/config/sources.js';

const json: ConfigSource = { scope: 'project', path: '/ws/.mcp.json' };
const yml: ConfigSource = { scope: 'workspace', path: '/ws/.app/mcp.servers.yml' };
const LEVELS = 10_000;

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mcpr-hostile-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function expectTooDeep(r: ReturnType<typeof parseSourceText>, file: string): void {
  expect(r.fatal).toBe(true);
  expect(r.servers).toEqual({});
  expect(r.issues).toHaveLength(1);
  expect(r.issues[0]).toMatchObject({ file, code: 'config_invalid' });
  expect(r.issues[0]!.message).toContain(`nested more than ${MAX_CONFIG_DEPTH} levels deep`);
}

describe('nesting depth', () => {
  it('JSON 10 000 levels deep inside a server entry is one fatal issue, not a stack overflow', () => {
    const text = `{"mcpServers":{"x":{"command":"a","args":${'['.repeat(LEVELS)}${']'.repeat(LEVELS)}}}}`;
    const r = parseSourceText(text, json, {});
    expectTooDeep(r, json.path);
    // Column 42 opens level 4; the first bracket past the limit is pointed at.
    expect(r.issues[0]).toMatchObject({ line: 1, column: 42 + (MAX_CONFIG_DEPTH + 1 - 4) });
  });

  it('JSON with comments (the tolerant, recursive parser) 10 000 levels deep is one fatal issue', () => {
    const text = `// comment\n{"a":${'{"a":'.repeat(LEVELS)}1${'}'.repeat(LEVELS)},}`;
    expectTooDeep(parseSourceText(text, json, {}), json.path);
  });

  it('plain JSON and JSON with a comment draw the line at the same level', () => {
    // The root object, `mcpServers` and `x` are three levels; the rest are arrays in a key the schema ignores.
    const at = (levels: number, comment: string) =>
      `${comment}{"mcpServers":{"x":{"command":"a","note":${'['.repeat(levels - 3)}${']'.repeat(levels - 3)}}}}`;
    for (const comment of ['', '// tolerant parser\n']) {
      const ok = parseSourceText(at(MAX_CONFIG_DEPTH, comment), json, {});
      // Loaded; the only issue is the warning about the key the schema does not know.
      expect(ok.issues.map((i) => i.severity)).toEqual(['warning']);
      expect(ok.servers.x?.command).toBe('a');
      const deep = parseSourceText(at(MAX_CONFIG_DEPTH + 1, comment), json, {});
      expectTooDeep(deep, json.path);
      expect(deep.issues[0]).toMatchObject({ line: comment ? 2 : 1, column: 41 + (MAX_CONFIG_DEPTH + 1 - 3) });
    }
  });

  it('brackets inside strings and comments do not count as nesting', () => {
    const deepText = '['.repeat(200);
    const text = `{ /* ${deepText} */ "mcpServers": { "a": { "command": "x", "args": ["${deepText}"] } } // ${deepText}\n}`;
    const r = parseSourceText(text, json, {});
    expect(r.issues).toEqual([]);
    expect(r.servers.a?.args).toEqual([deepText]);
  });

  it('YAML 10 000 levels deep (flow and block) is one fatal issue', () => {
    const flow = `mcpServers:\n  x:\n    command: a\n    args: ${'['.repeat(LEVELS)}${']'.repeat(LEVELS)}\n`;
    expectTooDeep(parseSourceText(flow, yml, {}), yml.path);
    const block = `mcpServers:\n  x:\n    command: a\n    args:\n      ${'- '.repeat(LEVELS)}deep\n`;
    expectTooDeep(parseSourceText(block, yml, {}), yml.path);
  });

  it('YAML aliases that stack shallow anchors into a deep value are refused too', () => {
    const lines = [`a0: &a0 ${'['.repeat(40)}1${']'.repeat(40)}`];
    for (let i = 1; i < 5; i++) lines.push(`a${i}: &a${i} ${'['.repeat(40)}*a${i - 1}${']'.repeat(40)}`);
    expectTooDeep(parseSourceText(lines.join('\n'), yml, {}), yml.path);
  });

  it('a file at the depth limit still loads', () => {
    // mcpServers (2) → x (3) → env … : pad with an unknown key to exactly the limit.
    const text = `{"mcpServers":{"x":{"command":"a"}},"pad":${'['.repeat(MAX_CONFIG_DEPTH - 1)}${']'.repeat(MAX_CONFIG_DEPTH - 1)}}`;
    const r = parseSourceText(text, json, {});
    expect(r.fatal).toBe(false);
    expect(Object.keys(r.servers)).toEqual(['x']);
  });

  it('loadSource reports a deep file as a fatal issue for that file only', async () => {
    const file = join(dir, 'deep.json');
    await writeFile(file, `{"mcpServers":{"x":{"command":"a","env":${'{"k":'.repeat(LEVELS)}1${'}'.repeat(LEVELS)}}}}`);
    const r = await loadSource({ scope: 'cli', path: file }, {});
    expect(r).toMatchObject({ exists: true, fatal: true, servers: {} });
    expect(r.issues).toEqual([expect.objectContaining({ file, message: expect.stringContaining('levels deep') })]);
  });
});

describe('file size', () => {
  const nineMb = `mcpServers: {x: {command: a, args: [${'"aaaaaaaa", '.repeat(800_000)}]}}`;

  it('a 9 MB one-line YAML file is refused by size before it is parsed', async () => {
    expect(Buffer.byteLength(nineMb)).toBeGreaterThan(9 * 1024 * 1024);
    const file = join(dir, 'huge.yml');
    await writeFile(file, nineMb);
    const r = await loadSource({ scope: 'workspace', path: file }, {});
    expect(r).toMatchObject({ fatal: true, servers: {} });
    expect(r.issues).toEqual([expect.objectContaining({ file, code: 'config_invalid' })]);
    expect(r.issues[0]!.message).toMatch(/the file is 9\.\d MB, over the 1\.0 MB limit for a config file, so it was not read/);
  });

  it('text over the limit handed in directly (inline --config) is refused the same way', () => {
    const r = parseSourceText(nineMb, yml, {});
    expect(r.fatal).toBe(true);
    expect(r.issues[0]!.message).toContain('over the 1.0 MB limit');
  });

  it('counts bytes, not characters, and accepts a file right at the limit', () => {
    // n two-byte characters, plus one ASCII one to hit an exact byte count.
    const pad = (n: number, odd = false) => `{"mcpServers":{"x":{"command":"a"}},"pad":"${'é'.repeat(n)}${odd ? 'a' : ''}"}`;
    const room = MAX_CONFIG_BYTES - Buffer.byteLength(pad(0));
    const atLimit = pad(Math.floor(room / 2), room % 2 === 1);
    expect(Buffer.byteLength(atLimit)).toBe(MAX_CONFIG_BYTES);
    expect(parseSourceText(atLimit, json, {}).fatal).toBe(false);
    // Fewer characters than the limit, but two bytes each.
    const over = pad(Math.floor(room / 2) + 1);
    expect(over.length).toBeLessThan(MAX_CONFIG_BYTES);
    expect(parseSourceText(over, json, {}).fatal).toBe(true);
  });
});

describe('timeout bounds', () => {
  it('"timeout": 1e10 (past Node\'s timer range, which fires at once) is an issue naming the field', () => {
    const r = parseSourceText('{"mcpServers":{"slow":{"command":"a","timeout":1e10},"ok":{"command":"b","timeout":86400000}}}', json, {});
    expect(Object.keys(r.servers)).toEqual(['ok']);
    expect(r.issues).toEqual([
      expect.objectContaining({ server: 'slow', field: 'timeout', message: expect.stringContaining('at most 86400000 ms (24 hours)') }),
    ]);
  });

  it('YAML .inf and runtime servers are bounded the same way', () => {
    const r = parseSourceText('mcpServers:\n  s:\n    command: a\n    timeout: .inf\n', yml, {});
    expect(r.issues).toEqual([expect.objectContaining({ server: 's', field: 'timeout', line: 4 })]);
    expect(() => parseServerConfig('rt', { command: 'a', timeout: 2 ** 31 })).toThrow(/server "rt" field "timeout": must be at most 86400000/);
  });
});

describe('server names that are Object.prototype members', () => {
  const names = ['constructor', 'toString', '__proto__', 'hasOwnProperty'];

  it('JSON: every one loads as an ordinary server and reaches the desired map', () => {
    const text = JSON.stringify({ mcpServers: Object.fromEntries(names.map((n) => [n, { command: `run-${n}` }])) });
    const r = parseSourceText(text, json, {});
    expect(r.issues).toEqual([]);
    expect(Object.keys(r.servers).sort()).toEqual([...names].sort());
    expect(Object.getPrototypeOf(r.servers)).toBe(Object.prototype);
    const { desired } = assemble([r]);
    expect(Object.keys(desired).sort()).toEqual([...names].sort());
    expect(desired['__proto__']).toMatchObject({ name: '__proto__', config: { command: 'run-__proto__' } });
  });

  it('YAML: the same', () => {
    const text = ['mcpServers:', ...names.flatMap((n) => [`  ${n}:`, `    command: run-${n}`])].join('\n');
    const r = parseSourceText(text, yml, {});
    expect(r.issues).toEqual([]);
    expect(Object.keys(r.servers).sort()).toEqual([...names].sort());
  });

  it('an invalid entry under such a name is reported under its name, not dropped', () => {
    const r = parseSourceText('{"mcpServers":{"__proto__":{"command":""},"toString":{}}}', json, {});
    expect(r.servers).toEqual({});
    expect(r.issues.map((i) => i.server).sort()).toEqual(['__proto__', 'toString']);
  });

  it('env keys and ${VAR} names are own properties only', () => {
    const r = parseSourceText('{"mcpServers":{"a":{"command":"x","env":{"__proto__":"1","constructor":"2"}}}}', json, {});
    expect(Object.keys(r.servers.a!.env!)).toEqual(['__proto__', 'constructor']);
    // Unset, not Object.prototype.toString's source text.
    expect(expandString('${toString}', { env: {} }).missing).toEqual(['toString']);
    expect(expandString('${constructor:-d}', { env: {}, builtins: { workspaceFolder: '/w' } }).value).toBe('d');
  });
});
