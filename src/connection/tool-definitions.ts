/**
 * One server's `tools/list` answer, tool by tool. The SDK's own listing
 * schema refuses a whole page when a single tool is malformed, which would
 * leave every tool of the server unusable; the listing is therefore
 * requested with {@link LenientListToolsResultSchema} and each tool is
 * checked on its own with the SDK's `Tool` schema (`specTypeSchemas.Tool`),
 * or, when it is a plain definition, by the cheaper equivalent in
 * plain-tool.ts.
 */
import { z } from 'zod';
import { specTypeSchemas, type StandardSchemaV1 } from '@modelcontextprotocol/client';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { plainTool } from './plain-tool.js';

/** A listed tool whose definition the MCP schema refuses, and why; it is not registered. */
export interface InvalidTool {
  /** Its name, or `tools[<index>]` when the name is not a string. */
  rawName: string;
  reason: string;
}

/** `tools/list` result with the tools left unchecked: a bad entry must not take the good ones down. */
export const LenientListToolsResultSchema = z.looseObject({ tools: z.array(z.unknown()), nextCursor: z.string().optional() });

/** At most this many schema problems are named per tool; the rest are counted. */
const MAX_PROBLEMS = 3;

function describeProblems(issues: readonly StandardSchemaV1.Issue[]): string {
  const shown = issues.slice(0, MAX_PROBLEMS).map((issue) => {
    const at = (issue.path ?? []).map((p) => String(typeof p === 'object' ? p.key : p)).join('.');
    return at ? `${at}: ${issue.message}` : issue.message;
  });
  const more = issues.length - shown.length;
  return shown.join('; ') + (more > 0 ? ` (and ${more} more)` : '');
}

/**
 * Split listed tools into valid ones (parsed with `ToolSchema`, exactly
 * what the strict listing would have returned for them) and invalid ones
 * with a reason naming the field and what the server should fix.
 * `offset` is the index of `raw[0]` in the whole listing (for nameless tools).
 */
export function checkToolDefinitions(raw: readonly unknown[], offset = 0): { tools: Tool[]; invalid: InvalidTool[] } {
  const tools: Tool[] = [];
  const invalid: InvalidTool[] = [];
  raw.forEach((item, i) => {
    const plain = plainTool(item);
    if (plain) {
      tools.push(plain);
      return;
    }
    const parsed = specTypeSchemas.Tool['~standard'].validate(item);
    if (!parsed.issues) {
      tools.push(parsed.value as unknown as Tool);
      return;
    }
    const name = item !== null && typeof item === 'object' ? (item as { name?: unknown }).name : undefined;
    const rawName = typeof name === 'string' ? name : `tools[${offset + i}]`;
    invalid.push({
      rawName,
      reason:
        `its definition is invalid (${describeProblems(parsed.issues)}); the server's other tools are registered. ` +
        `The server must list it with a valid definition (report it to its maintainer)` +
        (typeof name === 'string' ? `; "excludeTools": [${JSON.stringify(name)}] in its config silences this warning` : ''),
    });
  });
  return { tools, invalid };
}
