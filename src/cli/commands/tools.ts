import type { CliCommand, CliContext } from '../command.js';
import { withController } from '../controller-session.js';
import { table } from '../output.js';

async function run(ctx: CliContext): Promise<number> {
  const { tools, skipped } = await withController(ctx, async (c) => ({
    tools: c.tools(),
    skipped: c.status().flatMap((s) => s.skippedTools.map((t) => ({ server: s.name, ...t }))),
  }));
  if (ctx.global.json) {
    ctx.io.stdout.write(`${JSON.stringify({ tools, skipped }, null, 2)}\n`);
    return 0;
  }
  if (tools.length === 0) ctx.io.stdout.write('no tools registered (see `mcp-reconciler status` for why)\n');
  else {
    ctx.io.stdout.write(
      `${table([
        ['TOOL', 'SERVER', 'TOKENS', 'DESCRIPTION'],
        ...tools.map((t) => [t.name, t.server, String(t.tokens), (t.description ?? '').split('\n')[0]!.slice(0, 70)]),
      ])}\n`,
    );
  }
  for (const s of skipped) ctx.io.stderr.write(`not registered: ${s.server}/${s.rawName}: ${s.reason}\n`);
  return 0;
}

/** `tools`: list registered tools. */
export const toolsCommand: CliCommand = {
  name: 'tools',
  summary: 'list registered tools (mcp__<server>__<tool>)',
  examples: ['mcp-reconciler tools                        # every tool the model would see', 'mcp-reconciler tools --json'],
  run,
};
