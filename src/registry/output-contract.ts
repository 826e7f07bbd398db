import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { JsonSchemaType } from '@modelcontextprotocol/client';
import { describeError } from '../errors.js';
import type { RegisteredTool } from './registry.js';
import { isPlainObject } from '../util/persist.js';
import { getOwn } from '../util/own.js';
import { newAjvValidator } from '../util/ajv.js';

/** `_meta` key under which a rejected result keeps what the tool returned. */
export const OUTPUT_CONTRACT_META_KEY = 'mcp-reconciler/output-contract';

/** What a rejected result carries under {@link OUTPUT_CONTRACT_META_KEY}. */
export interface OutputContractViolation {
  tool: string;
  /** One entry per violation, e.g. `/count must be integer`. */
  violations: string[];
  /** The tool's original `structuredContent` (absent when it sent none). */
  structuredContent?: Record<string, unknown>;
}

type Check = { validate: (value: unknown) => string[] } | { compileError: string };

// Keyed by the schema object: a registered tool keeps its listing's schema, so
// each schema compiles once, and a re-listed tool's old entry is collected.
const checks = new WeakMap<object, Check>();

/** Names of properties `data` has at `pointer` that the schema there forbids; undefined when unknown. */
function extraPropertiesAt(schema: unknown, data: unknown, pointer: string): string[] | undefined {
  const segments = pointer === '' ? [] : pointer.slice(1).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  let s = schema;
  let d = data;
  for (const seg of segments) {
    if (!isPlainObject(s)) return undefined;
    if (Array.isArray(d)) {
      s = s.items;
      d = d[Number(seg)];
    } else if (isPlainObject(d)) {
      // Own keys only: a field may be called `constructor`.
      s = isPlainObject(s.properties) ? getOwn(s.properties, seg) : undefined;
      d = getOwn(d, seg);
    } else return undefined;
  }
  // Only the plain case is named; patternProperties and combinators are left to the generic message.
  if (!isPlainObject(s) || s.additionalProperties !== false || s.patternProperties !== undefined || !isPlainObject(d)) return undefined;
  const known = new Set(isPlainObject(s.properties) ? Object.keys(s.properties) : []);
  const extra = Object.keys(d).filter((k) => !known.has(k));
  return extra.length > 0 ? extra : undefined;
}

/**
 * Split ajv's `errorsText` ("data/count must be integer, data must …") into
 * one entry per error with a JSON-pointer path, `(root)` for the top level,
 * naming the extra properties where ajv does not.
 */
function violationsOf(errorMessage: string, schema: unknown, data: unknown): string[] {
  return errorMessage.split(/, (?=data(?:\/|\s))/).map((part) => {
    const m = /^data(\S*) (.*)$/s.exec(part);
    if (!m) return part;
    const pointer = m[1] ?? '';
    const message = m[2] ?? '';
    let text = `${pointer === '' ? '(root)' : pointer} ${message}`;
    if (message === 'must NOT have additional properties') {
      const extra = extraPropertiesAt(schema, data, pointer);
      if (extra) text += ` (${extra.map((k) => `"${k}"`).join(', ')})`;
    }
    return text;
  });
}

function checkFor(schema: object): Check {
  let check = checks.get(schema);
  if (check) return check;
  try {
    // A fresh validator per schema: servers reuse `$id`s, and the SDK keys
    // compiled schemas by `$id` on its instance, so a shared one could check
    // one server's result against another server's schema. Compiling dominates
    // the cost anyway, and the instance goes away with the schema.
    const validator = newAjvValidator().getValidator(schema as JsonSchemaType);
    check = {
      validate: (value) => {
        const r = validator(value);
        return r.valid ? [] : violationsOf(r.errorMessage, schema, value);
      },
    };
  } catch (err) {
    check = { compileError: describeError(err) };
  }
  checks.set(schema, check);
  return check;
}

function contractError(result: CallToolResult, text: string, meta: OutputContractViolation): CallToolResult {
  const { structuredContent: _dropped, ...rest } = result;
  return {
    ...rest,
    isError: true,
    content: [{ type: 'text', text }, ...(result.content ?? [])],
    _meta: { ...(result._meta ?? {}), [OUTPUT_CONTRACT_META_KEY]: meta },
  };
}

/**
 * Enforce SPEC §6's output contract on one tool result. Returns `result`
 * itself when the tool has no `outputSchema`, when the result is an error
 * result, or when its `structuredContent` validates (required fields,
 * `additionalProperties: false`, types, formats). Otherwise returns an error
 * result (`isError: true`) whose first content item names the tool and the
 * violations, e.g. `mcp__s__t returned structuredContent that breaks its
 * outputSchema: /count must be integer`. The original content items follow
 * it, the invalid `structuredContent` is removed (so no later SDK client
 * rejects the error result again) and kept under `_meta[OUTPUT_CONTRACT_META_KEY]`
 * with the list of violations. A schema that cannot be compiled fails closed
 * the same way. Never throws.
 */
export function enforceOutputContract(tool: Pick<RegisteredTool, 'name' | 'outputSchema'>, result: CallToolResult): CallToolResult {
  const schema = tool.outputSchema;
  if (schema === undefined || result.isError === true) return result;
  const structured = result.structuredContent;
  if (structured === undefined || structured === null) {
    const violation = 'no structuredContent although it declares an outputSchema';
    return contractError(result, `${tool.name} returned ${violation}`, { tool: tool.name, violations: [violation] });
  }
  const check = checkFor(schema);
  if ('compileError' in check) {
    const violation = `its outputSchema cannot be compiled (${check.compileError}), so the result cannot be checked`;
    return contractError(result, `${tool.name} declares an outputSchema that cannot be compiled: ${check.compileError}`, {
      tool: tool.name,
      violations: [violation],
      structuredContent: structured,
    });
  }
  const violations = check.validate(structured);
  if (violations.length === 0) return result;
  return contractError(result, `${tool.name} returned structuredContent that breaks its outputSchema: ${violations.join('; ')}`, {
    tool: tool.name,
    violations,
    structuredContent: structured,
  });
}
