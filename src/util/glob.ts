/**
 * Name patterns where `*` matches any run of characters (also none) and
 * every other character stands for itself: server names in profiles, tool
 * names in profiles and tool filters. Nothing else is special, so a name
 * with `.`, `?` or brackets matches only itself.
 */
const cache = new Map<string, RegExp>();

function regexOf(pattern: string): RegExp {
  let re = cache.get(pattern);
  if (re === undefined) {
    re = new RegExp(`^${pattern.split('*').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`, 's');
    if (cache.size > 1000) cache.clear();
    cache.set(pattern, re);
  }
  return re;
}

/** Whether `name` matches `pattern` (`*` any run of characters). */
export function globMatch(pattern: string, name: string): boolean {
  return pattern.includes('*') ? regexOf(pattern).test(name) : pattern === name;
}

/** Whether any of `patterns` matches `name`. */
export function matchesAny(patterns: readonly string[], name: string): boolean {
  return patterns.some((p) => globMatch(p, name));
}
