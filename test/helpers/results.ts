/** Reading what a call gave back: a tool result's text, the error a promise rejects with. */
import { expect } from 'vitest';
import { McpReconcilerError } from '../../src/errors.js';

/** The text of a tool result's first text block. */
export function firstText(result: { content?: unknown }): string {
  const content = result.content as Array<{ type: string; text?: string }> | undefined;
  const block = content?.find((c) => c.type === 'text');
  if (block?.text === undefined) throw new Error(`no text content in ${JSON.stringify(result)}`);
  return block.text;
}

/** The `McpReconcilerError` a promise rejects with; fails (saying `expected`) when it resolves, and when it throws something else. */
export async function rejection(promise: Promise<unknown>, expected = 'expected a rejection'): Promise<McpReconcilerError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(McpReconcilerError);
    return err as McpReconcilerError;
  }
  throw new Error(expected);
}
