/**
 * A lease in Redis with a fencing token (docs/cluster.md, singletons): at
 * most one replica holds a server's lease at a time. Taking it is one Lua
 * script (`SET NX PX` of `<replica>:<token>`, the token from `INCR` on a
 * counter that only grows), renewing it a compare-and-extend, giving it up a
 * compare-and-delete, so a replica whose lease expired and was taken by
 * another can neither renew nor delete the new holder's lease. The token
 * orders holders: a higher one is always the later holder.
 *
 * With the cluster secret the value is `<replica>:<token>:<sig>`, an
 * HMAC-SHA256 over the Redis key and `<replica>:<token>` under a key of its
 * own label (docs/cluster-gaps.md). Lua cannot compute it, so the taker signs
 * the token it expects (the counter + 1) and the script grants only while the
 * counter is still that; a lease whose value does not verify counts as free
 * and is taken over by the same script, compare-and-swap on the value seen,
 * so whoever can write to Redis but lacks the secret cannot hold a singleton
 * hostage with a made-up holder.
 */
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import { sealingKey } from './credentials.js';
import type { Redis, WorkspaceKeys } from './redis.js';

/**
 * Take the lease when it is free, or when it is exactly `ARGV[3]` (a value
 * that did not verify). `ARGV[4]` non-empty: grant only while the counter is
 * `ARGV[4]` (the token `ARGV[5]` signs is that + 1), else say what it is.
 * Replies `{1, value}` taken, `{0, value}` held, `{2, counter}` sign again.
 */
const ACQUIRE = `
local cur = redis.call('GET', KEYS[1])
if cur and cur ~= ARGV[3] then return {0, cur} end
if ARGV[4] ~= '' then
  local f = redis.call('GET', KEYS[2]) or '0'
  if f ~= ARGV[4] then return {2, f} end
end
local token = redis.call('INCR', KEYS[2])
local value = ARGV[1] .. ':' .. token
if ARGV[5] ~= '' then value = value .. ':' .. ARGV[5] end
redis.call('SET', KEYS[1], value, 'PX', ARGV[2])
return {1, value}`;

/** Extend the lease only while it is still `ARGV[1]`. */
const RENEW = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`;

/** Delete the lease only while it is still `ARGV[1]`. */
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

/** The key that signs lease values: derived from the cluster secret with its own label (unrelated to the sealing, session-id and announcement keys). */
export function leaseKey(secret: string): Buffer {
  sealingKey(secret); // the same length check, and usage error, as for sealing
  return Buffer.from(hkdfSync('sha256', secret, 'mcp-reconciler cluster', 'singleton leases v1', 32));
}

function leaseMac(key: Buffer, redisKey: string, holder: string): string {
  return createHmac('sha256', key).update(`${redisKey}\n${holder}`).digest('base64url');
}

/** The lease value of `replica` under `token` stored at `redisKey`: signed when there is a key. */
export function leaseValue(key: Buffer | undefined, redisKey: string, replica: string, token: number): string {
  const holder = `${replica}:${token}`;
  return key ? `${holder}:${leaseMac(key, redisKey, holder)}` : holder;
}

/** What a reader can tell of a lease value's signature (`unchecked`: signed, but the reader has no key). */
export type LeaseTrust = 'verified' | 'unchecked' | 'unsigned' | 'forged';

/** Whether the lease value stored under `redisKey` is signed with `key`; `forged` for a value that is no lease at all. */
export function leaseTrust(value: string, redisKey: string, key: Buffer | undefined): LeaseTrust {
  const m = /^([^:]+:\d+)(?::([A-Za-z0-9_-]+))?$/.exec(value);
  if (!m) return 'forged';
  if (m[2] === undefined) return 'unsigned';
  if (!key) return 'unchecked';
  const expected = Buffer.from(leaseMac(key, redisKey, m[1]!));
  const given = Buffer.from(m[2]);
  return expected.length === given.length && timingSafeEqual(expected, given) ? 'verified' : 'forged';
}

/** Who holds a lease: the replica's id and its fencing token. */
export interface LeaseHolder {
  replica: string;
  token: number;
}

/** `<replica>:<token>` or `<replica>:<token>:<sig>` → {@link LeaseHolder} (the signature is not checked: {@link leaseTrust}); `undefined` for anything else. */
export function parseHolder(value: unknown): LeaseHolder | undefined {
  if (typeof value !== 'string') return undefined;
  const m = /^([^:]+):(\d+)(?::[A-Za-z0-9_-]+)?$/.exec(value);
  return m ? { replica: m[1]!, token: Number(m[2]) } : undefined;
}

/**
 * The result of {@link ServerLease.acquire}; `tookOver` names the value that
 * did not verify and was replaced (with the cluster secret only).
 */
export type AcquireResult = { held: true; token: number; tookOver?: { value: string; trust: LeaseTrust } } | { held: false; holder: LeaseHolder | undefined };

/** Rounds of {@link ServerLease.acquire} before it gives up (each one another replica's grant or counter step in between). */
const ACQUIRE_ROUNDS = 8;

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
    /** The cluster secret's lease key ({@link leaseKey}): values are signed, and one that does not verify counts as free. */
    private readonly signingKey?: Buffer,
  ) {
    this.key = keys.lease(server);
    this.fence = keys.fence(server);
  }

  /** The counter as last seen: the token a signed take expects is this + 1 (a wrong guess costs one more round). */
  private fenceSeen = '0';

  /** The value of our lease under `token`. */
  private value(token: number): string {
    return leaseValue(this.signingKey, this.key, this.replica, token);
  }

  /**
   * Take the lease if it is free (ours with a new token), else say who holds
   * it. With the signing key a value that does not verify counts as free and
   * is taken over. Rejects when Redis does not answer.
   */
  async acquire(): Promise<AcquireResult> {
    let replacing: { value: string; trust: LeaseTrust } | undefined;
    for (let round = 0; round < ACQUIRE_ROUNDS; round++) {
      const signed = this.signingKey !== undefined;
      const sig = this.signingKey ? leaseMac(this.signingKey, this.key, `${this.replica}:${Number(this.fenceSeen) + 1}`) : '';
      const reply = (await this.redis.eval(ACQUIRE, {
        keys: [this.key, this.fence],
        arguments: [this.replica, String(this.ttlMs), replacing?.value ?? '', signed ? this.fenceSeen : '', sig],
      })) as [number, string];
      const [kind, text] = [Number(reply[0]), String(reply[1])];
      if (kind === 2) {
        this.fenceSeen = text;
        continue;
      }
      const holder = parseHolder(text);
      if (kind === 1 && holder) {
        this.fenceSeen = String(holder.token);
        return { held: true, token: holder.token, ...(replacing ? { tookOver: replacing } : {}) };
      }
      const trust = this.signingKey ? leaseTrust(text, this.key, this.signingKey) : 'unchecked';
      if (trust === 'verified' || trust === 'unchecked') return { held: false, holder };
      // Not signed with our secret: as good as free; replace exactly this value (a genuine grant meanwhile wins).
      replacing = { value: text, trust };
    }
    return { held: false, holder: undefined };
  }

  /** Extend our lease by the TTL; `false` when it is not ours any more (expired, and perhaps taken). */
  async renew(token: number): Promise<boolean> {
    return (await this.redis.eval(RENEW, { keys: [this.key], arguments: [this.value(token), String(this.ttlMs)] })) === 1;
  }

  /** Give the lease up if it is still ours. */
  async release(token: number): Promise<void> {
    await this.redis.eval(RELEASE, { keys: [this.key], arguments: [this.value(token)] });
  }

  /** Who holds it now, if anyone (with the signing key, only a holder whose value verifies). */
  async holder(): Promise<LeaseHolder | undefined> {
    const value = await this.redis.get(this.key);
    if (typeof value === 'string' && this.signingKey && leaseTrust(value, this.key, this.signingKey) !== 'verified') return undefined;
    return parseHolder(value);
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
