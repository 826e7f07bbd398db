/** Shared by the resource tests (connection, controller, gateway). */
import type { ReadResourceResult } from '@modelcontextprotocol/sdk/types.js';

/** The text of a `resources/read` result's first content (fails when it is a blob or missing). */
export function resourceText(result: Pick<ReadResourceResult, 'contents'>): string {
  const first = result.contents[0];
  if (!first || !('text' in first) || typeof first.text !== 'string') throw new Error(`no text content in ${JSON.stringify(result)}`);
  return first.text;
}
