/**
 * Call latency through several paths at once (the gateway's and the daemon's
 * measurements): every path is warmed, then timed in blocks that take turns
 * going first, so the load of a busy machine falls on all paths alike.
 */
import { fileURLToPath } from 'node:url';
import { plainNodeEnv } from './proc.js';

/** The built CLI, as the benchmarks spawn it (`dist/cli/main.js`). */
export const CLI = fileURLToPath(new URL('../../cli/main.js', import.meta.url));

/** How an SDK client spawns `serve --stdio` of `cli` over a gateway config in `dir` (`stdio` client transport parameters). */
export function serveStdioParams(cli: string, dir: string, cfg: { user: string; approvals: string }) {
  return {
    command: process.execPath,
    args: [cli, 'serve', '--stdio', '--cwd', dir, '--user-config', cfg.user, '--approvals', cfg.approvals],
    env: { ...plainNodeEnv(), HOME: dir },
    stderr: 'ignore' as const,
  };
}

/** Timed calls per path, calls per block, and untimed warm-up calls per path. */
export const LATENCY = { calls: 1_000, block: 100, warmup: 100 } as const;

/** The median and the 99th percentile of one path's call times (ms). */
export interface PathStats {
  p50: number;
  p99: number;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** {@link PathStats} of `values`. */
export function pathStats(values: number[]): PathStats {
  return { p50: percentile(values, 50), p99: percentile(values, 99) };
}

/** One call along a path (a `tools/call` through some client). */
export type CallFn = () => Promise<unknown>;

async function timeCalls(call: CallFn, n: number, into: number[]): Promise<void> {
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await call();
    into.push(performance.now() - t0);
  }
}

/**
 * Time `calls` calls of every path (ms each), in blocks of {@link LATENCY}.block;
 * in block b the paths go in their order rotated by b. `around` wraps each
 * block, e.g. to read the CPU time its processes used.
 */
export async function timeInterleaved<K extends string>(
  paths: Record<K, CallFn>,
  calls: number,
  around: (key: K, block: () => Promise<void>) => Promise<void> = (_key, block) => block(),
): Promise<Record<K, number[]>> {
  const order = Object.keys(paths) as K[];
  const samples = Object.fromEntries(order.map((k) => [k, [] as number[]])) as Record<K, number[]>;
  for (const key of order) await timeCalls(paths[key], LATENCY.warmup, []);
  for (let block = 0; block < calls / LATENCY.block; block++) {
    for (let i = 0; i < order.length; i++) {
      const key = order[(block + i) % order.length]!;
      await around(key, () => timeCalls(paths[key], LATENCY.block, samples[key]));
    }
  }
  return samples;
}
