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
import { createRequire } from 'node:module';
import { boundedMemo } from '../util/bounded-memo.js';

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

/** Counts by definition text, so a relisted, unchanged definition is not counted again. */
const countText = boundedMemo(50_000, (text: string) => countTokens(text));

/** Tokens of one tool definition (name + description + input schema as JSON), cached per definition. */
export function countDefinitionTokens(def: ToolDefinitionText): number {
  return countText(definitionText(def));
}

/**
 * Define `tokens` on `target` (before it is frozen): enumerable, so JSON and
 * spreads carry it, but counted only when first read.
 */
export function defineLazyTokens(target: object, compute: () => number): void {
  let value: number | undefined;
  Object.defineProperty(target, 'tokens', {
    enumerable: true,
    configurable: false,
    get: () => (value ??= compute()),
  });
}
