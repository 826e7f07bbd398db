import type { Actor, AnyActorRef } from 'xstate';
import { publicStatusOf, reasonOf, stateNameOf } from '../../machines/reason.js';
import type { reconcilerMachine } from '../../machines/reconciler.machine.js';
import type { DesiredMap, DesiredServer, Scope } from '../../machines/types.js';
import { formatIssue, type ConfigIssue } from '../config/sources.js';
import type { ComputedGating } from '../gating/compute.js';
import { transportOf } from '../config/identity.js';
import { registeredToolName, sanitiseNamePart } from '../registry/naming.js';
import type { SkippedTool, ToolRegistry } from '../registry/registry.js';
import { defineLazyTokens } from '../registry/tokens.js';
import type { Connections } from './connections.js';
import { describeReason, disabledSentence, enableFix, fixFor, type ReasonDetail } from './messages.js';
import type { Reason, ServerStateName, ServerStatus } from './types.js';

/** What the status view reads; getters for what changes over the controller's life. */
export interface StatusSources {
  /** The reconciler actor: its children are the server actors, its context remembers removed servers. */
  actor: Pick<Actor<typeof reconcilerMachine>, 'getSnapshot' | 'subscribe'>;
  registry: ToolRegistry;
  connections: Connections;
  /** The desired map as last reconciled. */
  desired(): DesiredMap;
  /** The gating computed by the last reconcile. */
  gating(): ComputedGating | undefined;
  /** The config issues of the last read. */
  issues(): readonly ConfigIssue[];
  /** The scope of a config file, when it is one of the sources. */
  scopeOf(file: string): Scope | undefined;
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
  constructor(private readonly src: StatusSources) {}

  /** Servers removed from the config (SPEC §3.1), from the reconciler's context. */
  removed(): readonly string[] {
    return this.src.actor.getSnapshot().context.removed;
  }

  /** The live server actors by name (a Map: a name such as `toString` must not find an inherited member). */
  serverActors(): Map<string, AnyActorRef> {
    const children = this.src.actor.getSnapshot().children as Record<string, AnyActorRef | undefined>;
    const out = new Map<string, AnyActorRef>();
    for (const [id, ref] of Object.entries(children)) {
      if (ref && (ref.getSnapshot() as { machine?: { id?: string } }).machine?.id === 'server') out.set(id, ref);
    }
    return out;
  }

  /** The state of `name`'s actor; `removed` when it has none. */
  stateOf(name: string): ServerStateName {
    const ref = this.serverActors().get(name);
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
    const desired = this.src.desired();
    for (const issue of this.src.issues()) {
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
    const excludedBy = this.src.gating()?.excludedBy;
    const files = excludedBy && Object.hasOwn(excludedBy, name) ? excludedBy[name] : undefined;
    if (files?.length) return { excludedBy: files };
    const disabledBy = this.src.disabledBy?.(name);
    const profile = this.src.profileOf?.(name);
    return { ...(disabledBy ? { disabledBy } : {}), ...(profile ? { profile } : {}) };
  }

  /** Per-server status, servers in name order; removed servers last seen and refused config entries are included. */
  rows(): ServerStatus[] {
    const { registry, connections } = this.src;
    const rows: ServerStatus[] = [];
    const actors = this.serverActors();
    const refused = this.refused();
    for (const [name, ref] of actors) {
      const snap = ref.getSnapshot();
      const ctx = snap.context as { entry: DesiredServer; generation: number; attempt: number; lastError?: string };
      const state = stateNameOf(snap);
      const reason = reasonOf(snap);
      const excludedBy = reason === 'excluded' ? this.detailOf(name).excludedBy : undefined;
      const disabledBy = reason === 'disabled' ? this.src.disabledBy?.(name) : undefined;
      const profile = reason === 'disabled' ? this.src.profileOf?.(name) : undefined;
      const tools = registry.toolsOf(name);
      const prompts = registry.promptsOf(name);
      const resources = registry.resources.resourcesOf(name);
      const templates = registry.resources.templatesOf(name);
      const conn = connections.get(name)?.conn;
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
      } as Omit<ServerStatus, 'tokens'>;
      // Counted only when read: most status readers never look, and the tokenizer is heavy to load.
      defineLazyTokens(row, () => tools.reduce((sum, t) => sum + t.tokens, 0));
      rows.push(row as ServerStatus);
    }
    for (const [name, entry] of refused) {
      if (actors.has(name)) continue;
      rows.push(
        actorlessRow(name, {
          scope: this.src.scopeOf(entry.file),
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
    return this.src.registry.skippedOf(name).map((s) => {
      const origin = this.src.toolDisabledBy?.(name, s.rawName);
      if (origin) return { ...s, reason: `disabled by ${origin} (${enableFix(name, s.rawName)})` };
      const denied = this.src.toolDeniedBy?.(name, s.rawName);
      if (denied) return { ...s, reason: `hidden by ${denied}` };
      const profile = this.src.toolProfileOrigin?.(name, s.rawName);
      return profile ? { ...s, reason: `not kept by ${profile}` } : s;
    });
  }

  /** The last error of a live server actor, from its context (the controller reports its errors there). */
  lastErrorOf(name: string): string | undefined {
    const ref = this.serverActors().get(name);
    if (!ref) return this.refused().get(name)?.error;
    return (ref.getSnapshot().context as { lastError?: string } | undefined)?.lastError;
  }

  /**
   * Why `server` is unavailable: from its actor's state; `config_invalid`
   * for an entry refused by the config layer (it has no actor), `removed`
   * for one removed from the config; `undefined` when fine or unknown.
   */
  unavailableReason(server: string): Reason | undefined {
    const ref = this.serverActors().get(server);
    if (ref) return reasonOf(ref.getSnapshot());
    if (this.refused().has(server)) return 'config_invalid';
    return this.removed().includes(server) ? 'removed' : undefined;
  }

  /** The configured (or removed) server a `mcp__<server>__<tool>` name belongs to, by the longest matching sanitised prefix. */
  serverOfTool(toolName: string): string | undefined {
    const registered = this.src.registry.getTool(toolName);
    if (registered) return registered.server;
    const known = new Set([...this.serverActors().keys(), ...this.removed(), ...Object.keys(this.src.desired()), ...this.refused().keys()]);
    let best: string | undefined;
    for (const name of known) {
      if (toolName.startsWith(`mcp__${sanitiseNamePart(name)}__`) && (!best || name.length > best.length)) best = name;
    }
    return best;
  }

  /** A sentence for the model or the user: which server a tool belongs to, why it is unavailable, and what fixes it. */
  toolUnavailableMessage(toolName: string): string {
    const { registry } = this.src;
    const registered = registry.getTool(toolName);
    const server = this.serverOfTool(toolName);
    if (!server) {
      const servers = Object.keys(this.src.desired());
      return `Tool ${toolName} is not provided by any configured MCP server${servers.length ? ` (configured: ${servers.join(', ')})` : ''}. Check the name with \`mcp-reconciler tools\`.`;
    }
    const reason = this.unavailableReason(server);
    if (reason) {
      // For a failure the cause is the most useful part of the answer.
      const cause = reason === 'failed' || reason === 'needs_auth' || reason === 'config_invalid' ? this.lastErrorOf(server) : undefined;
      const detail = this.detailOf(server);
      return `Tool ${toolName} is unavailable: MCP server "${server}" ${describeReason(reason, detail)}${cause ? ` (last error: ${cause})` : ''}. To fix: ${fixFor(reason, server, undefined, detail)}.`;
    }
    const ref = this.serverActors().get(server);
    const state = ref ? stateNameOf(ref.getSnapshot()) : undefined;
    if (state === 'dormant' && registered) {
      return `Tool ${toolName} is available: MCP server "${server}" is dormant (not running, tools from its listing cache); the first call starts it.`;
    }
    if (state === 'connecting') {
      return registered
        ? `Tool ${toolName} is available from the listing cache: MCP server "${server}" is still connecting, and a call waits for it.`
        : `Tool ${toolName} is not available yet: MCP server "${server}" is still connecting.`;
    }
    if (registered) return `Tool ${toolName} is available (server "${server}" is connected).`;
    const skipped = registry.skippedOf(server).find((s) => registeredToolName(server, s.rawName) === toolName);
    const switchedOff = skipped ? this.src.toolDisabledBy?.(server, skipped.rawName) : undefined;
    if (skipped && switchedOff) {
      return `Tool ${toolName} of MCP server "${server}" ${disabledSentence(switchedOff)}. To fix: ${enableFix(server, skipped.rawName)}.`;
    }
    const denied = skipped ? this.src.toolDeniedBy?.(server, skipped.rawName) : undefined;
    if (denied) return `Tool ${toolName} of MCP server "${server}" is hidden by ${denied}. To fix: take it out of that deny list if it should be used.`;
    const profiled = skipped ? this.src.toolProfileOrigin?.(server, skipped.rawName) : undefined;
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
