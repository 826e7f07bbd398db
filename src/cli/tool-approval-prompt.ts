/**
 * The terminal's answer to `permissions.ask` for `call` (docs/manage.md):
 * one question on stderr, `y` this call, `a` always (remembered for the
 * workspace), anything else, Enter, Ctrl-C or Ctrl-D no.
 */
import type { ToolApprovalHandler } from '../controller/tool-policy.js';
import type { CliIo } from './command.js';
import { LineReader, type Stdin } from './line-reader.js';

/** An `onToolApproval` that asks on the terminal of `io`. */
export function terminalToolApproval(io: CliIo): ToolApprovalHandler {
  const reader = new LineReader(io.stdin as Stdin);
  return async (req) => {
    const answer = await reader.read(false, () =>
      io.stderr.write(`${req.tool} needs your approval (${req.askedBy}); arguments ${JSON.stringify(req.arguments)}.\nRun it? [y]es once, [a]lways in this workspace, [N]o: `),
    );
    const a = (answer ?? '').trim().toLowerCase();
    return a === 'y' || a === 'yes' ? 'allow' : a === 'a' || a === 'always' ? 'always' : 'deny';
  };
}
