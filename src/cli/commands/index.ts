import type { CliCommand } from '../command.js';
import { approveCommand, rejectCommand } from './approve.js';
import { callCommand } from './call.js';
import { configCommand } from './config.js';
import { statusCommand } from './status.js';
import { toolsCommand } from './tools.js';
import { vizCommand } from './viz.js';
import { watchCommand } from './watch.js';
import { whyCommand } from './why.js';

/** Every CLI command, in the order `--help` lists them. Add new commands here. */
export const commands: readonly CliCommand[] = [
  watchCommand,
  statusCommand,
  toolsCommand,
  callCommand,
  whyCommand,
  approveCommand,
  rejectCommand,
  configCommand,
  vizCommand,
];
