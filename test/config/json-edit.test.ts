/**
 * The JSON-with-comments splicer behind `add` / `remove`: everything but the
 * edited member stays byte-identical, and removing what was added gives the
 * original text back.
 */
import { describe, expect, it } from 'vitest';
import { addMember, deleteMember, readMember } from '../../src/config/writers/json-edit.js';
import { parseJsonc } from '../../src/config/parse.js';

const entry = { command: 'node', args: ['server.js', '--port', '${PORT}'], env: { TOKEN: '${TOKEN}' } };

const texts: Record<string, string> = {
  'comments and a trailing comment on the last member': `{
  // my servers
  "theme": "dark", /* inline */
  "mcpServers": {
    "a": { "command": "x" } // keep me here
  }
}
`,
  'trailing commas': `{
  "mcpServers": {
    "a": { "command": "x" },
    "b": { "command": "y" },
  },
}
`,
  'tabs and CRLF': '{\r\n\t"mcpServers": {\r\n\t\t"a": {\r\n\t\t\t"command": "x"\r\n\t\t}\r\n\t}\r\n}\r\n',
  'four-space indent, no final newline': '{\n    "mcpServers": {\n        "a": {"command": "x"}\n    }\n}',
  'empty servers object': '{\n  "mcpServers": {}\n}\n',
  'servers on one line': '{ "mcpServers": { "a": { "command": "x" } } }\n',
  'servers on one line with a trailing comma': '{ "mcpServers": { "a": { "command": "x" }, } }\n',
  'a BOM': '\uFEFF{\n  "mcpServers": {\n    "a": { "command": "x" }\n  }\n}\n',
  'only a comment inside the servers object': '{\n  "mcpServers": {\n    // none yet\n  }\n}\n',
};

describe('addMember / deleteMember', () => {
  it.each(Object.entries(texts))('%s: add then delete is byte-identical, and the add is read back', (_name, text) => {
    const added = addMember(text, ['mcpServers'], 'new', entry);
    expect(readMember(added, ['mcpServers'], 'new')).toEqual(entry);
    const parsed = parseJsonc(added.replace(/^\uFEFF/, ''));
    const before = parseJsonc(text.replace(/^\uFEFF/, ''));
    const others = (p: typeof parsed) => ('value' in p ? Object.keys((p.value as { mcpServers: Record<string, unknown> }).mcpServers) : []);
    expect(others(parsed)).toEqual([...others(before), 'new']);
    // Everything before the servers' last member is untouched.
    const firstMember = text.indexOf('"a"');
    if (firstMember > 0) expect(added.slice(0, firstMember)).toBe(text.slice(0, firstMember));
    expect(deleteMember(added, ['mcpServers'], 'new')).toBe(text);
  });

  it('keeps the last member\'s own comment on its line and matches the file\'s style', () => {
    const added = addMember(texts['comments and a trailing comment on the last member']!, ['mcpServers'], 'new', { command: 'n' });
    expect(added).toBe(`{
  // my servers
  "theme": "dark", /* inline */
  "mcpServers": {
    "a": { "command": "x" }, // keep me here
    "new": {
      "command": "n"
    }
  }
}
`);
    expect(addMember(texts['tabs and CRLF']!, ['mcpServers'], 'n', { command: 'n' })).toContain('\r\n\t\t"n": {\r\n\t\t\t"command": "n"\r\n\t\t}\r\n\t}');
  });

  it('creates the objects on the path, and a new file', () => {
    expect(addMember('', ['mcpServers'], 'a', { command: 'x' })).toBe('{\n  "mcpServers": {\n    "a": {\n      "command": "x"\n    }\n  }\n}\n');
    const claude = '{\n  "numStartups": 3,\n  "projects": {\n    "/other": {\n      "mcpServers": {}\n    }\n  }\n}\n';
    const added = addMember(claude, ['projects', '/w s', 'mcpServers'], 'a', { command: 'x' });
    expect(readMember(added, ['projects', '/w s', 'mcpServers'], 'a')).toEqual({ command: 'x' });
    expect(readMember(added, ['projects', '/other'], 'mcpServers')).toEqual({});
    expect(added.startsWith('{\n  "numStartups": 3,\n  "projects": {\n    "/other": {\n      "mcpServers": {}\n    },\n    "/w s": {')).toBe(true);
  });

  it('removes members in the middle and first without touching the others', () => {
    const text = '{\n  "s": {\n    "a": 1, // one\n    "b": 2, // two\n    "c": 3 // three\n  }\n}\n';
    expect(deleteMember(text, ['s'], 'b')).toBe('{\n  "s": {\n    "a": 1, // one\n    "c": 3 // three\n  }\n}\n');
    expect(deleteMember(text, ['s'], 'a')).toBe('{\n  "s": {\n    "b": 2, // two\n    "c": 3 // three\n  }\n}\n');
    expect(deleteMember(text, ['s'], 'c')).toBe('{\n  "s": {\n    "a": 1, // one\n    "b": 2 // two\n  }\n}\n');
    expect(deleteMember('{ "s": { "a": 1, "b": 2 } }', ['s'], 'a')).toBe('{ "s": { "b": 2 } }');
    expect(deleteMember(text, ['s'], 'zz')).toBeUndefined();
    expect(deleteMember(text, ['nope'], 'a')).toBeUndefined();
  });

  it('refuses what it cannot edit safely', () => {
    expect(() => addMember('{ "mcpServers": [] }', ['mcpServers'], 'a', {})).toThrow(/mcpServers is a array, not an object|mcpServers is an? array/);
    expect(() => addMember('{ "mcpServers": { "a": {} } }', ['mcpServers'], 'a', {})).toThrow(/"a" is already there/);
    expect(() => addMember('{ "mcpServers": { ', ['mcpServers'], 'a', {})).toThrow(/JSON syntax error/);
  });
});
