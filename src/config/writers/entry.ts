/**
 * A server as `add` takes it, written the way each host writes its own
 * entries (the shapes `formats.ts` reads back). Values go in as given:
 * `${VAR}` stays `${VAR}`, nothing is expanded.
 */
import { ErrorCode, McpReconcilerError } from '../../errors.js';
import type { FormatName } from '../formats.js';
import { setOwn } from '../../util/own.js';

/** A server to add: a command to run, or a URL to connect to. */
export interface ServerSpec {
  /** The program to run (stdio). */
  command?: string;
  args?: string[];
  /** Environment of the process, written as given. */
  env?: Record<string, string>;
  /** A remote server's URL. */
  url?: string;
  /** How to reach `url`: streamable HTTP (default) or SSE. */
  transport?: 'http' | 'sse';
  /** HTTP headers of a remote server, written as given. */
  headers?: Record<string, string>;
}

/** Whether the entry would hold secrets (env values or headers), so its file must be private. */
export function holdsSecrets(spec: ServerSpec): boolean {
  return Object.keys(spec.env ?? {}).length > 0 || Object.keys(spec.headers ?? {}).length > 0;
}

function usage(message: string, hint: string): McpReconcilerError {
  return new McpReconcilerError(ErrorCode.Usage, message, { hint });
}

/** Throws a usage error unless `spec` is one command or one http(s) URL. */
export function checkSpec(spec: ServerSpec): void {
  if ((spec.command === undefined) === (spec.url === undefined)) {
    throw usage(
      spec.command === undefined ? 'give the server a command to run or a URL' : 'give the server either a command or a URL, not both',
      'add NAME -- COMMAND ARGS… for a local server, add NAME --url URL for a remote one',
    );
  }
  if (spec.command !== undefined && spec.command.trim() === '') throw usage('the command is empty', 'put the program to run after `--`');
  if (spec.url !== undefined) {
    let url: URL | undefined;
    try {
      url = new URL(spec.url);
    } catch {
      // reported below
    }
    // A `${VAR}` in a URL stays as written; only the scheme is checked then.
    if (!/^https?:\/\//i.test(spec.url) || (url === undefined && !spec.url.includes('${'))) {
      throw usage(`--url ${JSON.stringify(spec.url)} is not an http(s) URL`, 'e.g. --url https://mcp.example.com/mcp');
    }
    if (spec.args?.length) throw usage('a remote server takes no command arguments', 'drop what follows `--`, or drop --url');
    if (spec.env && Object.keys(spec.env).length > 0) throw usage('--env is for a server started as a command; a remote server has no environment', 'send values as --header instead');
  } else {
    if (spec.headers && Object.keys(spec.headers).length > 0) throw usage('--header is for a remote server (--url); a command has no HTTP headers', 'pass values with --env instead');
    if (spec.transport !== undefined) throw usage('--transport is for a remote server (--url)', 'drop --transport, or give --url');
  }
}

type Raw = Record<string, unknown>;

function copy(map: Record<string, string> | undefined): Record<string, string> | undefined {
  if (map === undefined || Object.keys(map).length === 0) return undefined;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(map)) setOwn(out, k, v);
  return out;
}

/** `{ command, args, env }` with the host's own extras, absent fields left out. */
function stdio(spec: ServerSpec, extra: Raw = {}, argsAlways = false): Raw {
  const env = copy(spec.env);
  return {
    ...extra,
    command: spec.command,
    ...(spec.args?.length || argsAlways ? { args: [...(spec.args ?? [])] } : {}),
    ...(env ? { env } : {}),
  };
}

function remote(spec: ServerSpec, urlKey: string, extra: Raw = {}): Raw {
  const headers = copy(spec.headers);
  return { ...extra, [urlKey]: spec.url, ...(headers ? { headers } : {}) };
}

/**
 * `spec` as an entry of `format`'s file. Throws a usage error when the host
 * cannot express it (Claude Desktop and a URL; Zed or Windsurf and SSE).
 */
export function hostEntry(format: FormatName, spec: ServerSpec): Raw {
  checkSpec(spec);
  const sse = spec.transport === 'sse';
  const isRemote = spec.url !== undefined;
  switch (format) {
    case 'default':
      return isRemote ? remote(spec, 'url', { type: sse ? 'sse' : 'http' }) : stdio(spec);
    case 'claude-code':
      // As `claude mcp add` writes them: the type first, `args` even when empty.
      return isRemote ? remote(spec, 'url', { type: sse ? 'sse' : 'http' }) : stdio(spec, { type: 'stdio' }, true);
    case 'vscode':
      return isRemote ? remote(spec, 'url', { type: sse ? 'sse' : 'http' }) : stdio(spec, { type: 'stdio' });
    case 'cursor':
      return isRemote ? remote(spec, 'url', sse ? { type: 'sse' } : {}) : stdio(spec);
    case 'gemini':
    case 'qwen':
      // `httpUrl` is streamable HTTP, `url` SSE.
      return isRemote ? remote(spec, sse ? 'url' : 'httpUrl') : stdio(spec);
    case 'cline':
      return isRemote ? remote(spec, 'url', { type: sse ? 'sse' : 'streamableHttp' }) : stdio(spec);
    case 'roo':
      return isRemote ? remote(spec, 'url', { type: sse ? 'sse' : 'streamable-http' }) : stdio(spec);
    case 'windsurf':
      if (isRemote && sse) throw usage('Windsurf has no setting for an SSE-only server: its `serverUrl` is streamable HTTP, falling back to SSE', 'drop --transport sse (the fallback reaches SSE servers)');
      return isRemote ? remote(spec, 'serverUrl') : stdio(spec);
    case 'opencode': {
      if (isRemote && sse) throw usage('opencode has no setting for an SSE-only server: a `remote` server is streamable HTTP, falling back to SSE', 'drop --transport sse (the fallback reaches SSE servers)');
      if (isRemote) return remote(spec, 'url', { type: 'remote' });
      const environment = copy(spec.env);
      return { type: 'local', command: [spec.command, ...(spec.args ?? [])], ...(environment ? { environment } : {}) };
    }
    case 'zed':
      if (isRemote && sse) throw usage('Zed connects to remote servers over streamable HTTP only', 'drop --transport sse, or run the server behind `npx mcp-remote URL` as a command');
      return isRemote ? remote(spec, 'url') : stdio(spec);
    case 'claude-desktop':
      if (isRemote) {
        throw usage(
          'Claude Desktop does not load remote servers from its config file (they are added under Settings → Connectors)',
          `add it as a command instead: add NAME -- npx mcp-remote ${spec.url}`,
        );
      }
      return stdio(spec);
    case 'codex': {
      if (isRemote && sse) throw usage('Codex connects to remote servers over streamable HTTP only', 'drop --transport sse, or run the server behind `npx mcp-remote URL` as a command');
      if (!isRemote) return stdio(spec);
      const headers = copy(spec.headers);
      return { url: spec.url, ...(headers ? { http_headers: headers } : {}) };
    }
  }
}

/** How each host treats `${NAME}` in a value: expanded, only as `${env:NAME}` / `{env:NAME}`, or never. */
const VARIABLES: Readonly<Record<FormatName, 'braces' | 'env-prefix' | 'opencode' | 'none'>> = {
  default: 'braces',
  'claude-code': 'braces',
  gemini: 'braces',
  qwen: 'braces',
  vscode: 'env-prefix',
  cursor: 'env-prefix',
  roo: 'env-prefix',
  windsurf: 'env-prefix',
  opencode: 'opencode',
  'claude-desktop': 'none',
  cline: 'none',
  codex: 'none',
  zed: 'none',
};

/**
 * Warnings for values the host will not expand the way they look: a plain
 * `${NAME}` in a host that reads `${env:NAME}`, or any variable in a host
 * that expands none. The values are written as given either way.
 */
export function variableNotes(format: FormatName, host: string, spec: ServerSpec): string[] {
  const values = [spec.command, ...(spec.args ?? []), spec.url, ...Object.values(spec.env ?? {}), ...Object.values(spec.headers ?? {})].filter((v): v is string => typeof v === 'string');
  const plain = [...new Set(values.flatMap((v) => [...v.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)].map((m) => m[1]!)))];
  const style = VARIABLES[format];
  if (plain.length === 0 || style === 'braces') return [];
  const list = plain.map((n) => `\${${n}}`).join(', ');
  if (style === 'none') return [`${host} does not expand variables, so ${list} reaches the server as written`];
  const spelled = plain.map((n) => (style === 'opencode' ? `{env:${n}}` : `\${env:${n}}`)).join(', ');
  return [`${host} reads environment variables as ${spelled}; ${list} is written as given and ${host} will not expand it`];
}
