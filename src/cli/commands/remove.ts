import { removeServer } from '../../config/edit.js';
import type { CliCommand, CliContext } from '../command.js';
import { editContext, report, SCOPE_OPTION, scopeOption } from './add.js';

async function run(ctx: CliContext): Promise<number> {
  const [name] = ctx.positionals as [string];
  const scope = scopeOption(ctx.values);
  const r = await removeServer({ ...editContext(ctx), name, ...(scope ? { scope } : {}) });
  report(ctx, 'removed', r);
  return 0;
}

/** `remove NAME`: take a server out of the preset's own config file. */
export const removeCommand: CliCommand = {
  name: 'remove',
  summary: "remove a server from the preset's own config file",
  examples: [
    'mcp-reconciler remove files                          # from whichever of the preset\'s files has it',
    'mcp-reconciler remove github --preset claude-code --scope user',
  ],
  positionals: [{ name: 'NAME', arity: 'required', help: 'the server name' }],
  options: { ...SCOPE_OPTION },
  run,
};
