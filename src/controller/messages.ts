import type { Reason } from './types.js';
import { shellQuote } from '../format/shell.js';

export { shellQuote };

/**
 * Where a reason comes from, when the controller knows (a status row has
 * these fields): the files whose `mcp.excluded` lists the server, and for a
 * `config_invalid` entry the file and line of the entry.
 */
export interface ReasonDetail {
  excludedBy?: readonly string[];
  source?: string;
  line?: number;
  /** Who switched a `disabled` server off: its config file, `mcp-reconciler disable` (the state file), this session. */
  disabledBy?: string;
  /** The profile in use that leaves a `disabled` server out. */
  profile?: string;
}

function fileList(files: readonly string[]): string {
  return files.join(' and ');
}

function entryAt(detail: ReasonDetail): string {
  if (!detail.source) return 'its config file';
  return detail.line === undefined ? detail.source : `${detail.source}:${detail.line}`;
}

/**
 * The fix for each reason, phrased as an instruction (SPEC §7). `cli` is the
 * command prefix a user types, so embedding hosts can substitute their own.
 * The server name is shell-quoted inside commands and JSON-quoted inside
 * settings values, so either can be copied as is. `detail` names the files
 * to edit when it is known.
 */
export function fixFor(reason: Reason, server: string, cli = 'mcp-reconciler', detail: ReasonDetail = {}): string {
  const arg = shellQuote(server);
  const json = JSON.stringify(server);
  switch (reason) {
    case 'pending_approval':
      return `approve it with \`${cli} approve ${arg}\` (or \`--session\` for this session only)`;
    case 'rejected':
      return `it was rejected for this exact config; approve it with \`${cli} approve ${arg}\`, or edit the config to change its hash and be asked again`;
    case 'excluded':
      return detail.excludedBy?.length
        ? `remove ${json} from \`mcp.excluded\` in ${fileList(detail.excludedBy)}`
        : `remove ${json} from \`mcp.excluded\` in your settings`;
    case 'not_allowed':
      return `add ${json} to \`mcp.allowed\` in your settings (and to --allowed-mcp-server-names if the host was started with it)`;
    case 'disabled':
      if (detail.profile !== undefined && detail.disabledBy?.startsWith('profile ')) {
        return `add ${json} to the "servers" of profile ${JSON.stringify(detail.profile)}, or use another profile (--profile NAME; setProfile() in the library)`;
      }
      return `enable it with \`${cli} enable ${arg}\``;
    case 'untrusted':
      return 'trust this folder in the host; servers from project and workspace files never start in an untrusted folder';
    case 'reconnecting':
      return `wait for the reconnect to finish, or force one with \`${cli} reconnect ${arg}\``;
    case 'failed':
      return `fix the cause shown in its last error, then edit its config or run \`${cli} reconnect ${arg}\``;
    case 'needs_auth':
      return `sign in with \`${cli} auth ${arg}\` (a running watch connects it as soon as the tokens are stored), or fix the token or headers in its config`;
    case 'removed':
      return 'add it back to a config file if you still need it';
    case 'starting_slowly':
      return `wait for it (it keeps starting in the background, up to its start bound "startTimeoutMs" (default 180000 ms), after which it fails and is retried; a call waits for it), or see why it is slow in its last error or by running its command by hand; raise "timeout" (ms) in its config if it always starts this slowly, and "startTimeoutMs" if it needs longer than its start bound`;
    case 'config_invalid':
      return `correct the entry of ${json} in ${entryAt(detail)} as the error says (or remove it); it starts once the entry is valid, and a running watch picks the change up when the file is saved`;
  }
}

/** One sentence describing a reason; `detail` as for {@link fixFor}. */
export function describeReason(reason: Reason, detail: ReasonDetail = {}): string {
  switch (reason) {
    case 'pending_approval':
      return 'is waiting for your approval';
    case 'rejected':
      return 'was rejected';
    case 'excluded':
      return detail.excludedBy?.length ? `is listed in mcp.excluded in ${fileList(detail.excludedBy)}` : 'is listed in mcp.excluded';
    case 'not_allowed':
      return 'is not in the allowed server list';
    case 'disabled':
      return detail.disabledBy ? `is disabled by ${detail.disabledBy}` : 'is disabled in its config';
    case 'untrusted':
      return 'comes from a project/workspace file of an untrusted folder';
    case 'reconnecting':
      return 'is reconnecting';
    case 'failed':
      return 'failed and is no longer retried';
    case 'needs_auth':
      return 'needs authorisation';
    case 'removed':
      return 'was removed from the config';
    case 'starting_slowly':
      return 'is still starting, slower than its start timeout';
    case 'config_invalid':
      return `is not started: its entry in ${entryAt(detail)} is invalid`;
  }
}

/** What `why` says of a server or tool switched off: "is disabled by <origin>". */
export function disabledSentence(origin: string): string {
  return `is disabled by ${origin}`;
}

/** The fix for a server or tool switched off. */
export function enableFix(server: string, tool?: string, cli = 'mcp-reconciler'): string {
  return `enable it with \`${cli} enable ${shellQuote(server)}${tool ? ` --tool ${shellQuote(tool)}` : ''}\``;
}
