/**
 * The listing cache (SPEC §12): the tools, prompts and resources a server
 * listed last time, so the next start can register them before the server answers — or,
 * for a lazy server, without starting it at all.
 *
 * One JSON file per (workspace root, fingerprint), mode 0600 in a 0700
 * directory, written atomically (temp file + rename). Keyed by the
 * fingerprint because that is what decides which program runs; the root is
 * in the key too because a relative `command` or `cwd` means another program
 * in another workspace. Everything is also kept in memory, so with the disk
 * turned off (`dir: false`) a lazy or idle-stopped server still keeps its
 * listing for the controller's life. An unreadable or malformed file counts
 * as no entry: the cache only ever saves time, it is never needed. So does
 * a file someone else could have written (see `untrustedFile`): what it says
 * would be served as tools before the server ever answers.
 *
 * File versions: 2 adds `resources` and `resourceTemplates` (SPEC §13). A
 * version 1 file (tools and prompts only) is still read; its listing has no
 * resources, so they register once the server answers. `invalidTools` is an
 * optional field of version 2 (older files have none), and so is `protocol`
 * (the era negotiated, docs/protocol.md), and `tokens` (the token count of
 * each tool definition as registered, docs/context-budget.md): a warm start
 * reports them without loading the tokenizer. A file without counts (or
 * with malformed ones) still loads; its tools are counted when asked.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import deepEqual from 'fast-deep-equal';
import type { Prompt, Resource, ResourceTemplate, Tool } from '@modelcontextprotocol/sdk/types.js';
import { appDir, isPlainObject, writeFileAtomic } from '../util/persist.js';
import { readTrusted } from '../util/file-trust.js';
import { registeredToolName } from '../registry/naming.js';
import { anyTokenCountKnown, knownTokenCount, seedDefinitionTokens, tokenKey, definitionText } from '../registry/tokens.js';

/**
 * The protocol era a server was last spoken to in (docs/protocol.md): the
 * 2025 `initialize` handshake (`legacy`), or the 2026-07-28 wire with the
 * server's `server/discover` result, so the next connect adopts it without
 * a probe.
 */
export type ProtocolVerdict = { era: 'legacy' } | { era: 'modern'; discover: Record<string, unknown> };

function isVerdict(v: unknown): v is ProtocolVerdict {
  return isPlainObject(v) && (v.era === 'legacy' || (v.era === 'modern' && isPlainObject(v.discover) && Array.isArray(v.discover.supportedVersions)));
}

/** A server's listing as it was last seen. */
export interface CachedListing {
  /** Raw tools as the server listed them (filters are applied when registering). */
  tools: Tool[];
  prompts: Prompt[];
  /** Absent in a listing from a version 1 file: its resources are not known. */
  resources?: Resource[];
  resourceTemplates?: ResourceTemplate[];
  /**
   * Listed tools whose definition was invalid (not in `tools`), so a listing
   * registered from the cache reports them as the live one did. Absent: none.
   */
  invalidTools?: { rawName: string; reason: string }[];
  /** The protocol era the listing was taken in; absent: not known (probe). */
  protocol?: ProtocolVerdict;
  /**
   * Token counts of the tool definitions as registered, by `tokenKey` of the
   * counted text (so a stale count never applies). Only counts that were
   * already known when the listing was stored; absent: none.
   */
  tokens?: Record<string, number>;
}

/** The version this code writes; {@link READABLE_VERSIONS} are read. */
const CACHE_VERSION = 2;
const READABLE_VERSIONS: readonly unknown[] = [1, 2];

interface CacheFile extends CachedListing {
  version: typeof CACHE_VERSION;
  server: string;
  fingerprint: string;
  /** When the listing was taken (ISO time). */
  at: string;
}

/**
 * The default cache directory: `$XDG_CACHE_HOME/mcp-reconciler/listings`, or
 * `~/.cache/mcp-reconciler/listings` when that is unset or relative.
 */
export function defaultListingCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(appDir('cache', env), 'listings');
}

/** A listing read from disk, or `undefined` when it is not one we wrote (wrong shape, other key). */
export function parseFile(text: string, fingerprint: string): CachedListing | undefined {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isPlainObject(doc) || !READABLE_VERSIONS.includes(doc.version) || doc.fingerprint !== fingerprint) return undefined;
  const { tools, prompts, resources, resourceTemplates, invalidTools, protocol } = doc;
  if (!Array.isArray(tools) || !Array.isArray(prompts)) return undefined;
  if (invalidTools !== undefined && !(Array.isArray(invalidTools) && invalidTools.every((t) => isPlainObject(t) && typeof t.rawName === 'string' && typeof t.reason === 'string'))) return undefined;
  if (!tools.every((t) => isPlainObject(t) && typeof t.name === 'string' && isPlainObject(t.inputSchema))) return undefined;
  if (!prompts.every((p) => isPlainObject(p) && typeof p.name === 'string')) return undefined;
  const listing: CachedListing = { tools: tools as Tool[], prompts: prompts as Prompt[] };
  if (Array.isArray(invalidTools) && invalidTools.length > 0) listing.invalidTools = invalidTools as CachedListing['invalidTools'];
  // A malformed era is no era: the connect probes, as without one.
  if (isVerdict(protocol)) listing.protocol = protocol;
  // Malformed counts are no counts: the tools are counted when asked, as without them.
  if (isCounts(doc.tokens)) listing.tokens = doc.tokens;
  if (doc.version === 1) return listing;
  if (!Array.isArray(resources) || !Array.isArray(resourceTemplates)) return undefined;
  if (!resources.every((r) => isPlainObject(r) && typeof r.uri === 'string' && typeof r.name === 'string')) return undefined;
  if (!resourceTemplates.every((t) => isPlainObject(t) && typeof t.uriTemplate === 'string' && typeof t.name === 'string')) return undefined;
  return { ...listing, resources: resources as Resource[], resourceTemplates: resourceTemplates as ResourceTemplate[] };
}

function isCounts(v: unknown): v is Record<string, number> {
  return isPlainObject(v) && Object.values(v).every((n) => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0);
}

/** The counts already known of `server`'s tools as they register: peeked, never counted (no tokenizer load). */
function knownCounts(server: string, tools: readonly Tool[]): Record<string, number> | undefined {
  // Nothing counted or seeded yet (no host asked for tokens): no definition text to build per tool.
  if (!anyTokenCountKnown()) return undefined;
  let out: Record<string, number> | undefined;
  for (const t of tools) {
    const text = definitionText({ name: registeredToolName(server, t.name), description: t.description, inputSchema: t.inputSchema });
    const key = tokenKey(text);
    const n = knownTokenCount(key);
    if (n !== undefined) (out ??= {})[key] = n; // keys are base64url hashes: never `__proto__`
  }
  return out;
}

/**
 * A second level behind the files (docs/cluster.md: Redis shared by the
 * replicas of a gateway): asked for what neither memory nor disk holds, and
 * told about every new listing. Its failures only cost the time it would
 * have saved.
 */
export interface ListingSecondLevel {
  get(fingerprint: string): Promise<CachedListing | undefined>;
  set(fingerprint: string, server: string, listing: CachedListing): Promise<void>;
}

/** Options of a {@link ListingCache}. */
export interface ListingCacheOptions {
  /** Directory of the cache files; `false` keeps listings in memory only. */
  dir: string | false;
  /** The canonical workspace root, part of every key. */
  root: string;
  /** Told about a file that could not be written (the cache goes on in memory). */
  onError?: (error: unknown) => void;
  /** Told about a cache file that is not trusted (another user owns it, or group or others may write it), which is then ignored. */
  onWarning?: (message: string) => void;
  /** Asked after the disk, told about every new listing (see {@link ListingSecondLevel}). */
  second?: ListingSecondLevel;
}

/**
 * Listings (tools, prompts, resources) by fingerprint, in memory and on disk. {@link prepare}
 * reads the entries a desired map needs (once each); {@link get} and
 * {@link has} are synchronous after that; {@link store} updates memory at
 * once and the file in the background ({@link flush} waits for it).
 */
export class ListingCache {
  private readonly memory = new Map<string, CachedListing>();
  /** Fingerprints already looked up on disk (found or not). */
  private readonly read = new Set<string>();
  private readonly writing = new Map<string, Promise<void>>();
  /** The latest listing waiting to be written after the write in progress. */
  private readonly queued = new Map<string, { server: string; listing: CachedListing }>();
  /** The server each stored fingerprint was listed for: {@link flush} stores token counts counted since. */
  private readonly servers = new Map<string, string>();

  constructor(private readonly options: ListingCacheOptions) {}

  /** The file holding `fingerprint`'s listing, or `undefined` when the disk is off. */
  fileOf(fingerprint: string): string | undefined {
    if (this.options.dir === false) return undefined;
    const key = createHash('sha256').update(`${this.options.root}\0${fingerprint}`).digest('hex').slice(0, 32);
    return join(this.options.dir, `${key}.json`);
  }

  /** Read the entries of these fingerprints from disk (each at most once; errors count as absent). */
  async prepare(fingerprints: Iterable<string>): Promise<void> {
    const todo = [...new Set(fingerprints)].filter((fp) => !this.read.has(fp) && !this.memory.has(fp));
    await Promise.all(
      todo.map(async (fp) => {
        this.read.add(fp);
        const file = this.fileOf(fp);
        if (!file) return;
        const read = await readTrusted(file).catch(() => undefined);
        if (read && 'untrusted' in read) {
          const { what, fix } = read.untrusted;
          this.options.onWarning?.(
            `The listing cache file ${file} is ${what}; someone else could put their own tools and descriptions in it, so it is not used ` +
              `(the server's next listing replaces it). If it is yours, run \`${fix}\`, otherwise delete it.`,
          );
        }
        let listing = read && 'text' in read ? parseFile(read.text, fp) : undefined;
        if (!listing && this.options.second) {
          listing = await this.options.second.get(fp).catch((err: unknown) => void this.options.onError?.(err));
          // Another replica may list it later (docs/cluster.md): ask again at the next prepare.
          if (!listing) this.read.delete(fp);
        }
        // A store() that landed while we read is newer than the file.
        if (listing && !this.memory.has(fp)) {
          this.memory.set(fp, listing);
          if (listing.tokens) seedDefinitionTokens(listing.tokens);
        }
      }),
    );
  }

  /** Whether a listing of `fingerprint` is known (after {@link prepare} or {@link store}). */
  has(fingerprint: string): boolean {
    return this.memory.has(fingerprint);
  }

  /** The cached listing of `fingerprint`. */
  get(fingerprint: string): CachedListing | undefined {
    return this.memory.get(fingerprint);
  }

  /**
   * Remember a server's latest listing. Memory is updated now; the file is
   * rewritten in the background unless it already holds this listing.
   */
  store(fingerprint: string, server: string, listing: CachedListing): void {
    const copy: CachedListing = {
      tools: [...listing.tools],
      prompts: [...listing.prompts],
      // A listing without resources keeps the ones known: a tools re-list says nothing about them.
      resources: [...(listing.resources ?? this.memory.get(fingerprint)?.resources ?? [])],
      resourceTemplates: [...(listing.resourceTemplates ?? this.memory.get(fingerprint)?.resourceTemplates ?? [])],
      ...(listing.invalidTools?.length ? { invalidTools: listing.invalidTools.map((t) => ({ rawName: t.rawName, reason: t.reason })) } : {}),
      ...((p) => (p ? { protocol: p } : {}))(listing.protocol ?? this.memory.get(fingerprint)?.protocol),
      ...((t) => (t ? { tokens: t } : {}))(knownCounts(server, listing.tools)),
    };
    this.servers.set(fingerprint, server);
    const before = this.memory.get(fingerprint);
    this.memory.set(fingerprint, copy);
    const second = this.options.second;
    // Memory only: nothing to spare a rewrite of (and no comparison to pay for).
    const file = this.fileOf(fingerprint);
    if (!file && !second) return;
    if (before && deepEqual(before, copy)) return;
    second?.set(fingerprint, server, copy).catch((err: unknown) => this.options.onError?.(err));
    if (!file) return;
    if (this.writing.has(fingerprint)) {
      // Coalesced: only the newest listing is written once the current write is done.
      this.queued.set(fingerprint, { server, listing: copy });
      return;
    }
    this.startWrite(fingerprint, file, server, copy);
  }

  /** Wait for every background write (controller disposal). */
  async flush(): Promise<void> {
    // Counts read since a listing was stored (a `status`, say) go to the file, so the next start reports them without the tokenizer.
    for (const [fp, server] of this.servers) {
      const listing = this.memory.get(fp);
      if (listing) this.store(fp, server, listing);
    }
    while (this.writing.size > 0) await Promise.allSettled([...this.writing.values()]);
  }

  private startWrite(fingerprint: string, file: string, server: string, listing: CachedListing): void {
    const body = listingFile(fingerprint, server, listing);
    const p = writeAtomic(file, `${JSON.stringify(body)}\n`)
      .catch((err: unknown) => this.options.onError?.(err))
      .finally(() => {
        this.writing.delete(fingerprint);
        const next = this.queued.get(fingerprint);
        if (next) {
          this.queued.delete(fingerprint);
          this.startWrite(fingerprint, file, next.server, next.listing);
        }
      });
    this.writing.set(fingerprint, p);
  }
}

/** The text of a cache file (and of a second level's entry): `parseFile` reads it back. */
export function listingText(fingerprint: string, server: string, listing: CachedListing): string {
  return `${JSON.stringify(listingFile(fingerprint, server, listing))}\n`;
}

function listingFile(fingerprint: string, server: string, listing: CachedListing): CacheFile {
  return { version: CACHE_VERSION, server, fingerprint, at: new Date().toISOString(), ...listing };
}

/** Temp file next to `file` (0600, created exclusively), then rename over it. */
function writeAtomic(file: string, content: string): Promise<void> {
  return writeFileAtomic(file, content, { mkdir: true });
}
