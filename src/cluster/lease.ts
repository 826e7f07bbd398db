/**
 * A lease in Redis with a fencing token (docs/cluster.md, singletons): at
 * most one replica holds a server's lease at a time. Taking it is one Lua
 * script (`SET NX PX` of `<replica>:<token>`, the token from `INCR` on a
 * counter that only grows), renewing it a compare-and-extend, giving it up a
 * compare-and-delete, so a replica whose lease expired and was taken by
 * another can neither renew nor delete the new holder's lease. The token
 * orders holders: a higher one is always the later holder.
 */
import type { Redis, WorkspaceKeys } from './redis.js';

/** The lease is free: take it with a new token from the counter. Returns the token, or the holder's value. */
const ACQUIRE = `
local cur = redis.call('GET', KEYS[1])
if cur then return {0, cur} end
local token = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1] .. ':' .. token, 'PX', ARGV[2])
return {1, ARGV[1] .. ':' .. token}`;

/** Extend the lease only while it is still `ARGV[1]`. */
const RENEW = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`;

/** Delete the lease only while it is still `ARGV[1]`. */
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

/** Who holds a lease: the replica's id and its fencing token. */
export interface LeaseHolder {
  replica: string;
  token: number;
}

/** `<replica>:<token>` → {@link LeaseHolder}; `undefined` for anything else. */
export function parseHolder(value: unknown): LeaseHolder | undefined {
  if (typeof value !== 'string') return undefined;
  const m = /^([^:]+):(\d+)$/.exec(value);
  return m ? { replica: m[1]!, token: Number(m[2]) } : undefined;
}

/** The result of {@link ServerLease.acquire}. */
export type AcquireResult = { held: true; token: number } | { held: false; holder: LeaseHolder | undefined };

/** One server's lease in one workspace, seen from replica `replica`. */
export class ServerLease {
  private readonly key: string;
  private readonly fence: string;

  constructor(
    private readonly redis: Redis,
    keys: WorkspaceKeys,
    readonly server: string,
    private readonly replica: string,
    private readonly ttlMs: number,
  ) {
    this.key = keys.lease(server);
    this.fence = keys.fence(server);
  }

  /** Take the lease if it is free (ours with a new token), else say who holds it. Rejects when Redis does not answer. */
  async acquire(): Promise<AcquireResult> {
    const reply = (await this.redis.eval(ACQUIRE, { keys: [this.key, this.fence], arguments: [this.replica, String(this.ttlMs)] })) as [number, string];
    const holder = parseHolder(reply[1]);
    if (reply[0] === 1 && holder) return { held: true, token: holder.token };
    return { held: false, holder };
  }

  /** Extend our lease by the TTL; `false` when it is not ours any more (expired, and perhaps taken). */
  async renew(token: number): Promise<boolean> {
    return (await this.redis.eval(RENEW, { keys: [this.key], arguments: [`${this.replica}:${token}`, String(this.ttlMs)] })) === 1;
  }

  /** Give the lease up if it is still ours. */
  async release(token: number): Promise<void> {
    await this.redis.eval(RELEASE, { keys: [this.key], arguments: [`${this.replica}:${token}`] });
  }

  /** Who holds it now, if anyone. */
  async holder(): Promise<LeaseHolder | undefined> {
    return parseHolder(await this.redis.get(this.key));
  }
}

/** Every lease of a workspace with its holder and time left (`status --cluster`). */
export async function listLeases(redis: Redis, keys: WorkspaceKeys): Promise<{ server: string; holder: LeaseHolder; ttlMs: number }[]> {
  const prefix = keys.lease('');
  const out: { server: string; holder: LeaseHolder; ttlMs: number }[] = [];
  for await (const batch of redis.scanIterator({ MATCH: `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`, COUNT: 100 })) {
    for (const key of Array.isArray(batch) ? batch : [batch]) {
      const [value, ttl] = await Promise.all([redis.get(key), redis.pTTL(key)]);
      const holder = parseHolder(value);
      if (holder) out.push({ server: key.slice(prefix.length), holder, ttlMs: Number(ttl) });
    }
  }
  return out.sort((a, b) => a.server.localeCompare(b.server));
}
