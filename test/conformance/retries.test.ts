/**
 * Which failed conformance scenarios the runner runs again (conformance/retries.ts):
 * every failure, except at a wire judged ours-beside-the-raw-client
 * (`--skip-shared-retries`) where a retry cannot change the verdict.
 */
import { describe, expect, it } from 'vitest';
import { NO_RESULTS, sameFailures, shouldRetry } from '../../conformance/retries.js';
import type { ClientKind, Row } from '../../conformance/run.js';

function row(client: ClientKind, failures: string[], attempts = 1): Row {
  return { suite: '0.2.0-alpha.12', wire: '2026-07-28', client, scenario: 's', passed: 3, failed: failures.length, warnings: 0, failures, attempts, seconds: 1 };
}

const UNSEEN = 'sep-2243-client-base64-unsafe: Check was not observed: no tool call exercised it.';

describe('shouldRetry', () => {
  it('never runs a pass again, nor a failure out of retries', () => {
    expect(shouldRetry(row('ours', []), undefined, 1, false)).toBe(false);
    expect(shouldRetry(row('ours', [UNSEEN], 2), undefined, 1, false)).toBe(false);
    expect(shouldRetry(row('ours', [UNSEEN], 2), undefined, 2, false)).toBe(true);
  });

  it('without the comparison (or a counterpart) runs every failure again, shared or not', () => {
    expect(shouldRetry(row('ours', [UNSEEN]), undefined, 1, true)).toBe(true);
    expect(shouldRetry(row('ours', [UNSEEN]), row('raw-v2', [UNSEEN]), 1, false)).toBe(true);
    expect(shouldRetry(row('raw-v2', [UNSEEN]), row('ours', []), 1, false)).toBe(true);
  });

  it('where compared, does not run a failure both clients share again', () => {
    expect(shouldRetry(row('ours', [UNSEEN]), row('raw-v2', [UNSEEN]), 1, true)).toBe(false);
    expect(shouldRetry(row('raw-v2', [UNSEEN]), row('ours', [UNSEEN]), 1, true)).toBe(false);
  });

  it('where compared, does not run the raw client again beside our pass', () => {
    expect(shouldRetry(row('raw-v2', [UNSEEN]), row('ours', []), 1, true)).toBe(false);
  });

  it('where compared, runs ours again beside the raw client\'s pass (the flake guard)', () => {
    expect(shouldRetry(row('ours', [UNSEEN]), row('raw-v2', []), 1, true)).toBe(true);
  });

  it('where compared, runs both again when they failed differently', () => {
    const exit = 'client-exit: the client exited with an error: Request timed out';
    expect(shouldRetry(row('ours', [UNSEEN, exit]), row('raw-v2', [UNSEEN]), 1, true)).toBe(true);
    expect(shouldRetry(row('raw-v2', [UNSEEN]), row('ours', [UNSEEN, exit]), 1, true)).toBe(true);
    expect(shouldRetry(row('ours', ['client-exit: the client exited with an error: a']), row('raw-v2', ['client-exit: the client exited with an error: b']), 1, true)).toBe(true);
  });
});

describe('sameFailures', () => {
  it('is the same failed checks with the same messages, in any order', () => {
    expect(sameFailures(row('ours', ['a: x', 'b: y']), row('raw-v2', ['b: y', 'a: x']))).toBe(true);
    expect(sameFailures(row('ours', ['a: x']), row('raw-v2', ['a: z']))).toBe(false);
    expect(sameFailures(row('ours', []), row('raw-v2', []))).toBe(false);
  });

  it('is never a run the suite wrote no results for', () => {
    expect(sameFailures(row('ours', [NO_RESULTS]), row('raw-v2', [NO_RESULTS]))).toBe(false);
  });
});
