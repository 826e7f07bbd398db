/**
 * Which failed scenarios conformance/run.ts runs again (`--retries`). A retry
 * guards a verdict on our client against a flake of a busy machine; it is
 * not spent where it cannot change one (`--skip-shared-retries`).
 */
import type { Row } from './row.js';

/**
 * Whether `row`, as its latest attempt left it, is run again.
 *
 * - A passed scenario, or one out of retries (`attempts > retries`), is not.
 * - Without a `counterpart` (the same scenario and wire run by the other
 *   client), or where `comparing` is false, every failure is.
 * - Where `comparing` (the wire's verdict is ours beside the raw SDK v2
 *   client): not the raw client's failure beside our pass (no verdict on
 *   ours rests on it), and not a failure both clients share, the same checks
 *   failing with the same messages (a retry of either cannot show that ours
 *   fails where the raw client passes). Any other failure is: ours beside
 *   the raw client's pass (the flake guard), or both failing differently.
 */
export function shouldRetry(row: Row, counterpart: Row | undefined, retries: number, comparing: boolean): boolean {
  if (row.failed === 0 || row.attempts > retries) return false;
  if (!counterpart || !comparing) return true;
  if (counterpart.failed === 0) return row.client === 'ours';
  return !sameFailures(row, counterpart);
}

/** What the runner records when the suite wrote no results: no check ran, so nothing is known to be shared. */
export const NO_RESULTS = 'the suite wrote no results for this scenario (run it with --verbose)';

/** Both failed exactly the same checks with the same messages. */
export function sameFailures(a: Row, b: Row): boolean {
  if (a.failures.length === 0 || a.failures.length !== b.failures.length || a.failures.includes(NO_RESULTS)) return false;
  const sorted = (r: Row): string[] => [...r.failures].sort();
  const bs = sorted(b);
  return sorted(a).every((f, i) => f === bs[i]);
}
