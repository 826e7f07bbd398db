/** What the runner hands each measurement, and what a measurement hands back. */
import type { Workers } from './worker.js';

/** Shared state of one `npm run bench`. */
export interface BenchContext {
  workers: Workers;
  /** A temp directory for this run (config files, approvals). */
  tmp: string;
  /** Runs per figure (at least 5). */
  runs: number;
  /** Progress output (stderr), so stdout keeps the table. */
  log(line: string): void;
  /** Node flags for a worker of `measurement`: `--cpu-prof` when that measurement is profiled. */
  execArgv(measurement: string, extra?: string[]): string[];
}

/** Options of a measurement taken at several sizes (server or actor counts). */
export interface SizedOptions {
  sizes: number[];
}

/** One line of the printed table. */
export interface Row {
  /** The measurement (1–5) and what is measured. */
  section: string;
  figure: string;
  ours: string;
  /** The baseline measured in the same run, when there is one. */
  baseline?: string;
  /** ours / baseline, or another figure compared with the target. */
  ratio?: number;
  target: string;
  /** Undefined for informational rows. */
  pass?: boolean;
}

/** A measurement's output: table rows and the details for results.json. */
export interface MeasurementResult {
  rows: Row[];
  details: unknown;
}

/** `12.3 ms`, `1 234 ms` */
export function ms(value: number): string {
  return value >= 100 ? `${Math.round(value)} ms` : `${value.toFixed(1)} ms`;
}

/** `56.1 MB` */
export function mb(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}
