/** Small statistics helpers for the benchmarks: every reported figure is a median. */

/** The median of `values` (the mean of the two middle values for an even count); NaN when empty. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Median, min, max and the raw samples, as written to results.json. */
export interface Summary {
  median: number;
  min: number;
  max: number;
  runs: number;
  samples: number[];
}

/** Summarise samples (rounded to 0.01 for readability). */
export function summarise(values: readonly number[]): Summary {
  const r = (x: number): number => Math.round(x * 100) / 100;
  return {
    median: r(median(values)),
    min: r(Math.min(...values)),
    max: r(Math.max(...values)),
    runs: values.length,
    samples: values.map(r),
  };
}

/** `a / b`, rounded to 0.001. */
export function ratio(a: number, b: number): number {
  return Math.round((a / b) * 1000) / 1000;
}
