/**
 * The listing cache's second level in a cluster (docs/cluster.md): every
 * listing a replica takes is kept in Redis under the server's fingerprint,
 * so a replica that never started the server still lists its tools (lazy
 * servers, a replica that just joined). Same format as the cache files.
 */
import { parseFile, listingText, type CachedListing, type ListingSecondLevel } from '../cache/listing-cache.js';
import type { Redis, WorkspaceKeys } from './redis.js';

/** How long a listing nobody refreshed stays in Redis: 30 days. */
const LISTING_TTL_S = 30 * 24 * 3600;

/** {@link ListingSecondLevel} on Redis: one string key per fingerprint, with a TTL. */
export class RedisListings implements ListingSecondLevel {
  constructor(
    private readonly redis: Redis,
    private readonly keys: WorkspaceKeys,
  ) {}

  async get(fingerprint: string): Promise<CachedListing | undefined> {
    const text = await this.redis.get(this.keys.listing(fingerprint));
    return typeof text === 'string' ? parseFile(text, fingerprint) : undefined;
  }

  async set(fingerprint: string, server: string, listing: CachedListing): Promise<void> {
    await this.redis.set(this.keys.listing(fingerprint), listingText(fingerprint, server, listing), { EX: LISTING_TTL_S });
  }
}
