/**
 * The replicas of a clustered gateway (docs/cluster.md): each announces
 * itself every few seconds under a key that expires, so `status --cluster`
 * lists the live ones with their sessions, and a replica that died drops out
 * by itself.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { LeaseView } from '../../machines/lease.machine.js';
import { announcementText, readAnnouncement, type AnnouncementTrust } from './announcements.js';
import type { Redis, WorkspaceKeys } from './redis.js';
import type { PrincipalStatus } from '../gateway/pool.js';

/** How often a replica announces itself, and how long an announcement lives. */
export const HEARTBEAT_MS = 5_000;
const TTL_MS = 3 * HEARTBEAT_MS;

/** What a replica says about itself. */
export interface ReplicaInfo {
  id: string;
  url: string;
  /**
   * Where the other replicas reach this one to forward the requests of the
   * sessions it owns (`--replica-url`; default its listening URL).
   */
  reachUrl?: string;
  host: string;
  pid: number;
  /** Open sessions, and how many of them per principal. */
  sessions: number;
  principals: Record<string, number>;
  /**
   * Per-principal controllers on this replica (docs/cluster-principals.md),
   * by principal key (`p-…`, never the `sub`): their sessions here and their
   * servers' states. Absent when it has none.
   */
  controllers?: Record<string, PrincipalStatus>;
  /** Where this replica sees each singleton server run (the lease machine's projection, docs/cluster.md). */
  leases?: Record<string, LeaseView>;
  startedAt: string;
  /** When it last announced itself (ISO). */
  at: string;
  /**
   * Set by the reader, not announced: whether the announcement is signed
   * with the cluster secret (`unchecked` when the reader has no secret).
   */
  announcement?: AnnouncementTrust;
}

/** What a replica's gateway says of itself in each announcement. */
export type ReplicaDescription = Pick<ReplicaInfo, 'url' | 'reachUrl' | 'sessions' | 'principals' | 'controllers'>;

/** A fresh replica id: 12 hex digits. */
export function newReplicaId(): string {
  return randomBytes(6).toString('hex');
}

/** Announces this replica until stopped. */
export class ReplicaAnnouncer {
  private timer: NodeJS.Timeout | undefined;
  private readonly startedAt = new Date().toISOString();

  constructor(
    private readonly redis: Redis,
    private readonly keys: WorkspaceKeys,
    private readonly describe: () => ReplicaDescription & { leases?: Record<string, LeaseView> },
    /** This replica's id (the session ids it mints and its singleton leases name it). */
    readonly id: string = newReplicaId(),
    /** Signs the announcement (the cluster secret's announcement key); without it the announcement is unsigned. */
    private readonly key?: Buffer,
  ) {}

  /** Announce now and every {@link HEARTBEAT_MS}; a Redis outage only skips beats. */
  start(): void {
    const beat = (): void => void this.announce().catch(() => undefined);
    beat();
    this.timer = setInterval(beat, HEARTBEAT_MS).unref();
  }

  /** Announce now, not at the next beat: a session opened or closed, and `status --cluster` should see it at once. */
  refresh(): void {
    if (this.timer === undefined) return;
    void this.announce().catch(() => undefined);
  }

  private async announce(): Promise<void> {
    const info: ReplicaInfo = { id: this.id, host: hostname(), pid: process.pid, startedAt: this.startedAt, at: new Date().toISOString(), ...this.describe() };
    const key = this.keys.replica(this.id);
    await this.redis.set(key, announcementText(info, key, this.key), { PX: TTL_MS });
    await this.redis.sAdd(this.keys.replicas, this.id);
  }

  /** Stop announcing and leave the list. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.redis.del(this.keys.replica(this.id)).catch(() => undefined);
    await this.redis.sRem(this.keys.replicas, this.id).catch(() => undefined);
  }
}

/**
 * The live replicas of a workspace; ids whose announcement expired are
 * removed from the list. With `key` (the cluster secret's announcement key)
 * each says whether its announcement is signed with it.
 */
export async function liveReplicas(redis: Redis, keys: WorkspaceKeys, key?: Buffer): Promise<ReplicaInfo[]> {
  const ids = await redis.sMembers(keys.replicas);
  if (ids.length === 0) return [];
  const values = await redis.mGet(ids.map((id) => keys.replica(id)));
  const out: ReplicaInfo[] = [];
  const gone: string[] = [];
  values.forEach((v, i) => {
    const read = typeof v === 'string' ? readAnnouncement<ReplicaInfo>(v, keys.replica(ids[i]!), key) : undefined;
    if (!read) return void gone.push(ids[i]!);
    out.push({ ...read.info, announcement: read.trust });
  });
  if (gone.length > 0) await redis.sRem(keys.replicas, gone);
  return out.sort((a, b) => a.startedAt.localeCompare(b.startedAt));
}

/**
 * Where replica `id` is reached (its announced `reachUrl`, else its `url`):
 * one GET. `undefined` when it has no announcement (gone), or, with `key`,
 * when its announcement is not signed with the cluster secret: then
 * `untrusted` hears why, and nothing is forwarded there.
 */
export async function replicaAddress(redis: Redis, keys: WorkspaceKeys, id: string, key: Buffer | undefined, untrusted: (why: string) => void): Promise<string | undefined> {
  const raw = await redis.get(keys.replica(id));
  if (typeof raw !== 'string') return undefined;
  const read = readAnnouncement<ReplicaInfo>(raw, keys.replica(id), key);
  if (!read) return undefined;
  if (key && read.trust !== 'verified') {
    untrusted(read.trust === 'unsigned' ? 'it is not signed' : 'its signature does not match the cluster secret');
    return undefined;
  }
  const url = read.info.reachUrl ?? read.info.url;
  return typeof url === 'string' ? url : undefined;
}
