/**
 * Path formatting for people: shared by the CLI's tables and the dashboard,
 * so neither imports the other.
 */
import { homedir } from 'node:os';
import { isAbsolute, relative, sep } from 'node:path';

/** A path as a user reads it: relative to the root when inside it, `~/…` under home, else absolute. */
export function displayPath(path: string, root: string, home: string = homedir()): string {
  if (!isAbsolute(path)) return path;
  const rel = relative(root, path);
  if (rel !== '' && !rel.startsWith('..') && !isAbsolute(rel)) return rel;
  if (home && (path === home || path.startsWith(home + sep))) return `~${path.slice(home.length)}`;
  return path;
}
