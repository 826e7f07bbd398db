import { expect } from 'vitest';

/** A schema's verdict on an input: accepted with the value it returns, or refused. */
export type SchemaVerdict = { ok: true; value: unknown } | { ok: false };

/**
 * A hand-written fast check either declined `input` (`fast` undefined: false)
 * or agrees with the schema it stands in for: the schema accepts the input and
 * returns the same value, same keys in the same order (true).
 */
export function agreesWithSchema(fast: unknown, bySchema: (input: unknown) => SchemaVerdict, input: unknown): boolean {
  if (fast === undefined) return false;
  const schema = bySchema(input);
  expect(schema.ok, `the schema refuses what the fast check accepted: ${JSON.stringify(input)}`).toBe(true);
  if (!schema.ok) return true;
  expect(fast).toStrictEqual(schema.value);
  expect(JSON.stringify(fast)).toBe(JSON.stringify(schema.value));
  return true;
}
