/** `['args', 1]` → `args[1]`, `['env', 'A']` → `env.A`; `undefined` for the entry itself. */
export function formatFieldPath(path: readonly (string | number)[]): string | undefined {
  let out = '';
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : out === '' ? p : `.${p}`;
  return out === '' ? undefined : out;
}
