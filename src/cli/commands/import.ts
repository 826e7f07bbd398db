import { describeTarget } from '../../config/edit.js';
import { importServers, type ImportedServer } from '../../config/import.js';
import { resolvePreset } from '../../config/presets.js';
import { ErrorCode, McpReconcilerError } from '../../errors.js';
import type { CliCommand, CliContext } from '../command.js';
import { editContext, scopeOption, SCOPE_OPTION } from './add.js';

function one(ctx: CliContext, name: string): string | undefined {
  const v = ctx.values[name];
  const all = (Array.isArray(v) ? v : v === undefined ? [] : [v]).filter((x): x is string => typeof x === 'string');
  if (all.length > 1) throw new McpReconcilerError(ErrorCode.Usage, `--${name} is given more than once`, { hint: `give --${name} once` });
  return all[0];
}

function lines(r: ImportedServer, dryRun: boolean): string[] {
  const out: string[] = [];
  if (r.status === 'added') {
    out.push(dryRun ? `would add "${r.name}" (from ${r.from}): ${JSON.stringify(r.entry)}` : `added "${r.name}" (from ${r.from}) to ${describeTarget({ path: r.edit!.file, keyPath: r.edit!.keyPath })} [${r.edit!.scope}]`);
  } else out.push(`${r.status === 'exists' ? 'left alone' : 'skipped'} "${r.name}" (from ${r.from}): ${r.reason}`);
  for (const d of r.dropped) out.push(`  not copied: ${d.field}: ${d.why}`);
  for (const n of r.notes ?? []) out.push(`  note: ${n}`);
  return out;
}

async function run(ctx: CliContext): Promise<number> {
  const fromName = one(ctx, 'from');
  if (fromName === undefined) throw new McpReconcilerError(ErrorCode.Usage, 'import needs --from HOST', { hint: 'e.g. mcp-reconciler import --from claude-desktop --to cursor' });
  const from = resolvePreset(fromName);
  const toName = one(ctx, 'to');
  const to = toName !== undefined ? resolvePreset(toName) : ctx.global.preset;
  if (from.name === to.name) throw new McpReconcilerError(ErrorCode.Usage, `--from and --to are both ${to.name}`, { hint: 'name another host with --to (or --preset)' });
  const dryRun = ctx.values['dry-run'] === true;
  const scope = scopeOption(ctx.values);
  const results = await importServers({ ...editContext(ctx), from, to, dryRun, ...(scope ? { scope } : {}), ...(ctx.positionals.length ? { names: ctx.positionals } : {}) });
  if (ctx.global.json) ctx.io.stdout.write(`${JSON.stringify({ from: from.name, to: to.name, dryRun, servers: results })}\n`);
  else {
    const out = results.flatMap((r) => lines(r, dryRun));
    const added = results.filter((r) => r.status === 'added').length;
    out.push(dryRun ? `dry run: ${added} of ${results.length} would be added; nothing was written` : `${added} of ${results.length} added; a running watch or serve of this workspace picks them up now`);
    ctx.io.stdout.write(`${out.join('\n')}\n`);
  }
  return 0;
}

/** `import --from HOST [--to HOST] [--dry-run] [NAME…]`: copy servers between hosts' files. */
export const importCommand: CliCommand = {
  name: 'import',
  summary: "copy servers from one host's config files into another's, saying what the target cannot express",
  examples: [
    'mcp-reconciler import --from claude-desktop --to cursor --dry-run   # what would be copied, and what not',
    'mcp-reconciler import --from claude-code --to vscode --scope project github',
  ],
  positionals: [{ name: 'NAME', arity: 'variadic', help: 'only these servers (default: all of them)' }],
  options: {
    from: { type: 'string', value: 'HOST', help: 'the host (preset) to read servers from' },
    to: { type: 'string', value: 'HOST', help: 'the host (preset) to write them to (default: --preset)' },
    'dry-run': { type: 'boolean', help: 'say what would be written, write nothing' },
    ...SCOPE_OPTION,
  },
  run,
};
