import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { enforceOutputContract, OUTPUT_CONTRACT_META_KEY, type OutputContractViolation } from '../../src/registry/output-contract.js';

const outputSchema: NonNullable<Tool['outputSchema']> = {
  type: 'object',
  properties: {
    count: { type: 'integer' },
    label: { type: 'string' },
    items: { type: 'array', items: { type: 'object', properties: { id: { type: 'string' } }, additionalProperties: false } },
  },
  required: ['count', 'label'],
  additionalProperties: false,
};
const tool = { name: 'mcp__s__t', outputSchema };

function result(structuredContent: Record<string, unknown> | undefined, extra: Partial<CallToolResult> = {}): CallToolResult {
  const base: CallToolResult = { content: [{ type: 'text', text: 'original text' }], ...extra };
  return structuredContent === undefined ? base : { ...base, structuredContent };
}

function textOf(r: CallToolResult): string {
  const first = r.content[0];
  return first?.type === 'text' ? first.text : '';
}

function metaOf(r: CallToolResult): OutputContractViolation {
  return r._meta?.[OUTPUT_CONTRACT_META_KEY] as OutputContractViolation;
}

describe('enforceOutputContract', () => {
  it('passes a valid result through unchanged', () => {
    const ok = result({ count: 2, label: 'two', items: [{ id: 'a' }] });
    expect(enforceOutputContract(tool, ok)).toBe(ok);
  });

  it('passes any result of a tool without outputSchema through', () => {
    const r = result({ anything: true });
    expect(enforceOutputContract({ name: 'mcp__s__free' }, r)).toBe(r);
    const none = result(undefined);
    expect(enforceOutputContract({ name: 'mcp__s__free' }, none)).toBe(none);
  });

  it('passes error results through, even with broken or missing structuredContent', () => {
    const err = result({ count: 'x' }, { isError: true });
    expect(enforceOutputContract(tool, err)).toBe(err);
    const bare = result(undefined, { isError: true });
    expect(enforceOutputContract(tool, bare)).toBe(bare);
  });

  it('a missing required field becomes an error result naming the tool and the field', () => {
    const r = enforceOutputContract(tool, result({ count: 1 }));
    expect(r.isError).toBe(true);
    expect(textOf(r)).toBe("mcp__s__t returned structuredContent that breaks its outputSchema: (root) must have required property 'label'");
  });

  it('an additional property is refused (additionalProperties: false) and named', () => {
    const r = enforceOutputContract(tool, result({ count: 1, label: 'one', debug: true }));
    expect(r.isError).toBe(true);
    expect(textOf(r)).toContain('(root) must NOT have additional properties ("debug")');
  });

  it('names additional properties inside nested objects by their path', () => {
    const r = enforceOutputContract(tool, result({ count: 1, label: 'one', items: [{ id: 'a' }, { id: 'b', secret: 1 }] }));
    expect(textOf(r)).toContain('/items/1 must NOT have additional properties ("secret")');
  });

  it('a wrong type names the path and the expected type', () => {
    const r = enforceOutputContract(tool, result({ count: 1.5, label: 'one' }));
    expect(r.isError).toBe(true);
    expect(textOf(r)).toBe('mcp__s__t returned structuredContent that breaks its outputSchema: /count must be integer');
  });

  it('lists every violation', () => {
    const r = enforceOutputContract(tool, result({ count: 'many', extra: 1 }));
    expect(metaOf(r).violations).toEqual(["(root) must have required property 'label'", '(root) must NOT have additional properties ("extra")', '/count must be integer']);
  });

  it('missing structuredContent is an error result', () => {
    const r = enforceOutputContract(tool, result(undefined));
    expect(r.isError).toBe(true);
    expect(textOf(r)).toBe('mcp__s__t returned no structuredContent although it declares an outputSchema');
  });

  it('keeps the original content after the message and the original structuredContent in _meta', () => {
    const original = result({ count: 'x', label: 'l' }, { _meta: { trace: 'abc' } });
    const r = enforceOutputContract(tool, original);
    expect(r.content.slice(1)).toEqual(original.content);
    expect(r.structuredContent).toBeUndefined();
    expect(r._meta?.trace).toBe('abc');
    expect(metaOf(r)).toEqual({ tool: 'mcp__s__t', violations: ['/count must be integer'], structuredContent: { count: 'x', label: 'l' } });
    // the input is not modified
    expect(original.structuredContent).toEqual({ count: 'x', label: 'l' });
    expect(original.isError).toBeUndefined();
  });

  it('checks each schema on its own even when two servers reuse one $id', () => {
    const a = { name: 'mcp__a__t', outputSchema: { $id: 'https://example.com/schemas/shared.json', type: 'object' as const, properties: { x: { type: 'string' } }, required: ['x'] } };
    const b = { name: 'mcp__b__t', outputSchema: { $id: 'https://example.com/schemas/shared.json', type: 'object' as const, properties: { y: { type: 'number' } }, required: ['y'] } };
    expect(enforceOutputContract(a, result({ x: 'ok' })).isError).toBeUndefined();
    expect(enforceOutputContract(b, result({ y: 1 })).isError).toBeUndefined();
    expect(textOf(enforceOutputContract(b, result({ x: 'ok' })))).toContain("required property 'y'");
    expect(enforceOutputContract(a, result({ x: 'ok' })).isError).toBeUndefined();
  });

  it('gives the same verdict on repeated calls with the same schema object (compiled once, cached)', () => {
    const bad = result({ count: 1 });
    expect(textOf(enforceOutputContract(tool, bad))).toBe(textOf(enforceOutputContract(tool, bad)));
    const ok = result({ count: 1, label: 'x' });
    expect(enforceOutputContract(tool, ok)).toBe(ok);
  });

  it('fails closed on a schema that cannot be compiled', () => {
    const broken = { name: 'mcp__s__broken', outputSchema: { type: 'object' as const, properties: { a: { $ref: '#/definitions/missing' } } } };
    const r = enforceOutputContract(broken, result({ a: 1 }));
    expect(r.isError).toBe(true);
    expect(textOf(r)).toContain('mcp__s__broken declares an outputSchema that cannot be compiled');
  });
});
