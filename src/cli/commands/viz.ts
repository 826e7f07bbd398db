import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { ErrorCode, McpReconcilerError, describeError } from '../../errors.js';
import { renderChart, VIZ_FORMATS, VIZ_MACHINES, type VizMachineName } from '../../viz/index.js';
import type { DotDetail } from '../../viz/dot.js';
import type { CliCommand, CliContext } from '../command.js';

const DETAILS: readonly DotDetail[] = ['full', 'compact', 'outline'];

function usage(message: string, hint: string): McpReconcilerError {
  return new McpReconcilerError(ErrorCode.Usage, message, { hint });
}

function oneOf<T extends string>(value: unknown, allowed: readonly T[], what: string, fallback: T): T {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw usage(`unknown ${what} "${String(value)}"`, `use one of: ${allowed.join(', ')}`);
  }
  return value as T;
}

async function run(ctx: CliContext): Promise<number> {
  // main checked the count against the declared `positionals`.
  const [name] = ctx.positionals;
  const machine = oneOf(name, Object.keys(VIZ_MACHINES) as VizMachineName[], 'machine', 'server');
  // `--json` is the global "machine-readable" switch: here it means the JSON graph.
  const format = oneOf(ctx.values.format ?? (ctx.global.json ? 'json' : undefined), VIZ_FORMATS, 'format', 'mermaid');
  const detail = oneOf(ctx.values.detail, DETAILS, 'detail', 'full');
  const out = ctx.values.out;
  if (out !== undefined && (typeof out !== 'string' || out === '')) throw usage('--out needs a file name', 'e.g. --out docs/server-machine.svg');

  const text = await renderChart(VIZ_MACHINES[machine], format, { detail });
  if (out === undefined) {
    ctx.io.stdout.write(text);
    return 0;
  }
  const path = resolve(ctx.io.cwd, out);
  try {
    await writeFile(path, text);
  } catch (err) {
    // Not a usage error: the command was right, the file system said no (exit 1).
    throw new Error(`cannot write ${path}: ${describeError(err)} (check that the directory exists and is writable)`, { cause: err });
  }
  ctx.io.stderr.write(`wrote the ${machine} machine as ${format} to ${path}\n`);
  return 0;
}

/** `viz [server|reconciler] --format mermaid|dot|svg|json [--out FILE]`: state-chart export. */
export const vizCommand: CliCommand = {
  name: 'viz',
  examples: [
    "mcp-reconciler viz server --format mermaid",
    "mcp-reconciler viz reconciler --format svg --out reconciler.svg",
  ],
  positionals: [{ name: 'MACHINE', arity: 'optional', help: `the machine to draw: ${Object.keys(VIZ_MACHINES).join(' or ')} (default server)` }],
  summary: `state-chart export of a machine (${VIZ_FORMATS.join(' | ')})`,
  options: {
    format: { type: 'string', value: 'F', help: `${VIZ_FORMATS.join(', ')} (default mermaid)` },
    out: { type: 'string', value: 'FILE', help: 'write to FILE instead of stdout' },
    detail: { type: 'string', value: 'D', help: `dot/svg labels: ${DETAILS.join(', ')} (default full)` },
  },
  run,
};
