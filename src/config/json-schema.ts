/**
 * The JSON Schema of mcp-reconciler's own config files (`.mcp.json`,
 * `.mcp-reconciler/settings.json`, `mcp.servers.yml`, the user settings),
 * generated from the zod schema the loader validates with. Published as
 * `schema/mcp-reconciler.schema.json`; `test/config/json-schema.test.ts`
 * fails when that file is out of date (`npm run schema` rewrites it).
 */
import { z } from 'zod';
import { schemaParts } from './schema.js';
import { LOG_LEVELS } from '../../machines/types.js';

const names = z.array(z.string());
const logLevel = z.enum(LOG_LEVELS);

/** Fields the default format reads besides the common ones (other hosts' spellings, see `formats.ts`). */
const hostFields = z.object({
  httpUrl: z.string().min(1).optional().describe('Gemini CLI spelling of a streamable-HTTP `url`.'),
  envFile: z.string().min(1).optional().describe('A dotenv file loaded into `env`; `env` wins over it.'),
  disabledTools: names.optional().describe('Tools to hide; joins `excludeTools`.'),
  alwaysAllow: names.optional().describe('Tools the host may run without asking (metadata; the host decides).'),
  transport: z.union([z.string(), z.record(z.string(), z.unknown())]).optional().describe('A transport name, or an object with `type`, `url`, `headers`; read as those fields.'),
});

function fileSchema() {
  // Strict here only: unknown keys get a loader warning, so editors should flag them too.
  const entry = schemaParts.entry.extend(hostFields.shape).strict();
  const servers = z.record(z.string(), entry);
  return z
    .object({
      $schema: z.string().optional(),
      mcpServers: servers.optional().describe('Servers by name (Claude Code, Cursor, Gemini spelling).'),
      servers: servers.optional().describe('Servers by name (VS Code spelling).'),
      mcp: z
        .object({
          allowed: names.optional().describe('Only these servers may connect; `[]` denies all.'),
          excluded: names.optional().describe('These servers must not connect.'),
          pinToolDefinitions: z.boolean().optional().describe("Hold back every server's tool definition changes until approved (a server's own pinToolDefinitions wins)."),
          pinnedTools: names.optional().describe("Raw tool names every server keeps in the tool list under a budget (a server's own pinnedTools wins)."),
          logLevel: logLevel.optional().describe("The logging/setLevel sent to every server that declares logging (a server's own logLevel wins)."),
        })
        .optional(),
      profiles: z
        .record(
          z.string(),
          z
            .object({
              servers: names.optional().describe('Servers this profile keeps ("*" matches any run of characters); absent keeps all.'),
              tools: names.optional().describe('Registered tool names this profile keeps, e.g. "mcp__github__*"; absent keeps all tools of its servers.'),
            })
            .strict(),
        )
        .optional()
        .describe('Named sets of servers and tools; `--profile NAME` / `setProfile()` uses one, which only narrows what gating allows.'),
      permissions: z
        .object({
          allow: names.optional().describe('Registered tool names ("*" matches anything) that run without asking.'),
          ask: names.optional().describe('Registered tool names that ask before each call.'),
          deny: names.optional().describe('Registered tool names that are hidden: never registered, never callable.'),
        })
        .strict()
        .optional()
        .describe('Per-tool policy over registered names (mcp__<server>__<tool>); every file\'s deny list applies.'),
      'mcp.allowed': names.optional(),
      'mcp.excluded': names.optional(),
      'mcp.pinToolDefinitions': z.boolean().optional(),
      'mcp.pinnedTools': names.optional(),
      'mcp.logLevel': logLevel.optional(),
    })
    .describe('mcp-reconciler config file (SPEC §2).');
}

/** The JSON Schema (draft-07) of an mcp-reconciler config file. Pure. */
export function configJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(fileSchema(), {
    target: 'draft-07',
    io: 'input',
    unrepresentable: 'any',
    override(ctx) {
      // The validator's own refinements have no JSON Schema form; say what they accept.
      if (ctx.zodSchema === schemaParts.type) {
        for (const k of Object.keys(ctx.jsonSchema)) delete (ctx.jsonSchema as Record<string, unknown>)[k];
        Object.assign(ctx.jsonSchema, { type: 'string', enum: schemaParts.typeSpellings });
      } else if (ctx.zodSchema === schemaParts.stringMap) {
        Object.assign(ctx.jsonSchema, { type: 'object', additionalProperties: { type: ['string', 'number', 'boolean'] } });
      }
    },
  }) as Record<string, unknown>;
  return { ...schema, title: 'mcp-reconciler config' };
}
