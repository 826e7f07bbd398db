/**
 * Dictionaries keyed by user-written names (server names, env keys). A plain
 * `obj[name] = v` with `name === '__proto__'` replaces the prototype instead
 * of adding an entry, and `obj[name]` is a function for `toString`; these
 * helpers only ever touch own properties, so every name is an ordinary key.
 */

/** Set `record[key] = value` as an own, enumerable property, even for `__proto__`. */
export function setOwn<T>(record: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(record, key, { value, writable: true, enumerable: true, configurable: true });
}

/** `record[key]` when it is an own property, else `undefined` (never an inherited `toString`). */
export function getOwn<T>(record: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}
