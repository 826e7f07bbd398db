import { homedir } from 'node:os';
import { relative, isAbsolute, sep } from 'node:path';

/** Left-aligned columns separated by two spaces; the last column is not padded. */
export function table(rows: readonly (readonly string[])[]): string {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return rows
    .map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ').trimEnd())
    .join('\n');
}

/** A path as a user reads it: relative to the root when inside it, `~/…` under home, else absolute. */
export function displayPath(path: string, root: string, home: string = homedir()): string {
  if (!isAbsolute(path)) return path;
  const rel = relative(root, path);
  if (rel !== '' && !rel.startsWith('..') && !isAbsolute(rel)) return rel;
  if (home && (path === home || path.startsWith(home + sep))) return `~${path.slice(home.length)}`;
  return path;
}

/** `a, b` or `-` for an empty list. */
export function joinList(list: readonly string[] | undefined, empty = '-'): string {
  return list && list.length > 0 ? list.join(', ') : empty;
}
