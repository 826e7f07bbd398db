import { describe, expect, it } from 'vitest';
import {
  MAX_REGISTERED_NAME_LENGTH,
  NAME_HASH_LENGTH,
  REGISTERED_NAME_PREFIX,
  registeredPromptName,
  registeredToolName,
  sanitiseNamePart,
} from '../../src/registry/naming.js';

const VALID = /^[A-Za-z0-9_-]{1,64}$/;

describe('registeredToolName', () => {
  it('joins prefix, server and tool', () => {
    expect(registeredToolName('github', 'create_issue')).toBe('mcp__github__create_issue');
    expect(REGISTERED_NAME_PREFIX).toBe('mcp__');
  });

  it.each([
    ['my.server', 'do it/now', 'mcp__my_server__do_it_now'],
    ['café', 'x:y', 'mcp__caf___x_y'],
    ['srv', 'a-b_C9', 'mcp__srv__a-b_C9'],
    ['@scope/pkg', 'tool.name', 'mcp___scope_pkg__tool_name'],
  ])('sanitises %s / %s to %s', (server, tool, expected) => {
    expect(registeredToolName(server, tool)).toBe(expected);
    expect(expected).toMatch(VALID);
  });

  it('keeps a name of exactly 64 characters whole', () => {
    const tool = 't'.repeat(MAX_REGISTERED_NAME_LENGTH - 'mcp__s__'.length);
    const name = registeredToolName('s', tool);
    expect(name).toBe(`mcp__s__${tool}`);
    expect(name).toHaveLength(64);
  });

  it('cuts a longer name to 64 characters with a hash suffix', () => {
    const tool = 't'.repeat(MAX_REGISTERED_NAME_LENGTH - 'mcp__s__'.length + 1);
    const name = registeredToolName('s', tool);
    expect(name).toHaveLength(64);
    expect(name).toMatch(VALID);
    expect(name).toMatch(new RegExp(`^mcp__s__t+_[0-9a-f]{${NAME_HASH_LENGTH}}$`));
    expect(name.startsWith(`mcp__s__${tool}`.slice(0, 64 - NAME_HASH_LENGTH - 1))).toBe(true);
  });

  it('gives the same name for the same input, across runs', () => {
    const server = 'a-very-long-server-name-for-testing';
    const tool = 'a-very-long-tool-name-that-goes-past-the-cap';
    expect(registeredToolName(server, tool)).toBe(registeredToolName(server, tool));
    // Pinned: a change of the hash would rename every long tool a host knows.
    expect(registeredToolName(server, tool)).toBe('mcp__a-very-long-server-name-for-testing__a-very-long-t_451f1beb');
  });

  it('does not collide for two long names that share a prefix', () => {
    const shared = 'x'.repeat(80);
    const a = registeredToolName('server', `${shared}_alpha`);
    const b = registeredToolName('server', `${shared}_beta`);
    expect(a).not.toBe(b);
    expect(a.slice(0, 55)).toBe(b.slice(0, 55));
  });

  it('hashes the unsanitised name, so long names differing only in replaced characters differ', () => {
    const long = 'y'.repeat(80);
    expect(registeredToolName('s', `a.${long}`)).not.toBe(registeredToolName('s', `a_${long}`));
  });

  it('tells apart long (server, tool) pairs whose joined text is the same', () => {
    const long = 'z'.repeat(80);
    expect(registeredToolName('a', `b__${long}`)).not.toBe(registeredToolName('a__b', long));
  });

  it('maps short names differing only in replaced characters to the same name (the registry rejects that)', () => {
    expect(registeredToolName('s', 'a.b')).toBe(registeredToolName('s', 'a_b'));
  });

  it('sanitiseNamePart leaves allowed characters alone', () => {
    expect(sanitiseNamePart('Az09_-')).toBe('Az09_-');
    expect(sanitiseNamePart('a b\tc')).toBe('a_b_c');
  });
});

describe('registeredPromptName', () => {
  it('uses the same scheme as tools', () => {
    expect(registeredPromptName('my.server', 'review code')).toBe('mcp__my_server__review_code');
    const long = 'p'.repeat(100);
    expect(registeredPromptName('s', long)).toBe(registeredToolName('s', long));
    expect(registeredPromptName('s', long)).toHaveLength(64);
  });
});
