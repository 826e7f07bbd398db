/**
 * OAuth credentials of a clustered gateway (docs/cluster.md): the managed
 * servers' tokens live in Redis, sealed with AES-256-GCM under a key derived
 * (HKDF-SHA256) from one cluster secret, so Redis alone never holds a usable
 * token. Each record is bound to its key (the key is the GCM additional
 * data: a sealed record moved to another key does not open). Updates are
 * compare-and-set on a version; a refresh runs under a Redis lock and the
 * manager re-reads after taking it, so a rotating refresh token is redeemed
 * once across replicas.
 */
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import type { StoredCredentials, TokenStore } from '../auth/token-store.js';
import { serializeInProcess } from '../auth/token-store.js';
import { ErrorCode, McpReconcilerError } from '../errors.js';
import type { Redis, WorkspaceKeys } from './redis.js';

/** The cluster secret must carry at least this many bytes. */
export const MIN_SECRET_BYTES = 32;

/**
 * The key of a principal's own credentials (docs/cluster-principals.md):
 * `p-` and 32 hex digits of SHA-256 over the issuer and the subject, since
 * `sub` may hold `:` and is personal data. The gateway's own are `gateway`.
 */
export function principalKey(issuer: string, sub: string): string {
  return `p-${createHash('sha256').update(`${issuer} ${sub}`).digest('hex').slice(0, 32)}`;
}

/** The 32-byte sealing key of a cluster secret. */
export function sealingKey(secret: string): Buffer {
  if (Buffer.byteLength(secret) < MIN_SECRET_BYTES) {
    throw new McpReconcilerError(ErrorCode.Usage, `the cluster secret must have at least ${MIN_SECRET_BYTES} bytes`, {
      hint: 'e.g. MCP_RECONCILER_CLUSTER_SECRET=$(openssl rand -hex 32), the same on every replica',
    });
  }
  return Buffer.from(hkdfSync('sha256', secret, 'mcp-reconciler cluster', 'oauth credentials v1', 32));
}

/** `iv ‖ ciphertext ‖ tag`, base64; `aad` binds it to where it is stored. */
export function seal(key: Buffer, aad: string, plain: string): string {
  const iv = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', key, iv);
  c.setAAD(Buffer.from(aad));
  const body = Buffer.concat([c.update(plain, 'utf8'), c.final()]);
  return Buffer.concat([iv, body, c.getAuthTag()]).toString('base64');
}

/** The plain text of {@link seal}'s output; throws when it was not sealed with `key` for `aad`. */
export function unseal(key: Buffer, aad: string, sealed: string): string {
  const raw = Buffer.from(sealed, 'base64');
  if (raw.length < 28) throw new Error('sealed record too short');
  const d = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
  d.setAAD(Buffer.from(aad));
  d.setAuthTag(raw.subarray(raw.length - 16));
  return Buffer.concat([d.update(raw.subarray(12, raw.length - 16)), d.final()]).toString('utf8');
}

/** Set `data` and bump `v` if `v` is still `ARGV[1]` (`''` for a missing record); `ARGV[2]` empty deletes. */
const CAS = `
local v = redis.call('HGET', KEYS[1], 'v') or ''
if v ~= ARGV[1] then return 0 end
if ARGV[2] == '' then redis.call('DEL', KEYS[1]) return 1 end
redis.call('HSET', KEYS[1], 'v', tostring((tonumber(v) or 0) + 1), 'data', ARGV[2])
return 1`;

/** Delete the lock only while it is still ours. */
const UNLOCK = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

/** How long a refresh may hold the lock (it expires by itself after a crash), and how long others wait. */
const LOCK_TTL_MS = 30_000;
const LOCK_POLL_MS = 25;

/** Options of {@link RedisTokenStore}. */
export interface RedisTokenStoreOptions {
  redis: Redis;
  keys: WorkspaceKeys;
  /** The cluster secret (`MCP_RECONCILER_CLUSTER_SECRET`). */
  secret: string;
  /** Whose credentials: `gateway` (the gateway's own identity towards the managed servers) or a {@link principalKey}. */
  principal: string;
  /** Redis operations, counted (docs/cluster.md's unit costs). */
  count?: (op: string) => void;
}

/** A {@link TokenStore} in Redis, sealed; see the module comment. */
export class RedisTokenStore implements TokenStore {
  private readonly key: Buffer;

  constructor(private readonly options: RedisTokenStoreOptions) {
    this.key = sealingKey(options.secret);
  }

  private redisKey(url: string): string {
    return this.options.keys.credential(this.options.principal, createHash('sha256').update(url).digest('hex').slice(0, 32));
  }

  private index(): string {
    return this.options.keys.credential(this.options.principal, 'index');
  }

  private async read(url: string): Promise<{ v: string; value: StoredCredentials | undefined }> {
    const k = this.redisKey(url);
    this.options.count?.('HMGET');
    const [v, data] = await this.options.redis.hmGet(k, ['v', 'data']);
    if (typeof data !== 'string') return { v: typeof v === 'string' ? v : '', value: undefined };
    let value: StoredCredentials | undefined;
    try {
      value = JSON.parse(unseal(this.key, k, data)) as StoredCredentials;
    } catch {
      // Sealed with another secret, or tampered with: as good as absent (a new sign-in overwrites it).
      value = undefined;
    }
    return { v: typeof v === 'string' ? v : '', value };
  }

  async get(url: string): Promise<StoredCredentials | undefined> {
    return (await this.read(url)).value;
  }

  async keys(): Promise<string[]> {
    this.options.count?.('SMEMBERS');
    return (await this.options.redis.sMembers(this.index())).sort();
  }

  async update(url: string, update: (current: StoredCredentials | undefined) => StoredCredentials | undefined): Promise<void> {
    const k = this.redisKey(url);
    // Compare-and-set: a write another replica made between our read and our write makes us read again.
    for (let attempt = 0; attempt < 100; attempt++) {
      const { v, value } = await this.read(url);
      const next = update(value);
      this.options.count?.('EVAL');
      const done = await this.options.redis.eval(CAS, { keys: [k], arguments: [v, next === undefined ? '' : seal(this.key, k, JSON.stringify(next))] });
      if (done === 1) {
        this.options.count?.(next === undefined ? 'SREM' : 'SADD');
        if (next === undefined) await this.options.redis.sRem(this.index(), url);
        else await this.options.redis.sAdd(this.index(), url);
        if (next?.tokens !== undefined && JSON.stringify(next.tokens) !== JSON.stringify(value?.tokens)) await this.announce();
        return;
      }
    }
    throw new McpReconcilerError(ErrorCode.NeedsAuth, `the credentials of ${url} changed under every one of 100 attempts to update them`, { hint: 'try again' });
  }

  /**
   * Tell every replica that this store has new tokens: a server of theirs
   * waiting in `needs_auth` connects with them (a terminal's `auth --cluster`,
   * a sign-in another replica redeemed). Best effort: a replica that misses it
   * uses the tokens at its next connect.
   */
  private async announce(): Promise<void> {
    this.options.count?.('PUBLISH');
    await this.options.redis.publish(this.options.keys.credentialsChanged, this.options.principal).catch(() => undefined);
  }

  async lock<T>(url: string, fn: () => Promise<T>): Promise<T> {
    const lockKey = this.options.keys.credentialLock(this.options.principal, createHash('sha256').update(url).digest('hex').slice(0, 32));
    return serializeInProcess(this, url, async () => {
      const token = randomBytes(16).toString('hex');
      const until = Date.now() + LOCK_TTL_MS;
      for (;;) {
        this.options.count?.('SET NX');
        if ((await this.options.redis.set(lockKey, token, { NX: true, PX: LOCK_TTL_MS })) === 'OK') break;
        if (Date.now() > until) throw new McpReconcilerError(ErrorCode.NeedsAuth, `another replica has been refreshing the tokens of ${url} for ${LOCK_TTL_MS} ms`, { hint: 'it will expire by itself; try again' });
        await new Promise((r) => setTimeout(r, LOCK_POLL_MS));
      }
      try {
        return await fn();
      } finally {
        this.options.count?.('EVAL');
        await this.options.redis.eval(UNLOCK, { keys: [lockKey], arguments: [token] }).catch(() => undefined);
      }
    });
  }
}
