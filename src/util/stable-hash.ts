/**
 * Content hashing and identity for plain config values: used by gating
 * (fingerprints, equality), approvals (config hashes) and the registry
 * (name suffixes), so it belongs to none of them.
 */
import { createHash } from 'node:crypto';
import { setOwn } from '../../machines/own.js';

const instanceIds = new WeakMap<object, number>();
let nextInstanceId = 1;

/** A per-process id for an object, so in-process server instances hash by identity. */
export function identityOf(value: object): number {
  let id = instanceIds.get(value);
  if (id === undefined) {
    id = nextInstanceId++;
    instanceIds.set(value, id);
  }
  return id;
}

/**
 * Normalise a config value for comparison and hashing: object keys sorted,
 * `undefined` members dropped, arrays kept in order.
 */
export function normalise(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalise);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[key];
      if (v !== undefined) setOwn(out, key, normalise(v)); // `__proto__` is a key like any other
    }
    return out;
  }
  return value;
}

/** sha256 of the normalised JSON of `value`, hex, first 16 bytes. */
export function stableHash(value: unknown): string {
  return createHash('sha256').update(JSON.stringify(normalise(value)) ?? 'undefined').digest('hex').slice(0, 32);
}
