/**
 * `compute` memoised by its argument, forgetting everything once `max`
 * results are kept: for pure functions called with a working set that is
 * usually small (tool definitions, words) but must not grow without end.
 */
export function boundedMemo<K, V>(max: number, compute: (key: K) => V): (key: K) => V {
  const memo = new Map<K, V>();
  return (key) => {
    let value = memo.get(key);
    if (value === undefined) {
      value = compute(key);
      if (memo.size >= max) memo.clear();
      memo.set(key, value);
    }
    return value;
  };
}
