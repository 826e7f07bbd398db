import type { CliCommand } from '../command.js';
import { addCommand } from './add.js';
import { approveCommand, rejectCommand } from './approve.js';
import { authCommand, logoutCommand } from './auth.js';
import { callCommand } from './call.js';
import { configCommand } from './config.js';
import { daemonCommand } from './daemon.js';
import { disableCommand, enableCommand } from './enable.js';
import { importCommand } from './import.js';
import { logsCommand } from './logs.js';
import { reconnectCommand } from './reconnect.js';
import { removeCommand } from './remove.js';
import { serveCommand } from './serve.js';
import { statusCommand } from './status.js';
import { toolsCommand } from './tools.js';
import { vizCommand } from './viz.js';
import { watchCommand } from './watch.js';
import { whyCommand } from './why.js';

/** Every CLI command, in the order `--help` lists them. Add new commands here. */
export const commands: readonly CliCommand[] = [
  watchCommand,
  serveCommand,
  daemonCommand,
  statusCommand,
  toolsCommand,
  callCommand,
  whyCommand,
  approveCommand,
  rejectCommand,
  reconnectCommand,
  authCommand,
  logoutCommand,
  configCommand,
  addCommand,
  removeCommand,
  enableCommand,
  disableCommand,
  importCommand,
  logsCommand,
  vizCommand,
];
