/** One scenario's result in `npm run conformance` (conformance/run.ts), as its table and `--json` show it. */

/** Which client ran a scenario: ours (the public API) or the SDK's raw v2 client. */
export type ClientKind = 'ours' | 'raw-v2';

export interface Row {
  /** The suite's package version (0.1.16, 0.2.0-alpha.12, …). */
  suite: string;
  /** The protocol revision the scenario ran at; `default` when the suite chose (0.1.16). */
  wire: string;
  client: ClientKind;
  scenario: string;
  passed: number;
  failed: number;
  warnings: number;
  failures: string[];
  /** 1 unless the scenario failed before and was run again (--retries). */
  attempts: number;
  /** Wall time of the last attempt. */
  seconds: number;
}
