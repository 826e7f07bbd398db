import { removeServer } from '../../config/edit.js';
import type { CliCommand, CliContext } from '../command.js';
import { runEdit, SCOPE_OPTION } from './add.js';

function run(ctx: CliContext): Promise<number> {
  return runEdit(ctx, 'removed', removeServer);
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
