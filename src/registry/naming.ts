import { stableHash } from '../util/stable-hash.js';

/** Every registered tool and prompt name starts with this. */
export const REGISTERED_NAME_PREFIX = 'mcp__';
/** Between the server part and the tool (or prompt) part. */
export const REGISTERED_NAME_SEPARATOR = '__';
/** Longest registered name; model APIs accept `^[A-Za-z0-9_-]{1,64}$`. */
export const MAX_REGISTERED_NAME_LENGTH = 64;
/** Hex characters of the hash suffix appended to a cut name. */
export const NAME_HASH_LENGTH = 8;

/** Replace every character outside `[A-Za-z0-9_-]` with `_`. */
export function sanitiseNamePart(part: string): string {
  return part.replace(/[^A-Za-z0-9_-]/g, '_');
}

function registeredName(server: string, item: string): string {
  const full = REGISTERED_NAME_PREFIX + sanitiseNamePart(server) + REGISTERED_NAME_SEPARATOR + sanitiseNamePart(item);
  if (full.length <= MAX_REGISTERED_NAME_LENGTH) return full;
  // Hash the unsanitised pair, not the joined string: `a` + `b__c` and `a__b` + `c`
  // join to the same text, and two long names sharing a prefix must still differ.
  const suffix = stableHash([server, item]).slice(0, NAME_HASH_LENGTH);
  return `${full.slice(0, MAX_REGISTERED_NAME_LENGTH - NAME_HASH_LENGTH - 1)}_${suffix}`;
}

/**
 * The registered name of a server's tool: `mcp__<server>__<tool>`, each part
 * sanitised to `[A-Za-z0-9_-]`, at most {@link MAX_REGISTERED_NAME_LENGTH}
 * characters. A longer name keeps its first 55 characters and gets `_` plus an
 * {@link NAME_HASH_LENGTH}-character hash of the unsanitised (server, tool)
 * pair, so the result is deterministic and long names sharing a prefix do not
 * collide. Names that fit are not hashed, so `a.b` and `a_b` give the same
 * name; the registry rejects such clashes.
 */
export function registeredToolName(server: string, tool: string): string {
  return registeredName(server, tool);
}

/** The registered name of a server's prompt; same scheme as {@link registeredToolName}. */
export function registeredPromptName(server: string, prompt: string): string {
  return registeredName(server, prompt);
}

/**
 * The `mcp__<server>__` prefix every tool and prompt name of `server` starts
 * with (before any cut for length). Servers whose names sanitise alike
 * (`x.y`, `x_y`) share it; see {@link prefixOwner}.
 */
export function toolPrefix(server: string): string {
  return REGISTERED_NAME_PREFIX + sanitiseNamePart(server) + REGISTERED_NAME_SEPARATOR;
}

/** Order strings by Unicode code point (not UTF-16 code unit, which `<` uses). */
export function compareCodePoints(a: string, b: string): number {
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!;
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

/**
 * Of servers sharing a {@link toolPrefix}, the one that owns it: the first in
 * code-point order, so the outcome never depends on which connected first.
 * `undefined` for an empty list.
 */
export function prefixOwner(servers: Iterable<string>): string | undefined {
  let owner: string | undefined;
  for (const s of servers) if (owner === undefined || compareCodePoints(s, owner) < 0) owner = s;
  return owner;
}
