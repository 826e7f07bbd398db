/**
 * What a session is told when a tool or prompt name it sends reaches no
 * server: outside its scope, served under another name, or served by
 * nothing. These answers are built from the controller's status and never
 * by asking the controller about a name, so nothing starts and no other
 * server's entries show through.
 */
import type { McpController } from '../controller/controller.js';
import { describeReason, fixFor } from '../controller/messages.js';
import type { GatewayNames, ResolvedName } from './naming.js';
import { describeScope, inScope, type SessionScope } from './scope.js';

/** `Tool` or `Prompt`, as the sentences start. */
export type NameKind = 'Tool' | 'Prompt';

const listOf = (what: NameKind): string => (what === 'Tool' ? 'tools/list' : 'prompts/list');

/** `what` `name` belongs to `owner`, which the session's scope leaves out. */
export function outsideScope(what: NameKind, name: string, owner: string, scope: SessionScope): string {
  return (
    `${what} ${name} is not available in this session: its MCP server "${owner}" is outside the session's servers (${describeScope(scope)}). ` +
    'To use it, open a session that names this server (?servers=… or --servers …).'
  );
}

/**
 * Why nothing is served under `name` (a {@link ResolvedName} that is not an
 * entry), with what to do: the registry's name under a custom separator, a
 * server outside the scope, the reason and fix of an unavailable server in
 * it, or that no server of the session has it.
 */
export function unservedName(
  controller: McpController,
  names: GatewayNames,
  scope: SessionScope,
  what: NameKind,
  name: string,
  resolved: Exclude<ResolvedName<unknown>, { kind: 'entry' }>,
): string {
  if (resolved.kind === 'renamed') {
    return `${what} ${name} is not provided under that name: this gateway names them ${names.pattern}. List them with ${listOf(what)}.`;
  }
  const server = resolved.server;
  if (server === undefined) {
    // Not the configured servers: those outside the scope are none of the session's business.
    if (scope !== undefined) return `${what} ${name} is not provided by any MCP server of this session (${describeScope(scope)}). List the session's ${what.toLowerCase()}s with ${listOf(what)}.`;
    const configured = controller.status().filter((r) => r.state !== 'removed').map((r) => r.name);
    return `${what} ${name} is not provided by any configured MCP server${configured.length ? ` (configured: ${configured.join(', ')})` : ''}. List them with ${listOf(what)}.`;
  }
  if (!inScope(scope, server)) return outsideScope(what, name, server, scope);
  const row = controller.status().find((r) => r.name === server);
  if (row?.reason) {
    // For a failure the cause is the most useful part of the answer.
    const cause = (row.reason === 'failed' || row.reason === 'needs_auth') && row.lastError ? ` (last error: ${row.lastError})` : '';
    // The row says where the reason comes from (the excluding file, who disabled it).
    return `${what} ${name} is unavailable: MCP server "${server}" ${describeReason(row.reason, row)}${cause}. To fix: ${fixFor(row.reason, server, undefined, row)}.`;
  }
  if (row?.state === 'connecting') return `${what} ${name} is not available yet: MCP server "${server}" is still connecting. Try again in a moment.`;
  const skipped = what === 'Tool' ? row?.skippedTools.find((t) => names.nameOf(server, t.rawName) === name) : undefined;
  if (skipped) return `Tool ${name} of MCP server "${server}" is not registered: ${skipped.reason}.`;
  return `MCP server "${server}" does not provide ${what.toLowerCase()} ${name}. List the session's ${what.toLowerCase()}s with ${listOf(what)}.`;
}
