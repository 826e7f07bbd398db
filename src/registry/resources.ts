/**
 * The resources and resource templates of one controller's servers (SPEC §13).
 *
 * Resources are addressed by URI, and URIs are kept exactly as the server
 * lists them: a URI is what a client reads, and what tools hand out in
 * `resource_link` results, so rewriting it would break both. Two servers may
 * list the same URI (two filesystem servers over one folder). That is not an
 * error and rejects nothing; the URI has one owner, the first of those
 * servers in code-point order (the tool-prefix rule: the outcome never
 * depends on which connected first), and the others' copies are shadowed and
 * reported as a {@link ResourceConflict}. Ownership is decided among the
 * servers in view, so a gateway session scoped to the shadowed server still
 * reads its own copy. A URI nobody lists is owned by the first server in
 * view with a template that matches it.
 */
import deepEqual from 'fast-deep-equal';
import { UriTemplate } from '@modelcontextprotocol/client';
import type { Resource, ResourceTemplate } from '@modelcontextprotocol/sdk/types.js';
import { notifyAll } from '../util/listeners.js';
import { compareCodePoints } from './naming.js';

/** A resource as the host sees it: the server's own entry plus where it came from. */
export type RegisteredResource = Resource & {
  server: string;
  /** The connection generation whose listing this entry came from. */
  generation: number;
  /** `true` while the entry comes from the listing cache. */
  cached?: true;
};

/** A resource template as the host sees it. */
export type RegisteredResourceTemplate = ResourceTemplate & {
  server: string;
  generation: number;
  cached?: true;
};

/** A URI (or URI template) listed by more than one server: who owns it and who is shadowed. */
export interface ResourceConflict {
  uri: string;
  /** The first of `servers` in code-point order: what a read of `uri` reaches when all of them are in view. */
  owner: string;
  /** Every server listing it, owner first. */
  servers: string[];
}

/** URIs (or URI templates) of one server's listing that appeared, disappeared or changed. */
export interface ResourceNameChanges {
  added: string[];
  removed: string[];
  updated: string[];
}

/** One server's resource change; top-level lists are URIs, `templates` the URI templates. */
export interface ResourceChange extends ResourceNameChanges {
  server: string;
  templates: ResourceNameChanges;
  /** The URIs and templates this server shares with another server, after the change. */
  conflicts: ResourceConflict[];
}

/** Where a read of a URI goes. */
export interface ResourceOwner {
  server: string;
  /** The listed resource, when the URI is listed. */
  resource?: RegisteredResource;
  /** The template that matches it, when the URI is not listed as such. */
  template?: RegisteredResourceTemplate;
}

/** Which servers a lookup considers; every server when absent. */
export type ServerView = ((server: string) => boolean) | undefined;

interface ServerResources {
  resources: readonly RegisteredResource[];
  templates: readonly RegisteredResourceTemplate[];
}

function registered<T extends object>(server: string, item: T, generation: number, cached: boolean): T & { server: string; generation: number; cached?: true } {
  return Object.freeze({ ...item, server, generation, ...(cached ? { cached: true as const } : {}) });
}

/** The first entry per key: a server listing a URI twice serves the first. */
function uniqueBy<T>(items: readonly T[], key: (item: T) => string): T[] {
  const seen = new Set<string>();
  return items.filter((item) => {
    const k = key(item);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

function diff<T extends { generation: number; cached?: true }>(before: readonly T[], after: readonly T[], key: (item: T) => string): ResourceNameChanges {
  const old = new Map(before.map((e) => [key(e), e]));
  const now = new Map(after.map((e) => [key(e), e]));
  // Where an entry came from (generation, the cache) is not part of its definition.
  const same = (a: T, b: T): boolean => deepEqual({ ...a, generation: 0, cached: undefined }, { ...b, generation: 0, cached: undefined });
  return {
    added: after.filter((e) => !old.has(key(e))).map(key),
    removed: before.filter((e) => !now.has(key(e))).map(key),
    updated: after.filter((e) => old.has(key(e)) && !same(old.get(key(e))!, e)).map(key),
  };
}

function isEmpty(c: ResourceNameChanges): boolean {
  return c.added.length === 0 && c.removed.length === 0 && c.updated.length === 0;
}

const uriOf = (r: { uri: string }): string => r.uri;
const templateOf = (t: { uriTemplate: string }): string => t.uriTemplate;

/** Whether URI template `template` matches `uri`; an unparsable template matches nothing. */
export function templateMatches(template: string, uri: string): boolean {
  try {
    return new UriTemplate(template).match(uri) !== null;
  } catch {
    return false;
  }
}

/**
 * Resources and templates by server, with the owner rule above. Holds no
 * module-level state. Iteration order is stable: servers by code-point
 * order, then listing order.
 */
export class ResourceRegistry {
  private readonly records = new Map<string, ServerResources>();
  private readonly listeners = new Set<(change: ResourceChange) => void>();

  constructor(private readonly options: { onListenerError?: (error: unknown) => void } = {}) {}

  /**
   * Replace a server's resources and templates with one generation's listing
   * (`cached` marks entries read from the listing cache). Never rejected: a
   * URI another server lists too is shadowed or shadows, see the file header.
   * Returns the conflicts the server is part of now.
   */
  commit(
    server: string,
    generation: number,
    listing: { resources: readonly Resource[]; resourceTemplates: readonly ResourceTemplate[] },
    options: { cached?: boolean } = {},
  ): ResourceConflict[] {
    const cached = options.cached === true;
    const before = this.records.get(server) ?? { resources: [], templates: [] };
    const next: ServerResources = {
      resources: uniqueBy(listing.resources, uriOf).map((r) => registered(server, r, generation, cached)),
      templates: uniqueBy(listing.resourceTemplates, templateOf).map((t) => registered(server, t, generation, cached)),
    };
    this.records.set(server, next);
    this.emit(server, before, next);
    return this.conflictsOf(server);
  }

  /** Remove a server's resources and templates; true when it had any record. */
  drop(server: string): boolean {
    const before = this.records.get(server);
    if (!before) return false;
    this.records.delete(server);
    this.emit(server, before, { resources: [], templates: [] });
    return true;
  }

  /** Forget everything (controller disposal), telling each server's removal. */
  clear(): void {
    const dropped = [...this.records];
    this.records.clear();
    for (const [server, before] of dropped) this.emit(server, before, { resources: [], templates: [] });
  }

  /** The resources of the servers in `view`, one entry per URI: its owner's. */
  resources(view?: ServerView): RegisteredResource[] {
    return this.owned(view, (r) => r.resources, uriOf);
  }

  /** The resource templates of the servers in `view`, one entry per URI template: its owner's. */
  resourceTemplates(view?: ServerView): RegisteredResourceTemplate[] {
    return this.owned(view, (r) => r.templates, templateOf);
  }

  /** A server's own resources, shadowed ones included (empty when unknown). */
  resourcesOf(server: string): RegisteredResource[] {
    return [...(this.records.get(server)?.resources ?? [])];
  }

  /** A server's own resource templates (empty when unknown). */
  templatesOf(server: string): RegisteredResourceTemplate[] {
    return [...(this.records.get(server)?.templates ?? [])];
  }

  /**
   * The server a read of `uri` goes to among those in `view`: the owner of
   * the listed URI, else the first server (code-point order) with a
   * template matching it. `undefined` when no server in view has it.
   */
  ownerOf(uri: string, view?: ServerView): ResourceOwner | undefined {
    const servers = this.sortedServers().filter((s) => !view || view(s));
    for (const server of servers) {
      const resource = this.records.get(server)!.resources.find((r) => r.uri === uri);
      if (resource) return { server, resource };
    }
    for (const server of servers) {
      const template = this.records.get(server)!.templates.find((t) => templateMatches(t.uriTemplate, uri));
      if (template) return { server, template };
    }
    return undefined;
  }

  /** Every URI and URI template listed by more than one server. */
  conflicts(): ResourceConflict[] {
    const claims = new Map<string, string[]>();
    for (const server of this.sortedServers()) {
      const rec = this.records.get(server)!;
      for (const key of [...rec.resources.map(uriOf), ...rec.templates.map(templateOf)]) claims.set(key, [...(claims.get(key) ?? []), server]);
    }
    return [...claims].filter(([, servers]) => servers.length > 1).map(([uri, servers]) => ({ uri, owner: servers[0]!, servers }));
  }

  /** The conflicts `server` is part of. */
  conflictsOf(server: string): ResourceConflict[] {
    // A server that lists nothing shares nothing: no scan of every server's listing (most servers list no resources).
    const rec = this.records.get(server);
    if (!rec || (rec.resources.length === 0 && rec.templates.length === 0)) return [];
    return this.conflicts().filter((c) => c.servers.includes(server));
  }

  /** Be told after each change of a server's resources or templates; returns the unsubscribe function. */
  onChange(listener: (change: ResourceChange) => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  private sortedServers(): string[] {
    return [...this.records.keys()].sort(compareCodePoints);
  }

  private owned<T>(view: ServerView, items: (r: ServerResources) => readonly T[], key: (item: T) => string): T[] {
    const seen = new Set<string>();
    const out: T[] = [];
    for (const server of this.sortedServers()) {
      if (view && !view(server)) continue;
      for (const item of items(this.records.get(server)!)) {
        if (seen.has(key(item))) continue;
        seen.add(key(item));
        out.push(item);
      }
    }
    return out;
  }

  private emit(server: string, before: ServerResources, after: ServerResources): void {
    const resources = diff(before.resources, after.resources, uriOf);
    const templates = diff(before.templates, after.templates, templateOf);
    if (isEmpty(resources) && isEmpty(templates)) return;
    const change: ResourceChange = { server, ...resources, templates, conflicts: this.conflictsOf(server) };
    notifyAll(this.listeners, change, this.options.onListenerError);
  }
}
