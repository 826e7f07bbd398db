import { publicStatusOf, reasonOf, stateNameOf } from '../../machines/reason.js';
import type { DesiredServer } from '../../machines/types.js';
import { formatIssue } from '../config/sources.js';
import { getOwn } from '../util/own.js';
import type { ToolDrift } from '../approvals/tool-definitions.js';
import { transportOf } from '../config/identity.js';
import { registeredToolName, sanitiseNamePart } from '../registry/naming.js';
import type { SkippedTool } from '../registry/registry.js';
import { defineLazyTokens } from '../registry/tokens.js';
import type { Connections } from './connections.js';
import { describeReason, disabledSentence, enableFix, fixFor, type ReasonDetail } from './messages.js';
import type { Reason, ServerStateName, ServerStatus } from './types.js';
import type { Workspace } from './workspace.js';

/** Where the status view learns who narrowed what, beyond the actors and the config (all optional). */
export interface StatusOrigins {
  /** How a server's tool definitions drifted from the accepted ones (docs/tool-definitions.md). */
  toolDrift?(name: string, entry: DesiredServer): ToolDrift | undefined;
  /** Who switched a server off (its file, `mcp-reconciler disable`, the session), when it is. */
  disabledBy?(server: string): string | undefined;
  /** Who switched raw tool `tool` of `server` off, when it is. */
  toolDisabledBy?(server: string, tool: string): string | undefined;
  /** The profile in use that leaves `server` out, when one does. */
  profileOf?(server: string): string | undefined;
  /** The profile in use that leaves raw tool `tool` of `server` out: `profile "x" (file)`. */
  toolProfileOrigin?(server: string, tool: string): string | undefined;
  /** The `permissions.deny` that hides raw tool `tool` of `server`: `permissions.deny in <file>`. */
  toolDeniedBy?(server: string, tool: string): string | undefined;
}

/** A config entry the config layer refused: no actor, but a row and a reason (`config_invalid`). */
interface RefusedEntry {
  file: string;
  line: number | undefined;
  /** Every issue that refused it, formatted. */
  error: string;
}

/**
 * Status rows and the reasons a server or tool is unavailable (SPEC §7),
 * read from the actors (states, last errors, removed names), the registry and
 * the connections; the one thing it keeps is the reconciler's `removed` list
 * as it was before disposal.
 */
export class StatusView {
  constructor(
    private readonly ws: Workspace,
    private readonly connections: Connections,
    private readonly origins: StatusOrigins = {},
  ) {}

  /** Servers removed from the config (SPEC §3.1), from the reconciler's context. */
  removed(): readonly string[] {
    return this.ws.actor.getSnapshot().context.removed;
  }

  /** The state of `name`'s actor; `removed` when it has none. */
  stateOf(name: string): ServerStateName {
    const ref = this.ws.server(name);
    return ref ? stateNameOf(ref.getSnapshot()) : 'removed';
  }

  /**
   * Entries dropped for a config error (invalid, or an unset variable they
   * need), by server name: those named by an error-level issue that are not
   * in the desired map. Derived from the config-error report, as they have no
   * actor whose state could say it.
   */
  refused(): Map<string, RefusedEntry> {
    const out = new Map<string, RefusedEntry>();
    const desired = this.ws.desired;
    for (const issue of this.ws.issues) {
      const name = issue.server;
      if (name === undefined || issue.severity === 'warning' || Object.hasOwn(desired, name)) continue;
      const known = out.get(name);
      if (known) known.error += `; ${formatIssue(issue)}`;
      else out.set(name, { file: issue.file, line: issue.line, error: formatIssue(issue) });
    }
    return out;
  }

  /** Where a server's reason comes from: the files excluding it, the file and line of a refused entry. */
  detailOf(name: string): ReasonDetail {
    const refused = this.refused().get(name);
    if (refused) return { source: refused.file, ...(refused.line !== undefined ? { line: refused.line } : {}) };
    const excludedBy = this.ws.gating?.excludedBy;
    const files = excludedBy && Object.hasOwn(excludedBy, name) ? excludedBy[name] : undefined;
    if (files?.length) return { excludedBy: files };
    const disabledBy = this.origins.disabledBy?.(name);
    const profile = this.origins.profileOf?.(name);
    return { ...(disabledBy ? { disabledBy } : {}), ...(profile ? { profile } : {}) };
  }

  /** Per-server status, servers in name order; removed servers last seen and refused config entries are included. */
  rows(): ServerStatus[] {
    const { registry } = this.ws;
    const { connections } = this;
    const rows: ServerStatus[] = [];
    const actors = this.ws.servers();
    const refused = this.refused();
    for (const [name, ref] of actors) {
      const snap = ref.getSnapshot();
      const ctx = snap.context as { entry: DesiredServer; generation: number; attempt: number; lastError?: string };
      const state = stateNameOf(snap);
      const reason = reasonOf(snap);
      const excludedBy = reason === 'excluded' ? this.detailOf(name).excludedBy : undefined;
      const disabledBy = reason === 'disabled' ? this.origins.disabledBy?.(name) : undefined;
      const profile = reason === 'disabled' ? this.origins.profileOf?.(name) : undefined;
      const tools = registry.toolsOf(name);
      const prompts = registry.promptsOf(name);
      const resources = registry.resources.resourcesOf(name);
      const templates = registry.resources.templatesOf(name);
      const conn = connections.get(name)?.conn;
      const drift = this.origins.toolDrift?.(name, ctx.entry);
      const row = {
        name,
        scope: ctx.entry.scope,
        source: ctx.entry.source,
        state,
        status: publicStatusOf(snap),
        reason,
        ...(excludedBy ? { excludedBy: [...excludedBy] } : {}),
        ...(disabledBy ? { disabledBy } : {}),
        ...(profile ? { profile } : {}),
        tools: tools.map((t) => t.name),
        prompts: prompts.map((p) => p.name),
        resources: resources.map((r) => r.uri),
        resourceTemplates: templates.map((t) => t.uriTemplate),
        skippedTools: this.skippedWithOrigin(name),
        cached: [tools, prompts, resources, templates].some((list) => list.some((e) => e.cached === true)),
        lastError: ctx.lastError,
        generation: ctx.generation,
        attempt: ctx.attempt,
        pid: conn?.pid,
        transport: conn?.transportType ?? transportOf(ctx.entry.config),
        ...(drift ? { toolDrift: { ...drift, changed: [...drift.changed], added: [...drift.added] } } : {}),
      } as Omit<ServerStatus, 'tokens'>;
      // Counted only when read: most status readers never look, and the tokenizer is heavy to load.
      defineLazyTokens(row, () => tools.reduce((sum, t) => sum + t.tokens, 0));
      rows.push(row as ServerStatus);
    }
    for (const [name, entry] of refused) {
      if (actors.has(name)) continue;
      rows.push(
        actorlessRow(name, {
          scope: this.ws.reader.sources.find((s) => s.path === entry.file)?.scope,
          source: entry.file,
          ...(entry.line !== undefined ? { line: entry.line } : {}),
          state: 'config_invalid',
          status: 'failed',
          reason: 'config_invalid',
          lastError: entry.error,
        }),
      );
    }
    for (const name of this.removed()) {
      if (actors.has(name) || refused.has(name)) continue;
      rows.push(actorlessRow(name, { scope: undefined, source: undefined, state: 'removed', status: 'disabled', reason: 'removed', lastError: undefined }));
    }
    return rows.sort((a, b) => a.name.localeCompare(b.name));
  }

  /** The server's unregistered tools; one switched off says who did it and how to switch it back on. */
  private skippedWithOrigin(name: string): SkippedTool[] {
    return this.ws.registry.skippedOf(name).map((s) => {
      const origin = this.origins.toolDisabledBy?.(name, s.rawName);
      if (origin) return { ...s, reason: `disabled by ${origin} (${enableFix(name, s.rawName)})` };
      const denied = this.origins.toolDeniedBy?.(name, s.rawName);
      if (denied) return { ...s, reason: `hidden by ${denied}` };
      const profile = this.origins.toolProfileOrigin?.(name, s.rawName);
      return profile ? { ...s, reason: `not kept by ${profile}` } : s;
    });
  }

  /** The last error of a live server actor, from its context (the controller reports its errors there). */
  lastErrorOf(name: string): string | undefined {
    const ref = this.ws.server(name);
    if (!ref) return this.refused().get(name)?.error;
    return (ref.getSnapshot().context as { lastError?: string } | undefined)?.lastError;
  }

  /**
   * Why `server` is unavailable: from its actor's state; `config_invalid`
   * for an entry refused by the config layer (it has no actor), `removed`
   * for one removed from the config; `undefined` when fine or unknown.
   */
  unavailableReason(server: string): Reason | undefined {
    const ref = this.ws.server(server);
    if (ref) return reasonOf(ref.getSnapshot());
    if (this.refused().has(server)) return 'config_invalid';
    return this.removed().includes(server) ? 'removed' : undefined;
  }

  /** The configured (or removed) server a `mcp__<server>__<tool>` name belongs to, by the longest matching sanitised prefix. */
  serverOfTool(toolName: string): string | undefined {
    const registered = this.ws.registry.getTool(toolName);
    if (registered) return registered.server;
    const known = new Set([...this.ws.servers().keys(), ...this.removed(), ...Object.keys(this.ws.desired), ...this.refused().keys()]);
    let best: string | undefined;
    for (const name of known) {
      if (toolName.startsWith(`mcp__${sanitiseNamePart(name)}__`) && (!best || name.length > best.length)) best = name;
    }
    return best;
  }

  /** A sentence for the model or the user: which server a tool belongs to, why it is unavailable, and what fixes it. */
  toolUnavailableMessage(toolName: string): string {
    const { registry } = this.ws;
    const registered = registry.getTool(toolName);
    const server = this.serverOfTool(toolName);
    if (!server) {
      const servers = Object.keys(this.ws.desired);
      return `Tool ${toolName} is not provided by any configured MCP server${servers.length ? ` (configured: ${servers.join(', ')})` : ''}. Check the name with \`mcp-reconciler tools\`.`;
    }
    const reason = this.unavailableReason(server);
    if (reason) {
      // For a failure the cause is the most useful part of the answer.
      const cause = reason === 'failed' || reason === 'needs_auth' || reason === 'config_invalid' ? this.lastErrorOf(server) : undefined;
      const detail = this.detailOf(server);
      return `Tool ${toolName} is unavailable: MCP server "${server}" ${describeReason(reason, detail)}${cause ? ` (last error: ${cause})` : ''}. To fix: ${fixFor(reason, server, undefined, detail)}.`;
    }
    const ref = this.ws.server(server);
    const state = ref ? stateNameOf(ref.getSnapshot()) : undefined;
    if (state === 'dormant' && registered) {
      return `Tool ${toolName} is available: MCP server "${server}" is dormant (not running, tools from its listing cache); the first call starts it.`;
    }
    if (state === 'connecting') {
      return registered
        ? `Tool ${toolName} is available from the listing cache: MCP server "${server}" is still connecting, and a call waits for it.`
        : `Tool ${toolName} is not available yet: MCP server "${server}" is still connecting.`;
    }
    const entry = getOwn(this.ws.desired, server);
    const drift = entry ? this.origins.toolDrift?.(server, entry) : undefined;
    const rawName = registered?.rawName ?? registry.skippedOf(server).find((s) => registeredToolName(server, s.rawName) === toolName)?.rawName ?? toolName.slice(`mcp__${server}__`.length);
    if (registered) {
      if (drift?.held && drift.changed.includes(rawName)) {
        return `Tool ${toolName} is available with the definition you accepted: MCP server "${server}" has changed it since, and the change is held back (pinToolDefinitions). To accept it: mcp-reconciler approve ${server} --tool-definitions.`;
      }
      return `Tool ${toolName} is available (server "${server}" is connected).`;
    }
    if (drift?.held && drift.added.includes(rawName)) {
      return `Tool ${toolName} is held back: MCP server "${server}" added it after its tools were accepted (pinToolDefinitions). To register it: mcp-reconciler approve ${server} --tool-definitions.`;
    }
    const skipped = registry.skippedOf(server).find((s) => registeredToolName(server, s.rawName) === toolName);
    const switchedOff = skipped ? this.origins.toolDisabledBy?.(server, skipped.rawName) : undefined;
    if (skipped && switchedOff) {
      return `Tool ${toolName} of MCP server "${server}" ${disabledSentence(switchedOff)}. To fix: ${enableFix(server, skipped.rawName)}.`;
    }
    const denied = skipped ? this.origins.toolDeniedBy?.(server, skipped.rawName) : undefined;
    if (denied) return `Tool ${toolName} of MCP server "${server}" is hidden by ${denied}. To fix: take it out of that deny list if it should be used.`;
    const profiled = skipped ? this.origins.toolProfileOrigin?.(server, skipped.rawName) : undefined;
    if (profiled) {
      return `Tool ${toolName} of MCP server "${server}" is not kept by ${profiled}. To fix: add it to that profile's "tools", or use another profile (--profile NAME; setProfile() in the library).`;
    }
    if (skipped) return `Tool ${toolName} of MCP server "${server}" is not registered: ${skipped.reason}.`;
    const err = this.lastErrorOf(server);
    return `MCP server "${server}" is connected but does not provide ${toolName}${err ? ` (${err})` : ''}. Its tools: ${registry.toolsOf(server).map((t) => t.name).join(', ') || 'none'}.`;
  }
}

/** The row of a server with no actor (refused by the config layer, or removed): nothing runs, nothing is listed. */
function actorlessRow(
  name: string,
  facts: Pick<ServerStatus, 'scope' | 'source' | 'state' | 'status' | 'reason' | 'lastError'> & { line?: number },
): ServerStatus {
  return {
    name,
    tokens: 0,
    ...facts,
    tools: [],
    prompts: [],
    resources: [],
    resourceTemplates: [],
    skippedTools: [],
    cached: false,
    generation: 0,
    attempt: 0,
    pid: undefined,
    transport: undefined,
  };
}
