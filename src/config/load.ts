import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, resolve } from 'node:path';
import type { ServerConfig } from '../../machines/types.js';
import { ErrorCode } from '../errors.js';
import { expandServerConfig } from './expand.js';
import { isSyntaxProblem, parseText, type ParsedText } from './parse.js';
import { checkExpandedEntry, validateServerEntry, type EntryProblem } from './schema.js';
import { DEFAULT_SERVERS_KEYS, formatFieldPath, isYamlPath, type ConfigIssue, type ConfigSource } from './sources.js';

/** Gating settings as written in one file (SPEC §2.3); `allowed: []` is kept (deny all). */
export interface SourceSettings {
  allowed?: string[];
  excluded?: string[];
}

/** One source file after parse, validation and expansion. */
export interface LoadedSource {
  source: ConfigSource;
  /** False when the file does not exist (not an error: it may be created later). */
  exists: boolean;
  /** The valid entries; invalid ones are left out and reported in `issues`. */
  servers: Record<string, ServerConfig>;
  settings: SourceSettings;
  issues: ConfigIssue[];
  /** The whole file is unparseable: callers keep their last good config for it. */
  fatal: boolean;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function empty(source: ConfigSource, exists: boolean): LoadedSource {
  return { source, exists, servers: {}, settings: {}, issues: [], fatal: false };
}

function fatalResult(source: ConfigSource, issue: Omit<ConfigIssue, 'file'>): LoadedSource {
  return { ...empty(source, true), fatal: true, issues: [{ file: source.path, code: ErrorCode.ConfigInvalid, ...issue }] };
}

function readSettings(root: Record<string, unknown>, doc: ParsedText, file: string, issues: ConfigIssue[]): SourceSettings {
  const settings: SourceSettings = {};
  const nested = isPlainObject(root.mcp) ? root.mcp : undefined;
  for (const key of ['allowed', 'excluded'] as const) {
    // The nested form wins over the flat dotted key when a file has both.
    const fromNested = nested !== undefined && nested[key] !== undefined;
    const raw = fromNested ? nested[key] : root[`mcp.${key}`];
    if (raw === undefined || raw === null) continue;
    if (Array.isArray(raw) && raw.every((x) => typeof x === 'string')) {
      settings[key] = [...raw];
      continue;
    }
    const pos = doc.locate(fromNested ? ['mcp', key] : [`mcp.${key}`]);
    issues.push({
      file,
      line: pos?.line,
      column: pos?.column,
      field: `mcp.${key}`,
      message: 'must be a list of server names; ignored',
      code: ErrorCode.ConfigInvalid,
    });
  }
  return settings;
}

/**
 * Parse one source's text (sync, no I/O): servers under the source's keys
 * (default `mcpServers` and `servers`) and the `mcp.allowed` / `mcp.excluded`
 * settings (nested or flat dotted key). Invalid entries, and entries with an
 * unset `${VAR}`, are dropped with an issue naming file, line, server and
 * field; the other entries still load. A syntax error makes the result
 * `fatal` with no servers. A relative `cwd` is resolved against the file's
 * directory. `${workspaceFolder}` is `source.root` when set.
 */
export function parseSourceText(text: string, source: ConfigSource, env: NodeJS.ProcessEnv): LoadedSource {
  const file = source.path;
  const parsed = parseText(text, isYamlPath(file));
  if (isSyntaxProblem(parsed)) return fatalResult(source, { ...parsed.position, message: parsed.message });
  if (parsed.value === undefined || parsed.value === null) return empty(source, true);
  if (!isPlainObject(parsed.value)) {
    return fatalResult(source, { line: 1, column: 1, message: 'expected an object at the top level' });
  }
  const root = parsed.value;
  const issues: ConfigIssue[] = [];
  const servers: Record<string, ServerConfig> = {};
  const seen = new Map<string, string>();
  const builtins = source.root !== undefined ? { workspaceFolder: source.root } : undefined;

  const issueAt = (path: (string | number)[], server: string | undefined, p: EntryProblem, code: ErrorCode = ErrorCode.ConfigInvalid) => {
    const pos = parsed.locate([...path, ...p.path]);
    issues.push({ file, line: pos?.line, column: pos?.column, server, field: formatFieldPath(p.path), message: p.message, code });
  };

  for (const key of source.keys ?? DEFAULT_SERVERS_KEYS) {
    const block = root[key];
    if (block === undefined || block === null) continue;
    if (!isPlainObject(block)) {
      issueAt([key], undefined, { path: [], message: `\`${key}\` must be an object mapping server names to configs; ignored` });
      continue;
    }
    for (const [name, raw] of Object.entries(block)) {
      const at = [key, name];
      if (name.trim() === '') {
        issueAt(at, name, { path: [], message: 'a server name must not be empty' });
        continue;
      }
      const earlier = seen.get(name);
      if (earlier !== undefined) {
        issueAt(at, name, { path: [], message: `is also defined under \`${earlier}\` in the same file; this one is ignored` });
        continue;
      }
      seen.set(name, key);
      const validated = validateServerEntry(raw);
      if (!validated.ok) {
        for (const p of validated.problems) issueAt(at, name, p);
        continue;
      }
      const expanded = expandServerConfig(validated.config, { env, builtins });
      if (expanded.missing.length > 0) {
        for (const m of expanded.missing) {
          issueAt(at, name, { path: m.path, message: `\${${m.variable}} is not set and has no default (set it, or write \${${m.variable}:-default}); server skipped` }, ErrorCode.ConfigUnsetVariable);
        }
        continue;
      }
      const config = expanded.config;
      const late = checkExpandedEntry(config);
      if (late.length > 0) {
        for (const p of late) issueAt(at, name, p);
        continue;
      }
      if (config.cwd !== undefined && !isAbsolute(config.cwd)) config.cwd = resolve(dirname(file), config.cwd);
      servers[name] = config;
    }
  }
  return { source, exists: true, servers, settings: readSettings(root, parsed, file, issues), issues, fatal: false };
}

/**
 * Read and parse one source. A missing file is `exists: false` with no
 * issue; an unreadable one is `fatal`. Never throws.
 */
export async function loadSource(source: ConfigSource, env: NodeJS.ProcessEnv): Promise<LoadedSource> {
  let text: string;
  try {
    text = await readFile(source.path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return empty(source, false);
    return fatalResult(source, { message: `cannot read the file: ${err instanceof Error ? err.message : String(err)}` });
  }
  return parseSourceText(text, source, env);
}
