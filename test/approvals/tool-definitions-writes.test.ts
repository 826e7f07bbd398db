/**
 * The accepted tool definitions file (docs/tool-definitions.md) is written
 * off the event loop and coalesced: a first start records N servers' first
 * listings one after another, and the file ends with every one of them and
 * with the latest decision, whatever order the writes finish in.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { ToolDefinitions } from '../../src/approvals/tool-definitions.js';
import { tempDirEach } from '../helpers/temp-dir.js';

const tool = (name: string, description = `does ${name}`): Tool => ({ name, description, inputSchema: { type: 'object' } });

describe('accepted tool definitions on disk', () => {
  const dir = tempDirEach('mcp-defs-');

  it('50 first listings in a row: nothing blocks for the file, and after flush() it holds all 50 and the last acceptance', async () => {
    const cache = join(dir.path, 'cache', 'listings');
    const errors: unknown[] = [];
    const defs = new ToolDefinitions(cache, dir.path, (err) => errors.push(err));
    for (let i = 0; i < 50; i++) defs.review(`s${i}`, `fp${i}`, [tool('a')], true);
    // The reviews returned before any byte was written.
    expect(existsSync(join(dir.path, 'cache', 'tool-definitions'))).toBe(false);
    // s0's tools change, and the change is accepted while writes are under way.
    defs.review('s0', 'fp0', [tool('a', 'does a, differently'), tool('b')], true);
    expect(defs.accept('s0', 'fp0')?.map((t) => t.name)).toEqual(['a', 'b']);
    await defs.flush();
    expect(errors).toEqual([]);

    const folder = join(dir.path, 'cache', 'tool-definitions');
    expect(readdirSync(folder)).toHaveLength(1);
    const doc = JSON.parse(readFileSync(join(folder, readdirSync(folder)[0]!), 'utf8')) as { servers: Record<string, { accepted: Record<string, Tool> }> };
    expect(Object.keys(doc.servers)).toHaveLength(50);
    expect(Object.keys(doc.servers['s0\u0000fp0']!.accepted)).toEqual(['a', 'b']);
    // A new instance (the next run) reads the same decisions: no drift for s0's accepted tools.
    const next = new ToolDefinitions(cache, dir.path);
    expect(next.review('s0', 'fp0', [tool('a', 'does a, differently'), tool('b')], true).map((t) => t.name)).toEqual(['a', 'b']);
    expect(next.drift('s0', 'fp0')).toBeUndefined();
  });
});
