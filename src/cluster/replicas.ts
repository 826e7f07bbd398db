/**
 * The replicas of a clustered gateway (docs/cluster.md): each announces
 * itself every few seconds under a key that expires, so `status --cluster`
 * lists the live ones with their sessions, and a replica that died drops out
 * by itself.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { LeaseView } from '../../machines/lease.machine.js';
import type { Redis, WorkspaceKeys } from './redis.js';

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
  /** Where this replica sees each singleton server run (the lease machine's projection, docs/cluster.md). */
  leases?: Record<string, LeaseView>;
  startedAt: string;
  /** When it last announced itself (ISO). */
  at: string;
}

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
    private readonly describe: () => { url: string; reachUrl?: string; sessions: number; principals: Record<string, number>; leases?: Record<string, LeaseView> },
    /** This replica's id (the session ids it mints and its singleton leases name it). */
    readonly id: string = newReplicaId(),
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
    await this.redis.set(this.keys.replica(this.id), JSON.stringify(info), { PX: TTL_MS });
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

/** The live replicas of a workspace; ids whose announcement expired are removed from the list. */
export async function liveReplicas(redis: Redis, keys: WorkspaceKeys): Promise<ReplicaInfo[]> {
  const ids = await redis.sMembers(keys.replicas);
  if (ids.length === 0) return [];
  const values = await redis.mGet(ids.map((id) => keys.replica(id)));
  const out: ReplicaInfo[] = [];
  const gone: string[] = [];
  values.forEach((v, i) => {
    if (typeof v !== 'string') return void gone.push(ids[i]!);
    try {
      out.push(JSON.parse(v) as ReplicaInfo);
    } catch {
      gone.push(ids[i]!);
    }
  });
  if (gone.length > 0) await redis.sRem(keys.replicas, gone);
  return out.sort((a, b) => a.startedAt.localeCompare(b.startedAt));
}
