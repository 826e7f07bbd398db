/**
 * Tool definitions as the user accepted them, and what changed since
 * (definition drift, docs/tool-definitions.md): a server approved for what
 * its tools said can later change a description or a schema, or add a tool.
 *
 * The first listing of a server (per name and fingerprint) is its accepted
 * set; later listings are compared with it. Drift is recorded either way;
 * with `pin` a changed definition is held back (the accepted one stays
 * registered, calls still go to the server's tool of that name) and a new
 * tool is not registered, until {@link ToolDefinitions.accept} takes the
 * server's current definitions. Kept in one 0600 JSON file per workspace
 * beside the listing cache (in memory only without one).
 */
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { isPlainObject } from '../util/persist.js';
import { stableHash } from '../util/stable-hash.js';
import { WorkspaceDoc } from '../util/workspace-doc.js';

/** How a server's tools differ from the definitions the user accepted. */
export interface ToolDrift {
  /** Raw names whose description, title, schema or annotations changed. */
  changed: string[];
  /** Raw names listed now but not accepted. */
  added: string[];
  /** Whether the changes are held back (`pinToolDefinitions`): the accepted definitions stay registered, new tools are not. */
  held: boolean;
  /** When the drift was first seen (ISO time). */
  since: string;
}

/** What a model is told about a tool: everything but annotations' cosmetic parts would still be a change, so all of it counts. */
function definitionHash(tool: Tool): string {
  const { name: _name, ...definition } = tool;
  return stableHash(definition);
}

interface Record_ {
  accepted: Record<string, Tool>;
  /** The latest raw listing, for {@link ToolDefinitions.accept}. */
  latest: Tool[];
  drift?: ToolDrift;
}

/**
 * Whether two listings of a tool define it alike. Equal values written in
 * the same key order are the common case (a server listing what it listed
 * before, read back from our own files), and their JSON texts are equal:
 * a warm start reviews every cached tool, and the native serialiser keeps
 * that out of JavaScript that V8 would optimise at start-up
 * (docs/performance.md). Anything else (keys in another order, a key that is
 * there but `undefined`) is settled by the hashes, which normalise both.
 */
function sameDefinition(a: Tool, b: Tool): boolean {
  return JSON.stringify(a) === JSON.stringify(b) || definitionHash(a) === definitionHash(b);
}

/** The drift of `tools` against `accepted`, or undefined when there is none. */
export function driftOf(accepted: Readonly<Record<string, Tool>>, tools: readonly Tool[], held: boolean, since: string): ToolDrift | undefined {
  const changed: string[] = [];
  const added: string[] = [];
  for (const t of tools) {
    const old = Object.hasOwn(accepted, t.name) ? accepted[t.name] : undefined;
    if (!old) added.push(t.name);
    else if (!sameDefinition(old, t)) changed.push(t.name);
  }
  return changed.length + added.length === 0 ? undefined : { changed, added, held, since };
}

/** Accepted tool definitions of one workspace's servers. */
export class ToolDefinitions {
  private readonly records = new Map<string, Record_>();
  private readonly doc: WorkspaceDoc | undefined;
  private writing: Promise<void> | undefined;
  private dirty = false;

  /** Kept in `tool-definitions/` beside the listing cache directory `dir`; `dir` false: in memory only. */
  constructor(dir: string | false, root: string, private readonly onError: (err: unknown) => void = () => {}) {
    this.doc = WorkspaceDoc.beside(dir, 'tool-definitions', root);
    // No file yet, or an unreadable or untrusted one: the next listings are accepted afresh.
    for (const [key, rec] of Object.entries(this.doc?.member('servers') ?? {})) {
      if (isPlainObject(rec) && isPlainObject(rec.accepted)) {
        this.records.set(key, { accepted: rec.accepted as Record<string, Tool>, latest: [], ...(isPlainObject(rec.drift) ? { drift: rec.drift as unknown as ToolDrift } : {}) });
      }
    }
  }

  /**
   * The tools to register for a listing of `server` (config `fingerprint`):
   * the listing itself, or with `pin` the accepted definitions in place of
   * changed ones and without new tools. The first listing is accepted as is.
   */
  review(server: string, fingerprint: string, tools: Tool[], pin: boolean): Tool[] {
    const key = `${server}\u0000${fingerprint}`;
    const rec = this.records.get(key);
    if (!rec) {
      this.records.set(key, { accepted: Object.fromEntries(tools.map((t) => [t.name, t])), latest: tools });
      this.save();
      return tools;
    }
    rec.latest = tools;
    const drift = driftOf(rec.accepted, tools, pin, rec.drift?.since ?? '');
    // The common case at every listing and every cached restore: no drift before or now, nothing to record.
    if (!drift && !rec.drift) return tools;
    if (drift && drift.since === '') drift.since = new Date().toISOString();
    const before = JSON.stringify(rec.drift ?? null);
    if (drift) rec.drift = drift;
    else delete rec.drift;
    if (JSON.stringify(rec.drift ?? null) !== before) this.save();
    if (!pin || !drift) return tools;
    const out: Tool[] = [];
    for (const t of tools) {
      const old = Object.hasOwn(rec.accepted, t.name) ? rec.accepted[t.name] : undefined;
      if (old) out.push(drift.changed.includes(t.name) ? old : t);
    }
    return out;
  }

  /** The drift of `server`'s latest listing, if any. */
  drift(server: string, fingerprint: string): ToolDrift | undefined {
    return this.records.get(`${server}\u0000${fingerprint}`)?.drift;
  }

  /** Accept `server`'s latest listing as its definitions; the tools to register now (`undefined`: no listing seen this run). */
  accept(server: string, fingerprint: string): Tool[] | undefined {
    const rec = this.records.get(`${server}\u0000${fingerprint}`);
    if (!rec || rec.latest.length === 0) return undefined;
    rec.accepted = Object.fromEntries(rec.latest.map((t) => [t.name, t]));
    delete rec.drift;
    this.save();
    return rec.latest;
  }

  /** Drop `server`'s record: its next listing is accepted as it is (an offline `approve --tool-definitions`). */
  forget(server: string, fingerprint: string): void {
    if (this.records.delete(`${server}\u0000${fingerprint}`)) this.save();
  }

  /** Resolves once every change so far is on disk (the controller's dispose; the CLI before it exits). */
  flush(): Promise<void> {
    return this.writing ?? Promise.resolve();
  }

  /**
   * Write the records, asynchronously and coalesced: a first start lists N
   * servers one after another, and a synchronous rewrite of the whole file
   * per listing was O(N²) bytes on the event loop. Changes made while a
   * write is under way go out in one more write, read when it starts.
   */
  private save(): void {
    if (!this.doc) return;
    this.dirty = true;
    this.writing ??= this.drain(this.doc);
  }

  private async drain(doc: WorkspaceDoc): Promise<void> {
    try {
      while (this.dirty) {
        this.dirty = false;
        const servers = Object.fromEntries([...this.records].map(([key, r]) => [key, { accepted: r.accepted, ...(r.drift ? { drift: r.drift } : {}) }]));
        await doc.write({ servers }, this.onError);
      }
    } finally {
      this.writing = undefined;
    }
  }
}
