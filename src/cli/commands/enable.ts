import { createMcpController } from '../../controller/controller.js';
import type { SetEnabledResult } from '../../controller/switches.js';
import { shellQuote } from '../../format/shell.js';
import type { CliCommand, CliContext, OptionValues } from '../command.js';
import { controllerOptionsFor } from '../controller-session.js';

function list(v: OptionValues[string]): string[] {
  return (Array.isArray(v) ? v : v === undefined ? [] : [v]).filter((x): x is string => typeof x === 'string');
}

function report(ctx: CliContext, r: SetEnabledResult): void {
  if (ctx.global.json) {
    ctx.io.stdout.write(`${JSON.stringify(r)}\n`);
    return;
  }
  const what = r.tools ? `tool${r.tools.length === 1 ? '' : 's'} ${r.tools.map((t) => `"${t}"`).join(', ')} of "${r.server}"` : `"${r.server}"`;
  const verb = r.enabled ? 'enabled' : 'disabled';
  const lines =
    r.where === 'host'
      ? [`${verb} ${what} in ${r.file} (its "${r.field}" field)`]
      : [`${verb} ${what}: kept in the workspace state file ${r.file} (the server's config file has no field for it)`];
  if (r.backup) lines.push(`previous version kept as ${r.backup}`);
  lines.push(`a running watch or serve of this workspace applies it now${r.enabled ? '' : `; undo with: mcp-reconciler enable ${shellQuote(r.server)}${(r.tools ?? []).map((t) => ` --tool ${shellQuote(t)}`).join('')}`}`);
  ctx.io.stdout.write(`${lines.join('\n')}\n`);
}

/** `enable` / `disable`: switch the server (or its `--tool`s) and persist it; a running watch picks the file change up. */
function runSwitch(on: boolean) {
  return async (ctx: CliContext): Promise<number> => {
    const [name] = ctx.positionals as [string];
    const tools = list(ctx.values.tool);
    const { options, cleanup } = controllerOptionsFor(ctx, { watch: false });
    const controller = createMcpController(options);
    try {
      report(ctx, await controller.setEnabled(name, on, tools.length > 0 ? { tools } : {}));
    } finally {
      await controller.dispose();
      cleanup();
    }
    return 0;
  };
}

const TOOL_OPTION = {
  tool: { type: 'string', value: 'TOOL', multiple: true, help: 'only this tool (as the server names it, or mcp__<server>__<tool>)' },
} as const;

/** `disable NAME [--tool T]…`. */
export const disableCommand: CliCommand = {
  name: 'disable',
  summary: "switch a server (or some of its tools) off, in the host's own field or the workspace state file",
  examples: [
    'mcp-reconciler disable github                       # the server stops; its tools leave',
    'mcp-reconciler disable files --tool write_file      # only that tool leaves',
  ],
  positionals: [{ name: 'NAME', arity: 'required', help: 'the server name' }],
  options: TOOL_OPTION,
  run: runSwitch(false),
};

/** `enable NAME [--tool T]…`. */
export const enableCommand: CliCommand = {
  name: 'enable',
  summary: 'switch a disabled server (or some of its tools) back on',
  examples: ['mcp-reconciler enable github', 'mcp-reconciler enable files --tool write_file'],
  positionals: [{ name: 'NAME', arity: 'required', help: 'the server name' }],
  options: TOOL_OPTION,
  run: runSwitch(true),
};
