import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configJsonSchema } from '../../src/config/json-schema.js';
import { parseSourceText } from '../../src/config/load.js';

const repo = resolve(import.meta.dirname, '../..');
const published = join(repo, 'schema', 'mcp-reconciler.schema.json');
const generated = `${JSON.stringify(configJsonSchema(), null, 2)}\n`;

describe('published JSON Schema', () => {
  it('schema/mcp-reconciler.schema.json matches the zod schema (run `npm run schema` to update)', () => {
    // The update path: `npm run schema` sets UPDATE_SCHEMA=1 and this test rewrites the file.
    if (process.env.UPDATE_SCHEMA === '1') writeFileSync(published, generated);
    expect(readFileSync(published, 'utf8')).toBe(generated);
  });

  it('describes entries with the validator\'s own fields and type spellings', () => {
    const schema = configJsonSchema() as { properties: { mcpServers: { additionalProperties: { properties: Record<string, { enum?: string[] }> } } } };
    const entry = schema.properties.mcpServers.additionalProperties.properties;
    expect(Object.keys(entry)).toEqual(expect.arrayContaining(['type', 'command', 'args', 'env', 'url', 'headers', 'timeout', 'includeTools', 'envFile']));
    expect(entry.type?.enum).toEqual(expect.arrayContaining(['stdio', 'sse', 'http', 'streamable-http']));
    expect(entry.type?.enum).not.toContain('sdk');
  });

  it('the loader ignores "$schema" (no issue, no server)', () => {
    const r = parseSourceText(JSON.stringify({ $schema: '../schema/mcp-reconciler.schema.json', mcpServers: { a: { command: 'x' } } }), { scope: 'project', path: '/ws/.mcp.json' }, {});
    expect(r.issues).toEqual([]);
    expect(Object.keys(r.servers)).toEqual(['a']);
  });
});
