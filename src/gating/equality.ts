import deepEqual from 'fast-deep-equal';

/** Gating lists as read from settings (before the CLI bound is applied). */
export interface GatingLists {
  allowed?: readonly string[];
  excluded?: readonly string[];
  pending?: readonly string[];
}

function asSet(list: readonly string[] | undefined): string[] {
  return [...new Set(list ?? [])].sort();
}

/**
 * Whether two gating lists are the same (SPEC §2.4): each list is a set;
 * `undefined ≡ []` for `excluded` and `pending`, but an absent `allowed`
 * (allow all) differs from `allowed: []` (deny all).
 */
export function gatingEqual(a: GatingLists | undefined, b: GatingLists | undefined): boolean {
  const aa = a?.allowed;
  const ba = b?.allowed;
  if ((aa === undefined) !== (ba === undefined)) return false;
  return (
    deepEqual(asSet(aa), asSet(ba)) &&
    deepEqual(asSet(a?.excluded), asSet(b?.excluded)) &&
    deepEqual(asSet(a?.pending), asSet(b?.pending))
  );
}
