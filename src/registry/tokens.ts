/**
 * What a tool definition costs in a model's context: the token count of the
 * definition as a host sends it (name, description and input schema as
 * JSON), with OpenAI's `o200k_base` encoding (gpt-tokenizer). Other models'
 * tokenizers differ by some percent; the counts are for comparing servers and
 * budgets, not billing.
 *
 * The tokenizer (a 2 MB rank table) is loaded on the first count only, so a
 * host that never asks for tokens never pays for it.
 */
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';

/** The encoding every count uses. */
export const TOKEN_ENCODING = 'o200k_base';

/** What is counted: the definition as a model sees it. */
export interface ToolDefinitionText {
  name: string;
  description?: string | undefined;
  inputSchema: unknown;
}

type Counter = (text: string) => number;

let counter: Counter | undefined;

function loadCounter(): Counter {
  // Synchronous on purpose: `tokens` is a plain property of every tool. createRequire keeps
  // the tokenizer out of the bundles and off the import path until the first count.
  const require = createRequire(import.meta.url);
  const enc = require('gpt-tokenizer/encoding/o200k_base') as { encode(text: string, options?: { disallowedSpecial?: Set<string> }): number[] };
  // Special-token text inside a description is counted as plain text, never rejected.
  const options = { disallowedSpecial: new Set<string>() };
  return (text) => enc.encode(text, options).length;
}


/** The JSON a host sends for one tool: what {@link countDefinitionTokens} counts. */
export function definitionText(def: ToolDefinitionText): string {
  return JSON.stringify({ name: def.name, description: def.description ?? '', input_schema: def.inputSchema ?? {} });
}

/** Tokens of a text with {@link TOKEN_ENCODING}. */
export function countTokens(text: string): number {
  counter ??= loadCounter();
  return counter(text);
}

/** At most this many counts are kept (then all are forgotten): tool definitions are a small working set. */
const MAX_KNOWN = 50_000;

/** Counts by {@link tokenKey} of the definition text: counted here, or told by {@link seedDefinitionTokens}. */
const known = new Map<string, number>();

/**
 * The key a definition's count is kept (and cached, SPEC §12) under: a hash
 * of the text {@link countDefinitionTokens} counts, so a count never outlives
 * a change of name, description or schema.
 */
export function tokenKey(text: string): string {
  return createHash('sha256').update(text).digest('base64url').slice(0, 22);
}

/** Tokens of one tool definition (name + description + input schema as JSON), cached per definition. */
export function countDefinitionTokens(def: ToolDefinitionText): number {
  const text = definitionText(def);
  const key = tokenKey(text);
  let n = known.get(key);
  if (n === undefined) {
    n = countTokens(text);
    remember(key, n);
  }
  return n;
}

/** The count kept under `key` ({@link tokenKey}) if known already (counted or seeded): never loads the tokenizer. */
export function knownTokenCount(key: string): number | undefined {
  return known.get(key);
}

/** Whether any count is known (counted or seeded): until then every {@link knownTokenCount} is `undefined`. */
export function anyTokenCountKnown(): boolean {
  return known.size > 0;
}

/**
 * Counts known from elsewhere (the listing cache, SPEC §12), by
 * {@link tokenKey}: a definition with a known count is not tokenized again.
 * Anything but a non-negative integer is ignored.
 */
export function seedDefinitionTokens(counts: Readonly<Record<string, unknown>>): void {
  for (const [key, n] of Object.entries(counts)) {
    if (typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 && !known.has(key)) remember(key, n);
  }
}

function remember(key: string, n: number): void {
  if (known.size >= MAX_KNOWN) known.clear();
  known.set(key, n);
}

/** The getter of each `compute` (see {@link defineLazyTokens}). */
const getters = new WeakMap<object, () => number>();
/** Counts already taken, by the object read. */
const counted = new WeakMap<object, number>();

/**
 * Define `tokens` on `target` (before it is frozen): enumerable, so JSON and
 * spreads carry it, but counted only when first read (`compute(target)`).
 * Objects defined with the same `compute` share one getter, so V8 can give
 * them one hidden class: a getter of its own costs each object ~0.5 KB
 * (a map, its descriptors, two closures), per registered tool.
 */
export function defineLazyTokens<T extends object>(target: T, compute: (target: T) => number): void {
  let get = getters.get(compute);
  if (!get) {
    get = function (this: T): number {
      let n = counted.get(this);
      if (n === undefined) {
        n = compute(this);
        counted.set(this, n);
      }
      return n;
    };
    getters.set(compute, get);
  }
  Object.defineProperty(target, 'tokens', { enumerable: true, configurable: false, get });
}
