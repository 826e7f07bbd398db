import deepEqual from 'fast-deep-equal';
import { matchesAny } from '../util/glob.js';
import type { Prompt, Resource, ResourceTemplate, Tool } from '@modelcontextprotocol/sdk/types.js';
import { ErrorCode, McpReconcilerError } from '../errors.js';
import { compareCodePoints, registeredPromptName, registeredToolName, toolPrefix } from './naming.js';
import { notifyAll } from '../util/listeners.js';
import { ResourceRegistry } from './resources.js';
import { countDefinitionTokens, defineLazyTokens } from './tokens.js';

/** Which raw tool names of a server are registered (SPEC §2.2 `includeTools` / `excludeTools`). */
export interface ToolFilter {
  /** When present, only these raw names are registered (`[]` registers none). */
  includeTools?: readonly string[];
  /** Raw names never registered; applied after `includeTools`. */
  excludeTools?: readonly string[];
}

/** A tool as the host sees it: `name` is `mcp__<server>__<tool>`. */
export interface RegisteredTool {
  name: string;
  server: string;
  /** The name the server uses; what `tools/call` is sent with. */
  rawName: string;
  title?: string;
  description?: string;
  inputSchema: Tool['inputSchema'];
  outputSchema?: Tool['outputSchema'];
  annotations?: Tool['annotations'];
  /** The connection generation whose listing this entry came from. */
  generation: number;
  /**
   * `true` while the entry comes from the listing cache (SPEC §12) rather than
   * from a listing of the running server; the next live listing replaces it.
   */
  cached?: true;
  /**
   * What the definition costs in a model's context: tokens of `name`,
   * `description` and `inputSchema` as JSON, with the `o200k_base` encoding.
   * Counted on first read (the tokenizer loads then), cached per definition.
   */
  readonly tokens: number;
}

/** A prompt as the host sees it: `name` is `mcp__<server>__<prompt>`. */
export interface RegisteredPrompt {
  name: string;
  server: string;
  rawName: string;
  description?: string;
  arguments?: Prompt['arguments'];
  generation: number;
  /** `true` while the entry comes from the listing cache. */
  cached?: true;
}

/** A listed tool that is not registered, and why. */
export interface SkippedTool {
  /** The server's name for it (`tools[<index>]` for a tool listed without a string name). */
  rawName: string;
  reason: string;
  /** Set when the tool's definition is invalid (the server's bug, worth a warning), not a filter or policy choice. */
  invalid?: true;
}

/** A listed tool whose definition is invalid: never registered, reported as a skipped tool. */
export interface InvalidToolDefinition {
  rawName: string;
  reason: string;
}

/** Outcome of a commit: the server's registered entries now, or the conflict that rejected it. */
export type CommitResult =
  | { ok: true; tools: RegisteredTool[]; prompts: RegisteredPrompt[]; skipped: SkippedTool[] }
  | { ok: false; error: McpReconcilerError };

/** Outcome of {@link ToolRegistry.setFilter}. */
export interface SetFilterResult {
  /** Whether the server's registered tools changed. */
  changed: boolean;
  /** Set when the filter let through a tool that conflicts; the previous tools stay. */
  error?: McpReconcilerError;
}

/** Registered names that appeared, disappeared or changed definition in one step. */
export interface NameChanges {
  added: string[];
  removed: string[];
  /** Same name, different definition (schema, description, …). */
  updated: string[];
}

/** One server's change; top-level lists are tool names, `prompts` the prompt names. */
export interface RegistryChange extends NameChanges {
  server: string;
  prompts: NameChanges;
}

/** Options of a {@link ToolRegistry}. */
export interface ToolRegistryOptions {
  /** Receives errors thrown by `onChange` listeners (they are otherwise swallowed). */
  onListenerError?: (error: unknown) => void;
}

interface Listing<T> {
  list: readonly T[];
  generation: number;
  /** Tools of this listing whose definition is invalid (tool listings only). */
  invalid?: readonly InvalidToolDefinition[];
  /** Read from the listing cache, not from the server. */
  cached?: boolean;
}

interface ServerRecord {
  /** The accepted raw listings, what `setFilter` re-applies to. */
  rawTools?: Listing<Tool>;
  rawPrompts?: Listing<Prompt>;
  tools: readonly RegisteredTool[];
  prompts: readonly RegisteredPrompt[];
  skipped: readonly SkippedTool[];
  /** The latest listing of each kind that was rejected, retried when names free up. */
  pending?: { tools?: Listing<Tool>; prompts?: Listing<Prompt>; error: McpReconcilerError };
}

/** A registered name another server holds and must give up, because the committing server sorts first. */
interface Yielded {
  kind: 'tool' | 'prompt';
  name: string;
  /** The committing server's raw name. */
  rawName: string;
  holder: string;
  holderRawName: string;
}

interface Built {
  tools?: { registered: RegisteredTool[]; skipped: SkippedTool[] };
  prompts?: RegisteredPrompt[];
  /** Names held by later-sorting servers (not prefix mates) that this listing takes over. */
  yields: Yielded[];
}

const TASK_REQUIRED_REASON =
  "execution.taskSupport is 'required': the tool only runs as a task, which mcp-reconciler does not call";

function taskSupportOf(tool: Tool): unknown {
  // Read structurally: older SDK `Tool` types have no `execution`.
  const execution = (tool as { execution?: { taskSupport?: unknown } }).execution;
  return execution?.taskSupport;
}

function filterReason(rawName: string, filter: ToolFilter): string | undefined {
  // `*` in an entry matches any run of characters (MCP tool names never contain it).
  if (filter.includeTools !== undefined && !matchesAny(filter.includeTools, rawName)) return 'not listed in includeTools';
  if (filter.excludeTools !== undefined && matchesAny(filter.excludeTools, rawName)) return 'listed in excludeTools';
  return undefined;
}

function toRegisteredTool(server: string, tool: Tool, generation: number, cached?: boolean): RegisteredTool {
  const out = { name: registeredToolName(server, tool.name), server, rawName: tool.name, inputSchema: tool.inputSchema, generation } as Omit<RegisteredTool, 'tokens'>;
  if (cached) out.cached = true;
  if (tool.title !== undefined) out.title = tool.title;
  if (tool.description !== undefined) out.description = tool.description;
  if (tool.outputSchema !== undefined) out.outputSchema = tool.outputSchema;
  if (tool.annotations !== undefined) out.annotations = tool.annotations;
  defineLazyTokens(out, toolTokens);
  return Object.freeze(out as RegisteredTool);
}

/** `tokens` of a registered tool: one function for all, so they share one getter (tokens.ts). */
function toolTokens(tool: Omit<RegisteredTool, 'tokens'>): number {
  return countDefinitionTokens({ name: tool.name, description: tool.description, inputSchema: tool.inputSchema });
}

function toRegisteredPrompt(server: string, prompt: Prompt, generation: number, cached?: boolean): RegisteredPrompt {
  const out: RegisteredPrompt = { name: registeredPromptName(server, prompt.name), server, rawName: prompt.name, generation };
  if (cached) out.cached = true;
  if (prompt.description !== undefined) out.description = prompt.description;
  if (prompt.arguments !== undefined) out.arguments = prompt.arguments;
  return Object.freeze(out);
}

const PREFIX_HINT = 'Rename one of the two servers in the config so their names still differ once every character outside [A-Za-z0-9_-] becomes "_".';

function prefixProblem(server: string, owner: string): string {
  return `"${server}" and "${owner}" both become the tool prefix ${toolPrefix(server)}, which "${owner}" owns (of server names that sanitise alike, the first in code-point order owns the prefix)`;
}

const NAME_HINT =
  'Hide the clashing tool or prompt with excludeTools on one of the two servers, or rename one of the servers in the config so the names differ.';

/**
 * The same sentence whichever of the two connected first: both servers, both
 * raw names, the registered name, and who owns it by the fixed rule.
 */
function nameProblem(kind: 'tool' | 'prompt', name: string, loser: string, loserRaw: string, owner: string, ownerRaw: string): string {
  return (
    `${kind} "${loserRaw}" of MCP server "${loser}" and ${kind} "${ownerRaw}" of MCP server "${owner}" both become ${name}, which "${owner}" owns ` +
    `(of servers whose ${kind} names clash, the one first in code-point order owns the name, whatever the connect order)`
  );
}

function quoteList(names: readonly string[]): string {
  return names.map((n) => `"${n}"`).join(', ');
}

function diffNames<T extends { name: string; generation: number }>(before: readonly T[], after: readonly T[]): NameChanges {
  const old = new Map(before.map((e) => [e.name, e]));
  const now = new Map(after.map((e) => [e.name, e]));
  // Where an entry came from (generation, the cache) is not part of its definition: a live listing that confirms the cache changes nothing.
  // `tokens` follows from the definition, and reading it would load the tokenizer.
  const sameDefinition = (a: T, b: T): boolean => deepEqual(definitionOf(a), definitionOf(b));
  return {
    added: after.filter((e) => !old.has(e.name)).map((e) => e.name),
    removed: before.filter((e) => !now.has(e.name)).map((e) => e.name),
    updated: after.filter((e) => old.has(e.name) && !sameDefinition(old.get(e.name)!, e)).map((e) => e.name),
  };
}

const NOT_DEFINITION = new Set(['generation', 'cached', 'tokens']);

/** An entry's own fields that make up its definition, read without touching lazy ones. */
function definitionOf(entry: object): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(entry)) if (!NOT_DEFINITION.has(key)) out[key] = (entry as Record<string, unknown>)[key];
  return out;
}

function isEmpty(c: NameChanges): boolean {
  return c.added.length === 0 && c.removed.length === 0 && c.updated.length === 0;
}

function sameFilter(a: ToolFilter | undefined, b: ToolFilter | undefined): boolean {
  return deepEqual(a?.includeTools, b?.includeTools) && deepEqual(a?.excludeTools, b?.excludeTools);
}

/**
 * The tools and prompts of one controller (SPEC §6), named
 * `mcp__<server>__<name>`. Holds no module-level state: two registries never
 * see each other's entries.
 *
 * Every commit is all or nothing. A listing is rejected (`tool_conflict`) when
 * a raw name appears twice, two raw names sanitise to the same registered
 * name, or a registered name is owned by another server; then nothing of it is
 * registered and the server's previous entries stay exactly as they were
 * here (the controller then closes the generation, which drops them).
 * Tool and prompt names are separate namespaces.
 *
 * A registered name two servers produce (`a` + `b__c` and `a__b` + `c` are
 * both `mcp__a__b__c`) is owned by the server first in code-point order
 * among those with an accepted listing, whatever the connect order: the
 * other's listing is rejected, or, when the owner arrives later, taken out
 * and kept pending, with an error naming both servers and both raw names.
 *
 * Servers whose names sanitise alike (`x.y`, `x_y`) share a prefix
 * (`mcp__x_y__`). It is owned by the one first in code-point order among
 * those with an accepted listing, whatever the connect order: the others'
 * listings are rejected (or, when the owner arrives later, taken out and kept
 * pending) with an error naming both, and register once the owner is dropped.
 *
 * A rejected listing is kept as *pending*: it is retried, as one unit, when a
 * later step frees names (another server is dropped or narrows its filter), and
 * a later commit of either kind is tried together with it, so the registry
 * converges on each server's latest listing once that fits.
 *
 * Iteration order is stable: servers by name, then listing order.
 *
 * Resources and resource templates live in {@link resources}, by URI and
 * with their own (non-rejecting) ownership rule; they come and go with the
 * server's tools: committed with a listing, dropped with the server.
 */
export class ToolRegistry {
  /** The same servers' resources and resource templates. */
  readonly resources: ResourceRegistry;
  private readonly records = new Map<string, ServerRecord>();
  private readonly filters = new Map<string, ToolFilter>();
  private readonly toolIndex = new Map<string, RegisteredTool>();
  private readonly promptIndex = new Map<string, RegisteredPrompt>();
  private readonly listeners = new Set<(change: RegistryChange) => void>();
  private readonly prefixes = new Map<string, string>();
  /** Servers with a record, by tool prefix, so finding a server's prefix mates scans no other records. */
  private readonly byPrefix = new Map<string, Set<string>>();
  /** `records`' keys in code-unit order, kept until a record is added or removed (every `tools()` call wants them). */
  private sorted: string[] | undefined;
  /** `tools()` as last built, until any server's entries change (a host re-reads it at every `tools-changed`). */
  private toolList: readonly RegisteredTool[] | undefined;

  constructor(private readonly options: ToolRegistryOptions = {}) {
    this.resources = new ResourceRegistry(options);
  }

  /**
   * Replace a server's tools and prompts with one generation's listing.
   * `filter`, when given, becomes the server's stored filter (kept even when
   * the listing is rejected). Duplicate checks look only at tools that pass
   * the filter, so `excludeTools` can hide a server's duplicate.
   * `options.cached` marks every entry `cached: true` (a listing read from
   * the listing cache; the server's next live commit replaces it).
   * Resources, when the listing has them, go to {@link resources} once the
   * tools and prompts are accepted (a rejected listing registers none).
   * `invalidTools` (listed, but with an invalid definition) are never
   * registered; they are reported as skipped with `invalid: true`.
   */
  commit(
    server: string,
    generation: number,
    listing: {
      tools: Tool[];
      prompts: Prompt[];
      resources?: Resource[];
      resourceTemplates?: ResourceTemplate[];
      invalidTools?: readonly InvalidToolDefinition[];
    },
    filter?: ToolFilter,
    options: { cached?: boolean } = {},
  ): CommitResult {
    if (filter !== undefined) this.storeFilter(server, filter);
    const cached = options.cached === true ? { cached: true } : {};
    const result = this.commitListings(server, {
      tools: { list: listing.tools, generation, ...cached, ...(listing.invalidTools?.length ? { invalid: listing.invalidTools } : {}) },
      prompts: { list: listing.prompts, generation, ...cached },
    });
    if (result.ok && listing.resources) {
      this.resources.commit(server, generation, { resources: listing.resources, resourceTemplates: listing.resourceTemplates ?? [] }, options);
    }
    return result;
  }

  /** Replace only a server's tools (a `tools/list_changed` re-list); same all-or-nothing rule; `invalid` as in {@link commit}. */
  commitTools(server: string, generation: number, tools: Tool[], filter?: ToolFilter, invalid?: readonly InvalidToolDefinition[]): CommitResult {
    if (filter !== undefined) this.storeFilter(server, filter);
    return this.commitListings(server, { tools: { list: tools, generation, ...(invalid?.length ? { invalid } : {}) } });
  }

  /** Replace only a server's prompts (a `prompts/list_changed` re-list); same all-or-nothing rule. */
  commitPrompts(server: string, generation: number, prompts: Prompt[]): CommitResult {
    return this.commitListings(server, { prompts: { list: prompts, generation } });
  }

  /**
   * Store a server's filter and re-apply it to its latest raw tool listing,
   * without a new commit or reconnect. If the widened set now conflicts with
   * another server, the previous tools stay, `error` says why, and the listing
   * waits as pending; if the filter hides what made a pending listing
   * conflict, that listing is registered now. A server not yet committed just
   * keeps the filter for its first commit.
   */
  setFilter(server: string, filter: ToolFilter): SetFilterResult {
    const before = this.filters.get(server);
    this.storeFilter(server, filter);
    const rec = this.records.get(server);
    if (!rec || (sameFilter(before, filter) && !rec.pending)) return { changed: false };
    const tools = rec.pending?.tools ?? rec.rawTools;
    if (!tools) return { changed: false };
    const beforeTools = rec.tools;
    let error = this.attempt(server, rec, { tools });
    if (error && rec.pending?.error === error) {
      // Here, unlike a commit, the server keeps what it had: say so.
      error = new McpReconcilerError(error.code, `${error.message} Its previously registered tools stay (the new filter is not applied).`, {
        ...(error.hint ? { hint: error.hint } : {}),
        details: { ...error.details },
      });
      rec.pending.error = error;
    }
    this.retryPending();
    const changed = !isEmpty(diffNames(beforeTools, this.records.get(server)?.tools ?? []));
    return error ? { changed, error } : { changed };
  }

  /** Remove a server's tools, prompts, resources, pending listing and filter; true when it was known. */
  drop(server: string): boolean {
    this.resources.drop(server);
    const rec = this.records.get(server);
    const hadFilter = this.filters.delete(server);
    if (!rec) return hadFilter;
    this.forgetRecord(server);
    for (const t of rec.tools) this.toolIndex.delete(t.name);
    for (const p of rec.prompts) this.promptIndex.delete(p.name);
    this.emit(server, diffNames(rec.tools, []), diffNames(rec.prompts, []));
    this.retryPending();
    return true;
  }

  /** Every registered tool, by server name then listing order. */
  tools(): RegisteredTool[] {
    this.toolList ??= this.sortedServers().flatMap((s) => this.records.get(s)!.tools);
    return this.toolList.slice();
  }

  /** Every registered prompt, by server name then listing order. */
  prompts(): RegisteredPrompt[] {
    return this.sortedServers().flatMap((s) => this.records.get(s)!.prompts);
  }

  /** A server's registered tools in listing order (empty when unknown). */
  toolsOf(server: string): RegisteredTool[] {
    return [...(this.records.get(server)?.tools ?? [])];
  }

  /** A server's registered prompts in listing order (empty when unknown). */
  promptsOf(server: string): RegisteredPrompt[] {
    return [...(this.records.get(server)?.prompts ?? [])];
  }

  /** The tools of the server's registered listing that were left out, with the reason. */
  skippedOf(server: string): SkippedTool[] {
    return [...(this.records.get(server)?.skipped ?? [])];
  }

  /** The conflict that keeps the server's latest listing from being registered, if any. */
  conflictOf(server: string): McpReconcilerError | undefined {
    return this.records.get(server)?.pending?.error;
  }

  /** The registered tool with this `mcp__…` name. */
  getTool(name: string): RegisteredTool | undefined {
    return this.toolIndex.get(name);
  }

  /** The registered prompt with this `mcp__…` name. */
  getPrompt(name: string): RegisteredPrompt | undefined {
    return this.promptIndex.get(name);
  }

  /** Whether anything was committed for this server (accepted or pending) since its last drop. */
  has(server: string): boolean {
    return this.records.has(server);
  }

  /** Servers with a record, sorted by name. */
  servers(): string[] {
    return [...this.sortedServers()];
  }

  /**
   * Be told after each change of a server's registered names or definitions
   * (not for a re-commit that changes only the generation). A throwing
   * listener is isolated. Returns the unsubscribe function.
   */
  onChange(listener: (change: RegistryChange) => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /** Forget everything (controller disposal). Emits a removal for each server. */
  clear(): void {
    const servers = this.sortedServers();
    const dropped = servers.map((s) => [s, this.records.get(s)!] as const);
    // Wipe first, then tell: no pending listing gets retried half-way through.
    this.records.clear();
    this.byPrefix.clear();
    this.sorted = undefined;
    this.toolList = undefined;
    this.filters.clear();
    this.toolIndex.clear();
    this.promptIndex.clear();
    this.resources.clear();
    for (const [server, rec] of dropped) this.emit(server, diffNames(rec.tools, []), diffNames(rec.prompts, []));
  }

  // ── internals ──────────────────────────────────────────────────────────

  private sortedServers(): string[] {
    this.sorted ??= [...this.records.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return this.sorted;
  }

  private addRecord(server: string, rec: ServerRecord): void {
    this.records.set(server, rec);
    this.sorted = undefined;
    const prefix = this.prefixOf(server);
    let mates = this.byPrefix.get(prefix);
    if (!mates) this.byPrefix.set(prefix, (mates = new Set()));
    mates.add(server);
  }

  private forgetRecord(server: string): void {
    this.records.delete(server);
    this.sorted = undefined;
    this.toolList = undefined;
    const prefix = this.prefixOf(server);
    const mates = this.byPrefix.get(prefix);
    mates?.delete(server);
    if (mates?.size === 0) this.byPrefix.delete(prefix);
  }

  private storeFilter(server: string, filter: ToolFilter): void {
    const copy: ToolFilter = {};
    if (filter.includeTools !== undefined) copy.includeTools = [...filter.includeTools];
    if (filter.excludeTools !== undefined) copy.excludeTools = [...filter.excludeTools];
    this.filters.set(server, copy);
  }

  private commitListings(server: string, next: { tools?: Listing<Tool>; prompts?: Listing<Prompt> }): CommitResult {
    let rec = this.records.get(server);
    if (!rec) {
      rec = { tools: [], prompts: [], skipped: [] };
      this.addRecord(server, rec);
    }
    const error = this.attempt(server, rec, next);
    if (error) return { ok: false, error };
    this.retryPending();
    return { ok: true, tools: [...rec.tools], prompts: [...rec.prompts], skipped: [...rec.skipped] };
  }

  /**
   * Try `next` together with whatever else is pending for the server; on
   * success swap it in whole and emit, else keep it pending. Returns the
   * conflict, if any. A failed `retry` leaves the pending listing and its
   * error object as they were.
   */
  private attempt(
    server: string,
    rec: ServerRecord,
    next: { tools?: Listing<Tool>; prompts?: Listing<Prompt> },
    retry = false,
  ): McpReconcilerError | undefined {
    const tools = next.tools ?? rec.pending?.tools;
    const prompts = next.prompts ?? rec.pending?.prompts;
    const built = this.build(server, tools, prompts);
    if (built instanceof McpReconcilerError) {
      if (retry) return built;
      rec.pending = { error: built };
      if (tools) rec.pending.tools = tools;
      if (prompts) rec.pending.prompts = prompts;
      return built;
    }
    // First, so the names the others give up are free before ours go into the index.
    this.evictPrefixMates(server);
    this.evictNameHolders(server, built.yields);
    const beforeTools = rec.tools;
    const beforePrompts = rec.prompts;
    if (built.tools && tools) {
      for (const t of rec.tools) this.toolIndex.delete(t.name);
      rec.tools = built.tools.registered;
      this.toolList = undefined;
      rec.skipped = built.tools.skipped;
      rec.rawTools = tools;
      for (const t of rec.tools) this.toolIndex.set(t.name, t);
    }
    if (built.prompts && prompts) {
      for (const p of rec.prompts) this.promptIndex.delete(p.name);
      rec.prompts = built.prompts;
      rec.rawPrompts = prompts;
      for (const p of rec.prompts) this.promptIndex.set(p.name, p);
    }
    delete rec.pending;
    this.emit(server, diffNames(beforeTools, rec.tools), diffNames(beforePrompts, rec.prompts));
    return undefined;
  }

  /** Other servers with a record whose names sanitise to the same prefix as `server`'s. */
  private prefixMates(server: string): string[] {
    return [...(this.byPrefix.get(this.prefixOf(server)) ?? [])].filter((s) => s !== server);
  }

  /** `toolPrefix`, memoised: the prefix index looks every server's up on each add and removal. */
  private prefixOf(server: string): string {
    let prefix = this.prefixes.get(server);
    if (prefix === undefined) {
      prefix = toolPrefix(server);
      this.prefixes.set(server, prefix);
    }
    return prefix;
  }

  /** Whether the server has an accepted listing, which is what claims its prefix. */
  private claimsPrefix(server: string): boolean {
    const rec = this.records.get(server);
    return rec !== undefined && (rec.rawTools !== undefined || rec.rawPrompts !== undefined);
  }

  /**
   * `owner` was just accepted: every later-sorting server sharing its prefix
   * gives up its entries, and its listing waits as pending until `owner` is
   * dropped.
   */
  private evictPrefixMates(owner: string): void {
    for (const mate of this.prefixMates(owner)) {
      if (compareCodePoints(mate, owner) < 0 || !this.claimsPrefix(mate)) continue;
      this.evict(
        mate,
        new McpReconcilerError(ErrorCode.ToolConflict, `MCP server "${mate}" lost its tools and prompts to "${owner}": ${prefixProblem(mate, owner)}.`, {
          hint: PREFIX_HINT,
          details: { server: mate, prefix_owner: owner },
        }),
      );
    }
  }

  /**
   * `owner` was just accepted with names that later-sorting servers held
   * (`a` + `b__c` and `a__b` + `c` are both `mcp__a__b__c`): each such holder
   * gives up its entries, and its listing waits as pending, exactly as if
   * `owner` had connected first.
   */
  private evictNameHolders(owner: string, yields: readonly Yielded[]): void {
    const byHolder = new Map<string, Yielded[]>();
    for (const y of yields) byHolder.set(y.holder, [...(byHolder.get(y.holder) ?? []), y]);
    for (const [holder, lost] of byHolder) {
      if (!this.claimsPrefix(holder)) continue; // already taken out (a prefix mate)
      const problems = lost.map((y) => nameProblem(y.kind, y.name, holder, y.holderRawName, owner, y.rawName));
      const details: Record<string, unknown> = { server: holder };
      for (const kind of ['tool', 'prompt'] as const) {
        const taken = lost.filter((y) => y.kind === kind).map((y) => ({ name: y.name, rawName: y.holderRawName, owner, ownerRawName: y.rawName }));
        if (taken.length > 0) details[`taken_${kind}s`] = taken;
      }
      this.evict(
        holder,
        new McpReconcilerError(ErrorCode.ToolConflict, `MCP server "${holder}" lost its tools and prompts to "${owner}": ${problems.join('; ')}.`, {
          hint: NAME_HINT,
          details,
        }),
      );
    }
  }

  /** Take every entry of `mate` out; its listing waits as pending with `error` (retried when names free up). */
  private evict(mate: string, error: McpReconcilerError): void {
    const rec = this.records.get(mate)!;
    const tools = rec.pending?.tools ?? rec.rawTools;
    const prompts = rec.pending?.prompts ?? rec.rawPrompts;
    rec.pending = { error };
    if (tools) rec.pending.tools = tools;
    if (prompts) rec.pending.prompts = prompts;
    const beforeTools = rec.tools;
    const beforePrompts = rec.prompts;
    for (const t of rec.tools) this.toolIndex.delete(t.name);
    for (const p of rec.prompts) this.promptIndex.delete(p.name);
    rec.tools = [];
    this.toolList = undefined;
    rec.prompts = [];
    rec.skipped = [];
    delete rec.rawTools;
    delete rec.rawPrompts;
    this.emit(mate, diffNames(beforeTools, []), diffNames(beforePrompts, []));
  }

  /** Registered entries for the given listings, or the conflict that forbids them. */
  private build(server: string, tools: Listing<Tool> | undefined, prompts: Listing<Prompt> | undefined): Built | McpReconcilerError {
    const problems: string[] = [];
    const details: Record<string, unknown> = { server };
    const out: Built = { yields: [] };
    const owner = this.prefixMates(server).find((m) => compareCodePoints(m, server) < 0 && this.claimsPrefix(m));
    if (owner !== undefined) {
      problems.push(prefixProblem(server, owner));
      details.prefix_owner = owner;
    }
    // Names held by a later-sorting server with the same prefix are not a clash: it yields them.
    const yielding = new Set(this.prefixMates(server).filter((m) => compareCodePoints(m, server) > 0));
    const yields: Yielded[] = [];
    if (tools) {
      const filter = this.filters.get(server) ?? {};
      const registered: RegisteredTool[] = [];
      const skipped: SkippedTool[] = [];
      const passed: Tool[] = [];
      for (const tool of tools.list) {
        const reason = filterReason(tool.name, filter);
        if (reason) skipped.push({ rawName: tool.name, reason });
        else passed.push(tool);
      }
      for (const tool of passed) {
        if (taskSupportOf(tool) === 'required') skipped.push({ rawName: tool.name, reason: TASK_REQUIRED_REASON });
        else registered.push(toRegisteredTool(server, tool, tools.generation, tools.cached));
      }
      // A filter that names an invalid tool hides it like any other: the user chose not to have it.
      for (const bad of tools.invalid ?? []) {
        const hidden = filterReason(bad.rawName, filter);
        skipped.push(hidden ? { rawName: bad.rawName, reason: hidden } : { rawName: bad.rawName, reason: bad.reason, invalid: true });
      }
      this.findConflicts('tool', server, passed, registered, this.toolIndex, problems, details, yielding, yields);
      out.tools = { registered, skipped };
      details.generation = tools.generation;
    }
    if (prompts) {
      const registered = prompts.list.map((p) => toRegisteredPrompt(server, p, prompts.generation, prompts.cached));
      this.findConflicts('prompt', server, prompts.list, registered, this.promptIndex, problems, details, yielding, yields);
      out.prompts = registered;
      details.generation ??= prompts.generation;
    }
    if (problems.length === 0) return { ...out, yields };
    // What becomes of the server's earlier entries is the caller's to say: the controller closes the generation.
    return new McpReconcilerError(ErrorCode.ToolConflict, `MCP server "${server}" listing rejected: ${problems.join('; ')}. None of this listing was registered.`, {
      hint: 'Fix the server so its names are unique, rename one of the clashing servers in the config, or hide the clashing tools with excludeTools.',
      details,
    });
  }

  private findConflicts(
    kind: 'tool' | 'prompt',
    server: string,
    raw: readonly { name: string }[],
    registered: readonly { name: string; rawName: string }[],
    index: ReadonlyMap<string, { server: string; rawName: string }>,
    problems: string[],
    details: Record<string, unknown>,
    yielding: ReadonlySet<string>,
    yields: Yielded[],
  ): void {
    const seen = new Set<string>();
    const duplicates = new Set<string>();
    for (const { name } of raw) {
      if (seen.has(name)) duplicates.add(name);
      seen.add(name);
    }
    if (duplicates.size > 0) {
      problems.push(`it lists ${kind} ${quoteList([...duplicates])} more than once`);
      details[`duplicate_${kind}s`] = [...duplicates];
    }
    // Distinct raw names per registered name, in listing order (no copies per entry: every commit runs this).
    const byName = new Map<string, string[]>();
    for (const r of registered) {
      const raws = byName.get(r.name);
      if (!raws) byName.set(r.name, [r.rawName]);
      else if (!raws.includes(r.rawName)) raws.push(r.rawName);
    }
    const clashes = byName.size === registered.length ? [] : [...byName].filter(([, raws]) => raws.length > 1);
    for (const [name, raws] of clashes) problems.push(`${kind}s ${quoteList(raws)} both become ${name}`);
    if (clashes.length > 0) details[`clashing_${kind}s`] = clashes.map(([name, raws]) => ({ name, rawNames: [...raws] }));
    const taken: { name: string; rawName: string; owner: string; ownerRawName: string }[] = [];
    for (const r of registered) {
      const owner = index.get(r.name);
      if (!owner || owner.server === server || yielding.has(owner.server)) continue;
      // The fixed rule, as for prefixes: the server first in code-point order owns a contested name.
      if (compareCodePoints(owner.server, server) > 0) yields.push({ kind, name: r.name, rawName: r.rawName, holder: owner.server, holderRawName: owner.rawName });
      else taken.push({ name: r.name, rawName: r.rawName, owner: owner.server, ownerRawName: owner.rawName });
    }
    for (const t of taken) problems.push(nameProblem(kind, t.name, server, t.rawName, t.owner, t.ownerRawName));
    if (taken.length > 0) details[`taken_${kind}s`] = taken;
  }

  /** Retry pending listings until none more fits (each success may free names). */
  private retryPending(): void {
    // The common case (nothing pending) costs one pass, not a sort per commit.
    let any = false;
    for (const rec of this.records.values()) if (rec.pending) any = true;
    if (!any) return;
    for (let progress = true; progress; ) {
      progress = false;
      for (const server of this.sortedServers()) {
        const rec = this.records.get(server)!;
        if (rec.pending && this.attempt(server, rec, {}, true) === undefined) progress = true;
      }
    }
  }

  private emit(server: string, tools: NameChanges, prompts: NameChanges): void {
    if (isEmpty(tools) && isEmpty(prompts)) return;
    const change: RegistryChange = { server, ...tools, prompts };
    notifyAll(this.listeners, change, this.options.onListenerError);
  }
}
