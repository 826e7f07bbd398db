/**
 * Signed replica announcements (docs/cluster-singletons.md): a replica's
 * announcement in Redis names the URL other replicas forward requests to,
 * with the callers' bearer tokens. With the cluster secret each announcement
 * carries an HMAC-SHA256 over its Redis key and its JSON, under a key
 * derived from the secret with its own label, so whoever can write to Redis
 * but lacks the secret cannot point forwarded requests elsewhere: a replica
 * that has the secret ignores announcements that are unsigned or badly
 * signed.
 */
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import { sealingKey } from './credentials.js';

/** The field of an announcement's JSON that holds its signature. */
const SIG_FIELD = 'sig';

/** What a reader can tell of an announcement's signature. */
export type AnnouncementTrust = 'verified' | 'unsigned' | 'forged' | 'unchecked';

/** The key that signs announcements: derived from the cluster secret with its own label (unrelated to the sealing and session-id keys). */
export function announcementKey(secret: string): Buffer {
  sealingKey(secret); // the same length check, and usage error, as for sealing
  return Buffer.from(hkdfSync('sha256', secret, 'mcp-reconciler cluster', 'replica announcements v1', 32));
}

function mac(key: Buffer, redisKey: string, json: string): string {
  return createHmac('sha256', key).update(`${redisKey}\n${json}`).digest('base64url');
}

/** The text to store under `redisKey`: `info`'s JSON, with its signature when there is a key. */
export function announcementText(info: object, redisKey: string, key: Buffer | undefined): string {
  const json = JSON.stringify(info);
  return key ? JSON.stringify({ ...info, [SIG_FIELD]: mac(key, redisKey, json) }) : json;
}

/**
 * Parse an announcement stored under `redisKey` and tell whether it is
 * signed with `key` (`unchecked` without a key, when it carries a signature).
 * `undefined` for text that is not a JSON object.
 */
export function readAnnouncement<T extends object>(text: string, redisKey: string, key: Buffer | undefined): { info: T; trust: AnnouncementTrust } | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
  const { [SIG_FIELD]: sig, ...info } = parsed as Record<string, unknown>;
  if (typeof sig !== 'string') return { info: info as T, trust: 'unsigned' };
  if (!key) return { info: info as T, trust: 'unchecked' };
  // JSON.stringify of what JSON.parse gave is the text the signer signed: same key order, same numbers.
  const expected = Buffer.from(mac(key, redisKey, JSON.stringify(info)));
  const given = Buffer.from(sig);
  return { info: info as T, trust: expected.length === given.length && timingSafeEqual(expected, given) ? 'verified' : 'forged' };
}
