/**
 * Which servers OAuth is about, as pure checks of the config: the controller
 * asks them before it loads the OAuth code at all (a workspace of stdio
 * servers never does).
 */
import type { DesiredServer } from '../../machines/types.js';

/** A remote server (http or sse, with a URL): the only kind OAuth applies to. */
export function isServerOAuth(entry: DesiredServer): boolean {
  const type = entry.config.type ?? (entry.config.command ? 'stdio' : 'http');
  return (type === 'http' || type === 'sse') && typeof entry.config.url === 'string';
}

/** The user's own `Authorization` header wins: a static token is not ours to replace. */
export function hasUserAuthorization(entry: DesiredServer): boolean {
  return Object.keys(entry.config.headers ?? {}).some((h) => h.toLowerCase() === 'authorization');
}
