/**
 * Which tools a model is handed when there are too many: every tool
 * (`all`), only a search tool and a call tool (`search`), or every tool while
 * they fit a budget of tools and tokens and otherwise the pinned and most
 * used tools that fit plus the search pair (`auto`). Pure: the caller gives
 * the tools, the usage counts and what the session found by searching.
 */
import type { RegisteredTool } from '../registry/registry.js';
import { countDefinitionTokens } from '../registry/tokens.js';

/** How tools are exposed: see {@link ToolExposure}. */
export type ToolExposureMode = 'all' | 'search' | 'auto';

/**
 * The `toolExposure` option of a controller (and `serve --tools`).
 * `mode` defaults to `auto` when a cap is given, else `all`.
 */
export interface ToolExposure {
  mode?: ToolExposureMode;
  /** `auto`: expose every tool only while there are at most this many (the search pair included otherwise). */
  maxTools?: number;
  /** `auto`: expose every tool only while their definitions cost at most this many tokens. */
  maxToolTokens?: number;
  /** Registered names (`mcp__server__tool`) exposed first when the budget is short, in this order. */
  pinnedTools?: readonly string[];
}

/** What one selection exposes. */
export interface ExposedTools {
  /** The mode in force (`auto` resolved to `all` or `budget`). */
  mode: 'all' | 'search' | 'budget';
  /** The registered tools to list. */
  tools: RegisteredTool[];
  /** Whether `search_tools` and `call_tool` are offered beside them. */
  searchTools: boolean;
  /** Registered tools left out (reachable through the search pair). */
  hidden: number;
  /** Tokens of everything listed, the search pair included. */
  tokens: number;
}

/** A tool a gateway or host offers itself (the search pair). */
export interface OwnToolDefinition {
  name: string;
  description: string;
  inputSchema: { type: 'object'; properties: Record<string, object>; required?: string[] };
}

/** One of our own tools: an object input schema of described properties. */
function ownTool(name: string, description: string, properties: Record<string, { type: string; description: string }>, required: string[]): OwnToolDefinition {
  return { name, description, inputSchema: { type: 'object', properties, required } };
}

/** Finds tools: what a model calls when the tool it needs is not listed. */
export const SEARCH_TOOL: OwnToolDefinition = ownTool(
  'search_tools',
  'Find tools for a task among every tool of the connected MCP servers (most are not listed, to save context). ' +
    'Describe the task in plain words; the answer lists the best matching tools with their names, descriptions and input schemas. ' +
    'Found tools are added to the tool list; call them directly or through call_tool.',
  {
    query: { type: 'string', description: 'The task in plain words, e.g. "open a pull request" or "read a file".' },
    limit: { type: 'number', description: 'At most this many tools (default 5).' },
  },
  ['query'],
);

/** Calls any tool by name, listed or not. */
export const CALL_TOOL: OwnToolDefinition = ownTool(
  'call_tool',
  'Call a tool found with search_tools by its name, with its arguments (an object matching its input schema).',
  {
    name: { type: 'string', description: 'The tool name as search_tools returned it.' },
    arguments: { type: 'object', description: 'The tool arguments.' },
  },
  ['name'],
);

let pairTokens: number | undefined;

/** Tokens of the search pair's definitions. */
export function searchPairTokens(): number {
  pairTokens ??= countDefinitionTokens(SEARCH_TOOL) + countDefinitionTokens(CALL_TOOL);
  return pairTokens;
}

/** The mode a {@link ToolExposure} resolves to. */
export function exposureMode(exposure: ToolExposure | undefined): ToolExposureMode {
  if (exposure?.mode) return exposure.mode;
  return exposure?.maxTools !== undefined || exposure?.maxToolTokens !== undefined ? 'auto' : 'all';
}

/** Inputs of {@link selectTools} besides the tools. */
export interface SelectionContext {
  /** How often each registered name was called (most called are exposed first after the pinned ones). */
  usage?: ReadonlyMap<string, number>;
  /** Registered names found by searches in this session: always listed once the search pair is offered. */
  found?: ReadonlySet<string>;
}

/**
 * Pick what to expose of `tools` (already scoped to the session).
 * `auto`: all while `tools.length <= maxTools` and their tokens
 * `<= maxToolTokens`; otherwise the found tools, then the pinned ones, then
 * the most called, each while it fits what the caps leave beside the search
 * pair. `search`: the found tools and the pair.
 */
export function selectTools(tools: readonly RegisteredTool[], exposure: ToolExposure | undefined, ctx: SelectionContext = {}): ExposedTools {
  const mode = exposureMode(exposure);
  const total = (list: readonly RegisteredTool[]): number => list.reduce((n, t) => n + t.tokens, 0);
  if (mode === 'all') return { mode: 'all', tools: [...tools], searchTools: false, hidden: 0, tokens: total(tools) };
  const maxTools = exposure?.maxTools ?? Infinity;
  const maxTokens = exposure?.maxToolTokens ?? Infinity;
  if (mode === 'auto' && tools.length <= maxTools && (maxTokens === Infinity || total(tools) <= maxTokens)) {
    return { mode: 'all', tools: [...tools], searchTools: false, hidden: 0, tokens: total(tools) };
  }
  const byName = new Map(tools.map((t) => [t.name, t]));
  const chosen = new Map<string, RegisteredTool>();
  let tokens = searchPairTokens();
  // What a search found is what the model asked for: listed whatever the budget.
  for (const name of ctx.found ?? []) {
    const t = byName.get(name);
    if (t && !chosen.has(name)) {
      chosen.set(name, t);
      tokens += t.tokens;
    }
  }
  if (mode === 'auto') {
    const usage = ctx.usage ?? new Map<string, number>();
    const used = [...usage.entries()].filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([name]) => name);
    const slots = maxTools - 2;
    for (const name of [...(exposure?.pinnedTools ?? []), ...used]) {
      const t = byName.get(name);
      if (!t || chosen.has(name)) continue;
      if (chosen.size >= slots) break;
      if (tokens + t.tokens > maxTokens) continue;
      chosen.set(name, t);
      tokens += t.tokens;
    }
  }
  // Listing order stays the registry's.
  const listed = tools.filter((t) => chosen.has(t.name));
  return { mode: mode === 'auto' ? 'budget' : 'search', tools: listed, searchTools: true, hidden: tools.length - listed.length, tokens };
}
