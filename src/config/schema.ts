import { z } from 'zod';
import { LOG_LEVELS, type ServerConfig, type TransportType } from '../../machines/types.js';
import { ErrorCode, McpReconcilerError } from '../errors.js';
import { setOwn } from '../util/own.js';
import { formatFieldPath } from './field-path.js';
import { isPlainObject } from '../util/persist.js';

/** One validation problem inside an entry; `path` is relative to the entry. */
export interface EntryProblem {
  path: (string | number)[];
  message: string;
}

/** Result of validating one raw server entry. */
export type EntryResult = { ok: true; config: ServerConfig } | { ok: false; problems: EntryProblem[] };

/** Largest accepted `timeout`, in milliseconds: 24 hours. */
export const MAX_TIMEOUT_MS = 86_400_000;

// Spellings other hosts use for streamable HTTP.
const TYPE_ALIASES: Readonly<Record<string, TransportType>> = {
  stdio: 'stdio',
  sse: 'sse',
  http: 'http',
  'streamable-http': 'http',
  streamableHttp: 'http',
  streamable_http: 'http',
  sdk: 'sdk',
};

const typeSchema = z
  .string()
  .refine((t) => t in TYPE_ALIASES, { error: 'must be one of "stdio", "sse", "http"' })
  .transform((t) => TYPE_ALIASES[t] as TransportType);

// Env and header values are strings, but a number or boolean written without
// quotes (`PORT: 8080` in YAML) means the obvious thing.
const scalar = z.union([z.string(), z.number(), z.boolean()]).transform(String);
// Built by hand rather than with z.record, which silently drops a `__proto__` key.
const stringMap = z
  .custom<Record<string, unknown>>(isPlainObject, { error: 'must be an object mapping names to values' })
  .transform((rec, ctx) => {
    const out: Record<string, string> = {};
    for (const [key, value] of Object.entries(rec)) {
      if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') setOwn(out, key, String(value));
      else ctx.issues.push({ code: 'custom', input: value, path: [key], message: `must be a string, number or boolean, got ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}` });
    }
    return out;
  });
const nonEmpty = z.string().min(1, { error: 'must not be empty' });

/**
 * A duration in milliseconds, at most a day: Node clamps a timer over
 * 2^31-1 ms (about 24.8 days) to 1 ms, so a huge one would fire at once.
 * `advice` ends the message for a value over the bound.
 */
function milliseconds(advice = ''): z.ZodNumber {
  return z
    .number()
    .positive({ error: 'must be a positive number of milliseconds' })
    .max(MAX_TIMEOUT_MS, { error: `must be at most ${MAX_TIMEOUT_MS} ms (24 hours)${advice}` });
}

// OAuth client settings (docs/oauth.md); secrets come in through `${VAR}` expansion.
const oauthSchema = z.object({
  clientId: nonEmpty.optional(),
  clientSecret: z.string().optional(),
  scopes: z.union([z.array(z.string()), z.string()]).optional(),
  tokenEndpointAuthMethod: z.enum(['client_secret_basic', 'client_secret_post', 'none', 'private_key_jwt']).optional(),
  grantType: z.enum(['authorization_code', 'client_credentials', 'jwt-bearer']).optional(),
  privateKey: z.string().optional(),
  signingAlgorithm: nonEmpty.optional(),
  callbackPort: z.number().int().min(1).max(65_535).optional(),
  issuer: z.url({ protocol: /^https?$/, error: "must be the authorization server's issuer URL, e.g. https://auth.example.com" }).optional(),
  // docs/cluster-principals.md: each principal of a clustered gateway signs in as itself (part of the fingerprint).
  perPrincipal: z.boolean().optional(),
});

const entrySchema = z.object({
  type: typeSchema.optional(),
  command: nonEmpty.optional(),
  args: z.array(scalar).optional(),
  env: stringMap.optional(),
  cwd: nonEmpty.optional(),
  url: nonEmpty.optional(),
  // Gemini CLI writes streamable HTTP endpoints as `httpUrl`.
  httpUrl: nonEmpty.optional(),
  headers: stringMap.optional(),
  // A day is far beyond any real handshake.
  timeout: milliseconds('; write the timeout in milliseconds').optional(),
  disabled: z.boolean().optional(),
  includeTools: z.array(z.string()).optional(),
  excludeTools: z.array(z.string()).optional(),
  description: z.string().optional(),
  auth: z.record(z.string(), z.unknown()).optional(),
  oauth: oauthSchema.optional(),
  fallbackToSse: z.boolean().optional(),
  // The MCP protocol revision to speak; `auto` negotiates (connect.ts says what this build implements).
  protocol: z.enum(['2025-11-25', '2026-07-28', 'auto'], { error: 'must be "2025-11-25", "2026-07-28" or "auto"' }).optional(),
  // Claude Code: a shell command printing a JSON object of headers, run at each connect (headers-helper.ts).
  headersHelper: nonEmpty.optional(),
  autoApprove: z.array(z.string()).optional(),
  trust: z.boolean().optional(),
  // SPEC §12: when the server starts, and when an idle one is stopped (outside both hashes).
  startup: z.enum(['eager', 'lazy'], { error: 'must be "eager" or "lazy"' }).optional(),
  idleTimeoutMs: milliseconds().optional(),
  // docs/cluster.md: one replica of a clustered gateway runs it, under a lease (outside both hashes).
  singleton: z.boolean().optional(),
  // The start bound: a start unanswered this long fails (outside both hashes, like the two above).
  startTimeoutMs: milliseconds().optional(),
  // Definition drift (docs/tool-definitions.md): changed tool definitions wait for `approve --tool-definitions`.
  pinToolDefinitions: z.boolean().optional(),
  // SPEC §16: tools a budget lists first (raw names of this server's tools).
  pinnedTools: z.array(z.string()).optional(),
  // The `logging/setLevel` sent after each connect (docs/manage.md).
  logLevel: z.enum(LOG_LEVELS, { error: `must be one of ${LOG_LEVELS.map((l) => `"${l}"`).join(', ')}` }).optional(),
  // This server's tool permissions (docs/manage.md): globs over its tool names.
  permissions: z
    .object({
      allow: z.array(z.string()).optional(),
      ask: z.array(z.string()).optional(),
      deny: z.array(z.string()).optional(),
    })
    .optional(),
});

/**
 * The zod pieces the published JSON Schema is generated from
 * (`json-schema.ts`), so the editor schema cannot drift from the validator.
 * `typeSpellings` are the `type` values a file may use (`sdk` is code-only).
 * @internal
 */
export const schemaParts = {
  entry: entrySchema,
  type: typeSchema,
  stringMap,
  typeSpellings: Object.keys(TYPE_ALIASES).filter((t) => t !== 'sdk'),
} as const;

type EntryFields = z.output<typeof entrySchema>;
const entryFields = entrySchema.shape;
const entryKeys = Object.keys(entryFields) as (keyof EntryFields)[];

/**
 * `entrySchema` applied field by field, to the fields `raw` has (`null`
 * counts as absent). Every field is optional and checked on its own, so this
 * is the object schema's result, issues in its order; but a typical entry
 * sets 2–4 of the ~35 fields, and the object schema runs every one of them:
 * this takes ~5 ms off a 50-server warm start (docs/performance.md).
 * Without zod's eval-compiled fast path: it costs ~6 ms to build on first
 * use, more than validating a whole config file takes without it.
 * @internal exported for the test that holds it to the object schema.
 */
export function parseEntryFields(raw: Record<string, unknown>): { ok: true; data: EntryFields } | { ok: false; problems: EntryProblem[] } {
  const data: Record<string, unknown> = {};
  const problems: EntryProblem[] = [];
  for (const key of entryKeys) {
    if (!Object.hasOwn(raw, key) || raw[key] === null) continue;
    const r = entryFields[key].safeParse(raw[key], { jitless: true });
    if (r.success) data[key] = r.data;
    else for (const i of r.error.issues) problems.push({ path: [key, ...i.path.filter((p): p is string | number => typeof p !== 'symbol')], message: i.message });
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, data: data as EntryFields };
}

/**
 * Validate one raw server entry (SPEC §2.2). Unknown keys are ignored,
 * `null` members count as absent, and `type` is filled in: `stdio` with a
 * `command`, `http` with only a `url`. `type: 'sdk'` (and an `instance`) is
 * accepted only with `allowSdk`, i.e. from code, never from a file.
 * Never throws; every problem carries the field path inside the entry.
 */
export function validateServerEntry(raw: unknown, options: { allowSdk?: boolean } = {}): EntryResult {
  if (!isPlainObject(raw)) {
    return { ok: false, problems: [{ path: [], message: `must be an object, got ${raw === null ? 'null' : Array.isArray(raw) ? 'an array' : typeof raw}` }] };
  }
  const parsed = parseEntryFields(raw);
  if (!parsed.ok) return parsed;
  const { httpUrl, type: written, ...v } = parsed.data;
  const url = v.url ?? httpUrl;
  const type: TransportType | undefined = written ?? (v.command !== undefined ? 'stdio' : url !== undefined ? 'http' : undefined);
  const problems: EntryProblem[] = [];
  if (type === undefined) {
    problems.push({ path: [], message: 'needs a `command` (stdio server) or a `url` (http/sse server)' });
  } else if (type === 'sdk' && !options.allowSdk) {
    problems.push({ path: ['type'], message: '`sdk` servers run in-process and can only be added from code, not from a config file' });
  } else if (type === 'stdio' && v.command === undefined) {
    problems.push({ path: ['command'], message: 'is required for a stdio server' });
  } else if ((type === 'http' || type === 'sse') && url === undefined) {
    problems.push({ path: ['url'], message: `is required for an ${type} server` });
  }
  if (v.oauth?.perPrincipal === true) {
    if (type !== 'http' && type !== 'sse') {
      problems.push({ path: ['oauth', 'perPrincipal'], message: 'applies to remote (http or sse) servers only: a stdio server has no OAuth sign-in; remove it' });
    } else if (v.singleton === true) {
      // A singleton runs on one replica under one lease; per-principal connections would need a lease per principal (docs/cluster-principals.md).
      problems.push({
        path: ['oauth', 'perPrincipal'],
        message: 'cannot be combined with `singleton: true`: a singleton is one connection for the whole cluster, a per-principal server one connection per principal; remove one of the two',
      });
    }
  }
  if (problems.length > 0) return { ok: false, problems };

  const config: ServerConfig = { type: type!, ...v };
  if (url !== undefined) config.url = url;
  if (options.allowSdk && raw.instance !== undefined) config.instance = raw.instance;
  return { ok: true, config };
}

/**
 * Checks that need the expanded values: a `url` must be an absolute
 * http(s) URL.
 */
export function checkExpandedEntry(config: ServerConfig): EntryProblem[] {
  if (config.url === undefined || config.type === 'stdio' || config.type === 'sdk') return [];
  let parsed: URL;
  try {
    parsed = new URL(config.url);
  } catch {
    return [{ path: ['url'], message: `"${config.url}" is not a valid URL` }];
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    return [{ path: ['url'], message: `must be an http:// or https:// URL, got "${parsed.protocol}"` }];
  }
  return [];
}

/**
 * Validate an entry added from code (runtime or sdk scope) and return it, or
 * throw an {@link McpReconcilerError} (`config_invalid`) naming the server
 * and field. No variable expansion: code passes final values.
 */
export function parseServerConfig(name: string, raw: unknown, options: { allowSdk?: boolean } = {}): ServerConfig {
  const r = validateServerEntry(raw, options);
  const problems = r.ok ? checkExpandedEntry(r.config) : r.problems;
  if (r.ok && problems.length === 0) return r.config;
  const first = problems[0]!;
  const field = formatFieldPath(first.path);
  throw new McpReconcilerError(ErrorCode.ConfigInvalid, `server "${name}"${field ? ` field "${field}"` : ''}: ${first.message}`, {
    hint: 'a server needs a `command` (stdio) or a `url` (http/sse); fix the named field',
    details: { server: name, field, problems },
  });
}
