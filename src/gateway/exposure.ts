/**
 * A gateway session's tool exposure (`serve --tools all|search|auto`): which
 * of the session's tools its `tools/list` shows, the `search_tools` and
 * `call_tool` pair when not all of them fit, and the tools a search found,
 * added to that session's list (with `notifications/tools/list_changed`) so
 * clients that only call listed tools can call them too. The choice itself
 * is the controller's `exposedTools()`, shared with library hosts.
 */
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { McpController } from '../controller/controller.js';
import type { RegisteredTool } from '../registry/registry.js';
import { CALL_TOOL, SEARCH_TOOL } from '../search/exposure.js';
import type { GatewayNames } from './naming.js';
import { describeScope, type SessionScope } from './scope.js';

/** A session tool as the list handler has it: the gateway name and the registry entry. */
export interface NamedTool {
  name: string;
  entry: RegisteredTool;
}

/** Where a `tools/call` goes: answered here, or forwarded as a call of `name`. */
export type Routed = { result: CallToolResult } | { name: string; arguments: Record<string, unknown> | undefined };

/** A tool a search found: its gateway name, the registry entry, its score, and the exposure that lists it. */
interface SearchHit {
  name: string;
  tool: RegisteredTool;
  score: number;
  source: SessionExposure;
}

const DEFAULT_SEARCH_LIMIT = 5;
const MAX_SEARCH_LIMIT = 50;

function own(def: typeof SEARCH_TOOL): Tool {
  return { name: def.name, description: def.description, inputSchema: def.inputSchema };
}

function textResult(text: string, isError = false): CallToolResult {
  return { content: [{ type: 'text', text }], ...(isError ? { isError: true } : {}) };
}

/** One session's exposure state: what its searches found. */
export class SessionExposure {
  /** Registry names found by this session's searches. */
  private readonly found = new Set<string>();
  /** Whether the last list offered the search pair (then its names are ours, not forwarded). */
  private offered = false;

  constructor(
    private readonly controller: McpController,
    private readonly names: GatewayNames,
    private readonly scope: SessionScope,
    /** Tell the client its tool list changed. */
    private readonly listChanged: () => void,
  ) {}

  /** The session's `tools/list`: `listed` (already scoped) narrowed by the exposure, and the search pair when offered. */
  list(listed: readonly NamedTool[]): { tools: NamedTool[]; own: Tool[] } {
    const exposed = this.controller.exposedTools({ ...(this.scope ? { servers: this.scope } : {}), found: this.found });
    this.offered = exposed.searchTools;
    if (!exposed.searchTools) return { tools: [...listed], own: [] };
    const keep = new Set(exposed.tools.map((t) => t.name));
    return { tools: listed.filter((t) => keep.has(t.entry.name)), own: [own(SEARCH_TOOL), own(CALL_TOOL)] };
  }

  /** Whether `name` is one of the pair this session was offered (or would be). */
  private isOwn(name: string): boolean {
    if (name !== SEARCH_TOOL.name && name !== CALL_TOOL.name) return false;
    // No managed tool can be called this: gateway names start with `mcp`.
    return this.offered || this.controller.exposedTools({ ...(this.scope ? { servers: this.scope } : {}) }).searchTools;
  }

  /**
   * Answer `search_tools`, unwrap `call_tool`; `undefined` for any other tool (forwarded as usual).
   * `others`: the exposures of the session's other tool sources (a principal's own servers,
   * docs/cluster-principals.md), searched with this one and ranked together.
   */
  async route(name: string, args: Record<string, unknown> | undefined, others: readonly SessionExposure[] = []): Promise<Routed | undefined> {
    if (!this.isOwn(name)) return undefined;
    if (name === CALL_TOOL.name) {
      const target = args?.name;
      if (typeof target !== 'string' || target === '') return { result: textResult('call_tool needs "name": the tool name as search_tools returned it.', true) };
      if (target === SEARCH_TOOL.name || target === CALL_TOOL.name) return { result: textResult(`call ${target} directly, not through call_tool.`, true) };
      const inner = args?.arguments;
      if (inner !== undefined && (inner === null || typeof inner !== 'object' || Array.isArray(inner))) {
        return { result: textResult('call_tool: "arguments" must be an object matching the tool’s input schema.', true) };
      }
      return { name: target, arguments: inner as Record<string, unknown> | undefined };
    }
    const query = args?.query;
    if (typeof query !== 'string' || query.trim() === '') return { result: textResult('search_tools needs "query": the task in plain words.', true) };
    const rawLimit = typeof args?.limit === 'number' && Number.isFinite(args.limit) ? Math.floor(args.limit) : DEFAULT_SEARCH_LIMIT;
    const limit = Math.min(MAX_SEARCH_LIMIT, Math.max(1, rawLimit));
    // Each source's best `limit`, ranked together by score: both indexes score with the same fields and weights.
    const sources = [this, ...others];
    const found = (await Promise.all(sources.map((src) => src.search(query, limit)))).flat();
    const matches = found.sort((a, b) => b.score - a.score).slice(0, limit);
    const tools = matches.map(({ name, tool }) => ({ name, ...(tool.description !== undefined ? { description: tool.description } : {}), inputSchema: tool.inputSchema }));
    // Each source lists what its searches found; the client is told once.
    let changed = false;
    for (const m of matches) changed = m.source.remember(m.tool.name) || changed;
    if (changed) this.listChanged();
    if (tools.length === 0) {
      return { result: textResult(`No tool of ${describeScope(this.scope)} matches "${query}". Try other words for the task.`) };
    }
    return { result: { content: [{ type: 'text', text: JSON.stringify({ tools }, null, 1) }], structuredContent: { tools } } };
  }

  /** This source's matches for `query` in the session's scope, with their gateway names. */
  private async search(query: string, limit: number): Promise<SearchHit[]> {
    const matches = await this.controller.searchTools(query, { limit, ...(this.scope ? { servers: this.scope } : {}) });
    const byRegistryName = new Map(this.names.tools().map((t) => [t.entry.name, t.name]));
    const out: SearchHit[] = [];
    for (const m of matches) {
      const name = byRegistryName.get(m.tool.name);
      if (name !== undefined) out.push({ name, tool: m.tool, score: m.score, source: this });
    }
    return out;
  }

  /** Add a tool a search found to this source's list; whether it was new. */
  private remember(registryName: string): boolean {
    if (this.found.has(registryName)) return false;
    this.found.add(registryName);
    return true;
  }
}
