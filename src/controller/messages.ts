import type { Reason } from './types.js';

/**
 * The fix for each reason, phrased as an instruction (SPEC §7). `cli` is the
 * command prefix a user types, so embedding hosts can substitute their own.
 */
export function fixFor(reason: Reason, server: string, cli = 'mcp-reconciler'): string {
  switch (reason) {
    case 'pending_approval':
      return `approve it with \`${cli} approve ${server}\` (or \`--session\` for this session only)`;
    case 'rejected':
      return `it was rejected for this exact config; approve it with \`${cli} approve ${server}\`, or edit the config to change its hash and be asked again`;
    case 'excluded':
      return `remove "${server}" from \`mcp.excluded\` in your settings`;
    case 'not_allowed':
      return `add "${server}" to \`mcp.allowed\` in your settings (and to --allowed-mcp-server-names if the host was started with it)`;
    case 'disabled':
      return `set \`"disabled": false\` (or remove the key) in its config entry`;
    case 'untrusted':
      return 'trust this folder in the host; servers from project and workspace files never start in an untrusted folder';
    case 'reconnecting':
      return `wait for the reconnect to finish, or force one with \`${cli} reconnect ${server}\``;
    case 'failed':
      return `fix the cause shown in its last error, then edit its config or run \`${cli} reconnect ${server}\``;
    case 'needs_auth':
      return `authorise the server (check its token or headers), then run \`${cli} reconnect ${server}\``;
    case 'removed':
      return 'add it back to a config file if you still need it';
  }
}

/** One sentence describing a reason. */
export function describeReason(reason: Reason): string {
  switch (reason) {
    case 'pending_approval':
      return 'is waiting for your approval';
    case 'rejected':
      return 'was rejected';
    case 'excluded':
      return 'is listed in mcp.excluded';
    case 'not_allowed':
      return 'is not in the allowed server list';
    case 'disabled':
      return 'is disabled in its config';
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
  }
}
