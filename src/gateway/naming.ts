/**
 * The names the gateway gives the registry's tools and prompts:
 * `mcp<sep><server><sep><name>`, with `__` as the default separator, which
 * gives exactly the registry's own `mcp__<server>__<name>`. Each gateway
 * name maps back, through a table built from the registry, to exactly one
 * registry entry (which knows the server and the server's own name), so
 * calls and `prompts/get` take the gateway's names; under a custom
 * separator the registry's own names are not served.
 *
 * A separator can make two entries meet on one name (with `-`, server `a-b`'s
 * tool `c` and server `a`'s tool `b-c` are both `mcp-a-b-c`): the first in
 * registry order keeps the name, the other is left out of the listings, and
 * the collision is reported, never silently shadowed.
 */
import { ErrorCode, McpReconcilerError } from '../errors.js';
import { MAX_REGISTERED_NAME_LENGTH, NAME_HASH_LENGTH, sanitiseNamePart } from '../registry/naming.js';
import type { RegisteredPrompt, RegisteredTool } from '../registry/registry.js';
import { stableHash } from '../util/stable-hash.js';

/** The registry's separator; gateway names with it are the registry names unchanged. */
export const DEFAULT_SEPARATOR = '__';

/**
 * What model APIs accept as a tool name (Anthropic, OpenAI; clients such as
 * Claude Desktop and Cursor pass names on unchanged): every gateway name fits it.
 */
export const CLIENT_TOOL_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** Longest separator: two of them plus `mcp` must leave room for the server and tool names within 64 characters. */
export const MAX_SEPARATOR_LENGTH = 8;

/**
 * `separator` when clients can use names built with it, else a usage error
 * saying what is allowed. `where` names the option in the message
 * (`--separator`, `separator`).
 */
export function validateSeparator(separator: string, where = 'separator'): string {
  if (CLIENT_TOOL_NAME_PATTERN.test(separator) && separator.length <= MAX_SEPARATOR_LENGTH) return separator;
  throw new McpReconcilerError(
    ErrorCode.Usage,
    `${where} ${JSON.stringify(separator)} is not allowed: it must be 1 to ${MAX_SEPARATOR_LENGTH} characters from A-Z, a-z, 0-9, "_" and "-", ` +
      'because many clients pass tool names to model APIs that accept only ^[a-zA-Z0-9_-]{1,64}$',
    { hint: `e.g. ${where} - gives mcp-<server>-<tool>; leave it out for mcp__<server>__<tool>` },
  );
}

/**
 * The gateway name of a server's tool or prompt: `mcp<sep><server><sep><name>`,
 * each part sanitised to `[A-Za-z0-9_-]` like the registry's. A name longer
 * than 64 characters is cut and ends in `_` plus a hash of the unsanitised
 * pair, so it stays deterministic and distinct.
 */
export function gatewayName(separator: string, server: string, name: string): string {
  const full = `mcp${separator}${sanitiseNamePart(server)}${separator}${sanitiseNamePart(name)}`;
  if (full.length <= MAX_REGISTERED_NAME_LENGTH) return full;
  return `${full.slice(0, MAX_REGISTERED_NAME_LENGTH - NAME_HASH_LENGTH - 1)}_${stableHash([server, name]).slice(0, NAME_HASH_LENGTH)}`;
}

/** Two registry entries that one separator gives the same gateway name. */
export interface NameCollision {
  kind: 'tool' | 'prompt';
  /** The gateway name both would have. */
  name: string;
  /** The entry that keeps the name (first in registry order). */
  kept: { server: string; rawName: string };
  /** The entry left out of the listings. */
  dropped: { server: string; rawName: string };
}

/** Where {@link GatewayNames} reads entries and server names from (the controller). */
export interface NamingSource {
  tools(): RegisteredTool[];
  prompts(): RegisteredPrompt[];
  /** Configured (and removed) server names, for names nothing is registered under. */
  servers(): Iterable<string>;
  /**
   * The server whose entry the registry holds under `registryName` now: an
   * entry found in a table that a registry change has not invalidated yet
   * is looked up again in a fresh one.
   */
  serverOf?(kind: 'tool' | 'prompt', registryName: string): string | undefined;
}

interface Table<T> {
  /** Listing order, collisions left out. */
  list: Array<{ name: string; entry: T }>;
  byName: Map<string, T>;
}

type Entry = { server: string; rawName: string; name: string };

/** What {@link GatewayNames.resolve} found for a gateway name. */
export type ResolvedName<T> =
  | { kind: 'entry'; entry: T }
  | { kind: 'renamed'; server: string }
  | { kind: 'unknown'; server: string | undefined };

/**
 * The gateway's names over a live registry, both ways. Tables are rebuilt on
 * the first lookup after {@link invalidate} (call it on every registry change).
 */
export class GatewayNames {
  readonly separator: string;
  private tables: { tools: Table<RegisteredTool>; prompts: Table<RegisteredPrompt> } | undefined;
  /** Collisions already reported, so each is reported once. */
  private readonly reported = new Set<string>();
  private current: NameCollision[] = [];

  constructor(
    private readonly source: NamingSource,
    separator: string = DEFAULT_SEPARATOR,
    private readonly onCollision: (collision: NameCollision) => void = () => {},
  ) {
    this.separator = validateSeparator(separator);
  }

  /** `mcp__<server>__<tool>` (with this separator), for instructions and messages. */
  get pattern(): string {
    return `mcp${this.separator}<server>${this.separator}<tool>`;
  }

  /** Forget the tables: the registry changed. */
  invalidate(): void {
    this.tables = undefined;
  }

  /** Registered tools with their gateway names, registry order, collisions left out. */
  tools(): ReadonlyArray<{ name: string; entry: RegisteredTool }> {
    return this.build().tools.list;
  }

  /** Registered prompts with their gateway names, like {@link tools}. */
  prompts(): ReadonlyArray<{ name: string; entry: RegisteredPrompt }> {
    return this.build().prompts.list;
  }

  /** The registered tool a gateway name stands for. */
  tool(name: string): RegisteredTool | undefined {
    return this.build().tools.byName.get(name);
  }

  /** The registered prompt a gateway name stands for. */
  prompt(name: string): RegisteredPrompt | undefined {
    return this.build().prompts.byName.get(name);
  }

  /** The collisions of the current registry. */
  collisions(): NameCollision[] {
    this.build();
    return [...this.current];
  }

  /**
   * What a gateway name stands for, from the tables alone: the one
   * registered entry (server and the server's own name) listed under it, or
   * nothing. Nothing is ever derived by cutting a name apart and joining the
   * pieces again: server names are sanitised and may contain the separator,
   * so a re-joined name can spell another server's entry.
   *
   * - `entry`: the registered tool or prompt served under `name`; its
   *   `server` is the server that answers.
   * - `renamed`: `name` is the registry's own name of an entry this gateway
   *   serves under another name (a custom separator); nothing answers to it.
   * - `unknown`: nothing is served under `name`. `server` is the configured
   *   server whose `mcp<sep><server><sep>` prefix it has (the longest), for
   *   saying why (`mcp-p-echo` while `p` waits for approval) and never for
   *   sending anything.
   */
  resolve(kind: 'tool', name: string): ResolvedName<RegisteredTool>;
  resolve(kind: 'prompt', name: string): ResolvedName<RegisteredPrompt>;
  resolve(kind: NameCollision['kind'], name: string): ResolvedName<RegisteredTool | RegisteredPrompt> {
    let entry = this.entry(kind, name);
    if (entry && this.source.serverOf && this.source.serverOf(kind, entry.name) !== entry.server) {
      this.invalidate();
      entry = this.entry(kind, name);
    }
    if (entry) return { kind: 'entry', entry };
    if (this.separator !== DEFAULT_SEPARATOR) {
      const renamed = (kind === 'tool' ? this.source.tools() : this.source.prompts()).find((e) => e.name === name);
      if (renamed) return { kind: 'renamed', server: renamed.server };
    }
    let server: string | undefined;
    for (const s of this.source.servers()) {
      if (name.startsWith(this.prefixOf(s)) && (server === undefined || s.length > server.length)) server = s;
    }
    return { kind: 'unknown', server };
  }

  /** The gateway name of `server`'s tool or prompt `rawName` under this separator. */
  nameOf(server: string, rawName: string): string {
    return gatewayName(this.separator, server, rawName);
  }

  /** `message` (the controller's, about `registryName`) with the gateway's name in its place. */
  rename(message: string, registryName: string, name: string): string {
    return registryName === name ? message : message.split(registryName).join(name);
  }

  private entry(kind: NameCollision['kind'], name: string): RegisteredTool | RegisteredPrompt | undefined {
    const tables = this.build();
    return (kind === 'tool' ? tables.tools : tables.prompts).byName.get(name);
  }

  private prefixOf(server: string): string {
    return `mcp${this.separator}${sanitiseNamePart(server)}${this.separator}`;
  }

  private build(): { tools: Table<RegisteredTool>; prompts: Table<RegisteredPrompt> } {
    if (this.tables) return this.tables;
    const found: NameCollision[] = [];
    this.tables = {
      tools: this.table('tool', this.source.tools(), found),
      prompts: this.table('prompt', this.source.prompts(), found),
    };
    this.current = found;
    for (const c of found) {
      const key = JSON.stringify([c.kind, c.name, c.kept, c.dropped]);
      if (this.reported.has(key)) continue;
      this.reported.add(key);
      this.onCollision(c);
    }
    return this.tables;
  }

  private table<T extends Entry>(kind: NameCollision['kind'], entries: readonly T[], found: NameCollision[]): Table<T> {
    const byName = new Map<string, T>();
    const list: Table<T>['list'] = [];
    const plain = this.separator === DEFAULT_SEPARATOR;
    for (const entry of entries) {
      // The registry's own name under the default separator: exactly what the registry checked for clashes.
      const name = plain ? entry.name : gatewayName(this.separator, entry.server, entry.rawName);
      const kept = byName.get(name);
      if (kept) {
        found.push({ kind, name, kept: { server: kept.server, rawName: kept.rawName }, dropped: { server: entry.server, rawName: entry.rawName } });
        continue;
      }
      byName.set(name, entry);
      list.push({ name, entry });
    }
    return { list, byName };
  }
}

/** A one-line report of a collision, with what to do about it. */
export function describeCollision(c: NameCollision, separator: string): string {
  return (
    `${c.kind} name ${c.name} (separator ${JSON.stringify(separator)}) stands for both ${c.kind} "${c.kept.rawName}" of server "${c.kept.server}" ` +
    `and ${c.kind} "${c.dropped.rawName}" of server "${c.dropped.server}"; only the first is served. ` +
    `Use another separator (the default is ${DEFAULT_SEPARATOR}) or rename one of the servers.`
  );
}
