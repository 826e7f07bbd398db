/**
 * Agent scopes: which managed servers one gateway session may see and call.
 * A scope only narrows what the shared controller already admitted; it never
 * starts anything and never widens the gating lists.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { ErrorCode, McpReconcilerError } from '../errors.js';

/** The servers a session may use; `undefined` means every server of the workspace. */
export type SessionScope = ReadonlySet<string> | undefined;

/** Query parameter and headers an HTTP client can name its servers with (header names are case-insensitive). */
export const SCOPE_QUERY_PARAM = 'servers';
export const SCOPE_HEADERS = ['x-mcp-allowed-servers', 'allowedmcpservernames'] as const;

/**
 * Parse a comma-separated server list (`a,b`). Throws a usage error for a
 * list that names nothing: an empty scope is almost always a typo, and
 * omitting the list is how a session asks for every server.
 */
export function parseServerList(text: string, where: string): Set<string> {
  const names = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (names.length === 0) {
    throw new McpReconcilerError(ErrorCode.Usage, `${where} names no server`, {
      hint: `give server names separated by commas (e.g. ${where}=docs,files), or leave it out to use every server`,
    });
  }
  return new Set(names);
}

/**
 * The scope an HTTP client asked for when it opened its session: `?servers=`
 * and the scope headers. When several are given the session gets only the
 * servers every one of them names (narrowing is always safe).
 */
export function scopeFromRequest(url: URL, headers: IncomingHttpHeaders): SessionScope {
  const lists: Set<string>[] = [];
  for (const value of url.searchParams.getAll(SCOPE_QUERY_PARAM)) lists.push(parseServerList(value, `?${SCOPE_QUERY_PARAM}`));
  for (const header of SCOPE_HEADERS) {
    const raw = headers[header];
    for (const value of raw === undefined ? [] : Array.isArray(raw) ? raw : [raw]) lists.push(parseServerList(value, `header ${header}`));
  }
  return intersect(lists);
}

/** The names common to every list; `undefined` (everything) for no list. */
export function intersect(lists: readonly ReadonlySet<string>[]): SessionScope {
  const [first, ...rest] = lists;
  if (!first) return undefined;
  return new Set([...first].filter((name) => rest.every((l) => l.has(name))));
}

/** Whether `server` belongs to `scope`. */
export function inScope(scope: SessionScope, server: string): boolean {
  return scope === undefined || scope.has(server);
}

/** `a, b` for messages; `every server` for the unscoped session. */
export function describeScope(scope: SessionScope): string {
  if (scope === undefined) return 'every server';
  return scope.size === 0 ? 'no server' : [...scope].sort().join(', ');
}
