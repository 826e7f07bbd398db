/**
 * The common tool definition, checked without the schema library: a name,
 * title and description, an object input schema, and optionally an output
 * schema, annotations, `execution` (SDK servers list it on every tool) and
 * `_meta`. For those, this check gives exactly what the SDK's `Tool` schema
 * returns (same keys, same order, fresh objects where the schema makes
 * them) at a fraction of the allocation: the schema allocates ~9.5 KB per
 * tool, 2 MB of a 50-server start (docs/performance.md). Anything else
 * (icons, unknown keys, anything the schema might refuse) is left to the
 * schema: `plainTool` then returns undefined, never a verdict of its own.
 */
import type { Tool } from '@modelcontextprotocol/sdk/types.js';

/** Top-level keys this check handles, in the order the SDK's `Tool` schema emits them. */
const TOOL_KEYS = ['name', 'title', 'description', 'inputSchema', 'outputSchema', 'annotations', 'execution', '_meta'] as const;
const TOOL_KEY_SET: ReadonlySet<string> = new Set(TOOL_KEYS);
/** `annotations` fields, in schema order, with the type each must have. */
const ANNOTATION_KEYS = [
  ['title', 'string'],
  ['readOnlyHint', 'boolean'],
  ['destructiveHint', 'boolean'],
  ['idempotentHint', 'boolean'],
  ['openWorldHint', 'boolean'],
] as const;
const ANNOTATION_KEY_SET: ReadonlySet<string> = new Set(ANNOTATION_KEYS.map(([k]) => k));
/** `execution.taskSupport` values (SDK servers list `forbidden` on every tool). */
const TASK_SUPPORT: ReadonlySet<unknown> = new Set(['required', 'optional', 'forbidden']);
/** Deeper property schemas go to the schema library (and its own limits). */
const MAX_DEPTH = 32;

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v) as unknown;
  return (proto === Object.prototype || proto === null) && Object.getOwnPropertySymbols(v).length === 0;
}

/** What {@link jsonCopy} returns for a value that is not JSON (a sentinel: no wrapper object per value). */
const NOT_JSON = Symbol('not JSON');

/** A copy of a JSON value as the schema's JSON-value union returns it, or {@link NOT_JSON}. */
function jsonCopy(v: unknown, depth: number): unknown {
  if (typeof v === 'string' || typeof v === 'boolean' || v === null) return v;
  if (typeof v === 'number') return Number.isFinite(v) ? v : NOT_JSON;
  if (depth > MAX_DEPTH) return NOT_JSON;
  if (Array.isArray(v)) {
    const out: unknown[] = [];
    for (let i = 0; i < v.length; i++) {
      if (!(i in v)) return NOT_JSON;
      const c = jsonCopy(v[i], depth + 1);
      if (c === NOT_JSON) return NOT_JSON;
      out.push(c);
    }
    return out;
  }
  if (!isPlainObject(v)) return NOT_JSON;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(v)) {
    // JSON.parse makes "__proto__" an own key; assigning it would set a prototype instead.
    if (key === '__proto__') return NOT_JSON;
    const c = jsonCopy(v[key], depth + 1);
    if (c === NOT_JSON) return NOT_JSON;
    out[key] = c;
  }
  return out;
}

/**
 * Copy the keys of `v` not in `known` into `out` as they are (a schema's catch-all or loose
 * part); undefined when one is `undefined` or `__proto__`.
 */
function copyRest(v: Record<string, unknown>, out: Record<string, unknown>, known: readonly string[]): Record<string, unknown> | undefined {
  for (const key of Object.keys(v)) {
    if (known.includes(key)) continue;
    if (v[key] === undefined || key === '__proto__') return undefined;
    out[key] = v[key];
  }
  return out;
}

function inputSchemaCopy(v: unknown): Record<string, unknown> | undefined {
  if (!isPlainObject(v) || v.type !== 'object') return undefined;
  const out: Record<string, unknown> = { type: 'object' };
  if ('properties' in v) {
    if (!isPlainObject(v.properties)) return undefined;
    const copy = jsonCopy(v.properties, 0);
    if (copy === NOT_JSON) return undefined;
    out.properties = copy;
  }
  if ('required' in v) {
    const req = v.required;
    if (!Array.isArray(req)) return undefined;
    // A loop, not `every`: `every` skips the holes of a sparse array, which the schema refuses.
    for (let i = 0; i < req.length; i++) if (!(i in req) || typeof req[i] !== 'string') return undefined;
    out.required = [...(req as string[])];
  }
  // Other keywords ($schema, additionalProperties, …) pass through as they are.
  return copyRest(v, out, INPUT_SCHEMA_KEYS);
}
const INPUT_SCHEMA_KEYS = ['type', 'properties', 'required'];

/** The output schema as the schema's loose object returns it: `$schema` first, the rest as they are. */
function outputSchemaCopy(v: unknown): Record<string, unknown> | undefined {
  if (!isPlainObject(v)) return undefined;
  const out: Record<string, unknown> = {};
  if ('$schema' in v) {
    if (typeof v.$schema !== 'string') return undefined;
    out.$schema = v.$schema;
  }
  return copyRest(v, out, OUTPUT_SCHEMA_KEYS);
}
const OUTPUT_SCHEMA_KEYS = ['$schema'];

function executionCopy(v: unknown): Record<string, unknown> | undefined {
  if (!isPlainObject(v)) return undefined;
  for (const key of Object.keys(v)) if (key !== 'taskSupport') return undefined;
  if (!('taskSupport' in v)) return {};
  return TASK_SUPPORT.has(v.taskSupport) ? { taskSupport: v.taskSupport } : undefined;
}

function annotationsCopy(v: unknown): Record<string, unknown> | undefined {
  if (!isPlainObject(v)) return undefined;
  for (const key of Object.keys(v)) if (!ANNOTATION_KEY_SET.has(key)) return undefined;
  const out: Record<string, unknown> = {};
  for (const [key, type] of ANNOTATION_KEYS) {
    if (!(key in v)) continue;
    if (typeof v[key] !== type) return undefined;
    out[key] = v[key];
  }
  return out;
}

/**
 * `item` as the SDK's `Tool` schema would return it, when it is a plain
 * definition this check covers; undefined otherwise (check it with the schema).
 */
export function plainTool(item: unknown): Tool | undefined {
  if (!isPlainObject(item)) return undefined;
  for (const key of Object.keys(item)) if (!TOOL_KEY_SET.has(key) || item[key] === undefined) return undefined;
  if (!('inputSchema' in item)) return undefined;
  const out: Record<string, unknown> = {};
  // In the schema's key order, which is the order its result has.
  for (const key of TOOL_KEYS) {
    if (!(key in item)) continue;
    const copy = COPIERS[key](item[key]);
    if (copy === undefined) return undefined;
    out[key] = copy;
  }
  return 'name' in out ? (out as unknown as Tool) : undefined;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** How each field is checked and copied; undefined refuses the tool. */
const COPIERS: Record<(typeof TOOL_KEYS)[number], (v: unknown) => unknown> = {
  name: str,
  title: str,
  description: str,
  inputSchema: inputSchemaCopy,
  outputSchema: outputSchemaCopy,
  annotations: annotationsCopy,
  execution: executionCopy,
  _meta: (v) => (isPlainObject(v) && !Object.hasOwn(v, '__proto__') ? { ...v } : undefined),
};
