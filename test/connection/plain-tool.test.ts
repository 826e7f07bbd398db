import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { agreesWithSchema, type SchemaVerdict } from '../helpers/schema-agreement.js';
import { specTypeSchemas } from '@modelcontextprotocol/client';
import { plainTool } from '../../src/connection/plain-tool.js';
import { checkToolDefinitions } from '../../src/connection/tool-definitions.js';

/** What the SDK's `Tool` schema makes of `item`. */
function bySchema(item: unknown): SchemaVerdict {
  const r = specTypeSchemas.Tool['~standard'].validate(item) as { value?: unknown; issues?: unknown };
  return r.issues ? { ok: false } : { ok: true, value: r.value };
}

/** The fast check either declines, or agrees with the schema: valid, same keys, same order, same values. */
function expectAgreement(item: unknown): boolean {
  return agreesWithSchema(plainTool(item), bySchema, item);
}

const corpus = (JSON.parse(readFileSync(new URL('../../bench/tool-corpus.json', import.meta.url), 'utf8')) as { tools: unknown[] }[]).flatMap((s) => s.tools);

describe('plainTool', () => {
  it("gives the SDK schema's own result for every tool of the published servers it covers, and covers most of them", () => {
    let covered = 0;
    for (const tool of corpus) if (expectAgreement(tool)) covered++;
    // Real definitions are plain (output schemas, icons and execution hints go through the schema: next test).
    expect(covered).toBeGreaterThan(corpus.length * 0.9);
  });

  it('declines what it does not cover, whatever the schema says of it', () => {
    const base = { name: 'echo', description: 'Echo', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } };
    const declined: unknown[] = [
      null,
      [],
      'echo',
      { ...base, extra: 1 }, // the schema strips unknown keys
      { ...base, description: undefined },
      { ...base, name: 42 },
      { ...base, inputSchema: { type: 'array' } },
      { ...base, inputSchema: { ...base.inputSchema, properties: { n: { maximum: Infinity } } } },
      { ...base, inputSchema: { ...base.inputSchema, properties: { when: new Date(0) } } },
      { ...base, inputSchema: { ...base.inputSchema, required: ['text', 1] } },
      { ...base, inputSchema: { ...base.inputSchema, required: new Array(2) } },
      { ...base, annotations: { readOnlyHint: true, audience: 'x' } },
      { ...base, annotations: { readOnlyHint: 'yes' } },
      { ...base, icons: [{ src: 'https://example.com/i.png' }] },
      { ...base, outputSchema: { $schema: 7 } },
      { ...base, outputSchema: { type: 'object', title: undefined } },
      { ...base, execution: { taskSupport: 'sometimes' } },
      { ...base, execution: { taskSupport: 'optional', retries: 1 } },
      JSON.parse('{"name":"p","inputSchema":{"type":"object","properties":{"__proto__":{"type":"string"}}}}'),
      JSON.parse('{"name":"p","inputSchema":{"type":"object"},"_meta":{"__proto__":1}}'),
      { ...base, inputSchema: { ...base.inputSchema, properties: { deep: Array.from({ length: 40 }).reduce<unknown>((v) => ({ v }), 1) } } },
      { ...base, inputSchema: { ...base.inputSchema, properties: { [Symbol('s')]: 1, a: 1 } } },
    ];
    for (const item of declined) expect(plainTool(item), JSON.stringify(item) ?? String(item)).toBeUndefined();
  });

  it('agrees with the schema on plain definitions with every field it covers', () => {
    const accepted: unknown[] = [
      { name: 'a', inputSchema: { type: 'object' } },
      // What servers built with the SDK list (test/fixtures/basic-server.ts).
      {
        name: 'echo',
        description: 'Echoes its text argument.',
        inputSchema: { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
        execution: { taskSupport: 'forbidden' },
      },
      { name: 'o', inputSchema: { type: 'object' }, execution: {}, outputSchema: { type: 'object', $schema: 'x', properties: { r: { type: 'number' } } } },
      Object.assign(Object.create(null) as object, { name: 'n', inputSchema: { type: 'object' } }),
      {
        _meta: { 'x/y': { z: [1, 'two', null] }, u: undefined },
        annotations: { openWorldHint: false, title: 'T', readOnlyHint: true },
        inputSchema: {
          additionalProperties: false,
          required: [],
          $schema: 'http://json-schema.org/draft-07/schema#',
          properties: { a: { type: 'array', items: { anyOf: [{ type: 'number', minimum: -0 }, { const: true }] } }, b: {} },
          type: 'object',
        },
        description: 'd',
        title: 't',
        name: 'full',
      },
    ];
    for (const item of accepted) expect(expectAgreement(item)).toBe(true);
  });

  it('never accepts what the schema refuses, nor differs from it, over generated definitions', () => {
    // A small deterministic generator (no dependency): mixes valid and invalid shapes at every level.
    let seed = 12345;
    const rnd = (n: number): number => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 16) % n;
    const atoms = [0, -0, 1.5, 'x', '', true, false, null, undefined, Infinity, NaN, new Date(0)];
    const value = (depth: number): unknown => {
      const k = rnd(depth > 3 ? 1 : 4);
      if (k === 0) return atoms[rnd(atoms.length)];
      if (k === 1) return Array.from({ length: rnd(3) }, () => value(depth + 1));
      const o: Record<string, unknown> = {};
      for (let i = rnd(4); i > 0; i--) o[['type', 'a', 'items', 'description'][rnd(4)]!] = value(depth + 1);
      return o;
    };
    const maybe = (v: () => unknown): unknown => (rnd(8) === 0 ? value(0) : v());
    let accepted = 0;
    for (let i = 0; i < 3000; i++) {
      const item: Record<string, unknown> = {};
      if (rnd(10) > 0) item.name = maybe(() => `t${i}`);
      if (rnd(2)) item.title = maybe(() => 'T');
      if (rnd(2)) item.description = maybe(() => 'D');
      if (rnd(10) > 0) {
        const schema: Record<string, unknown> = { type: rnd(8) ? 'object' : 'array' };
        if (rnd(2)) schema.properties = maybe(() => ({ ...(rnd(2) ? { p: value(1) } : {}), q: { type: 'string' } }));
        if (rnd(2)) schema.required = maybe(() => ['p']);
        if (rnd(3) === 0) schema.additionalProperties = value(1);
        item.inputSchema = schema;
      }
      if (rnd(3) === 0) item.annotations = maybe(() => ({ readOnlyHint: rnd(2) === 0, ...(rnd(2) ? { title: 'A' } : {}) }));
      if (rnd(4) === 0) item._meta = maybe(() => ({ k: value(1) }));
      if (rnd(4) === 0) item.outputSchema = maybe(() => ({ type: 'object', ...(rnd(2) ? { $schema: 'x' } : {}), properties: { r: value(1) } }));
      if (rnd(3) === 0) item.execution = maybe(() => (rnd(2) ? { taskSupport: ['required', 'optional', 'forbidden', 'never'][rnd(4)] } : {}));
      if (expectAgreement(item)) accepted++;
    }
    // The generator reaches both sides of the fast check.
    expect(accepted).toBeGreaterThan(100);
    expect(accepted).toBeLessThan(3000);
  });

  it('leaves checkToolDefinitions its verdicts: plain, schema-only and invalid tools side by side', () => {
    const { tools, invalid } = checkToolDefinitions([
      { name: 'plain', inputSchema: { type: 'object' } },
      { name: 'withIcon', inputSchema: { type: 'object' }, icons: [{ src: 'https://example.com/i.png', theme: 'dark' }] },
      { name: 'bad', inputSchema: { type: 'string' } },
    ]);
    expect(tools.map((t) => t.name)).toEqual(['plain', 'withIcon']);
    expect(tools[1]!.icons).toEqual([{ src: 'https://example.com/i.png', theme: 'dark' }]);
    expect(invalid.map((t) => t.rawName)).toEqual(['bad']);
  });
});
