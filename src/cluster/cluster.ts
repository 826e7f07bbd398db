/**
 * One replica's share of a clustered gateway (docs/cluster.md): the Redis
 * connections, the shared approvals, and the gate the pool passes before it
 * starts a server. Loaded only by `serve --cluster`: without it nothing of
 * Redis is imported.
 */
import type { McpController } from '../controller/controller.js';
import { describeError } from '../errors.js';
import { RedisApprovalStore } from './approvals.js';
import { RedisListings } from './listings.js';
import { RedisTokenStore } from './credentials.js';
import { ReplicaAnnouncer, newReplicaId, type ReplicaDescription } from './replicas.js';
import { announcementKey } from './announcements.js';
import { leaseKey } from './lease.js';
import { SessionRouter } from './sessions.js';
import { DEFAULT_LEASE_MS, Singletons } from './singletons.js';
import type { GatewayPool } from '../gateway/pool.js';
import { checkWorkspaceId, connectRedis, workspaceKeys, type Redis, type WorkspaceKeys } from './redis.js';

/** Options of {@link openCluster}. */
export interface ClusterOptions {
  /** `--cluster`: a Redis URL or unix socket path. */
  target: string;
  /** `--workspace-id`: names the workspace across machines. */
  workspaceId: string;
  /** Where connection problems and recoveries are told. */
  log: (line: string) => void;
  /**
   * The cluster secret (`MCP_RECONCILER_CLUSTER_SECRET`, the same on every
   * replica): with it, the managed servers' OAuth credentials are kept in
   * Redis, sealed; without it each replica keeps its own.
   */
  secret?: string;
  /** How long a singleton's lease lasts without renewal (default {@link DEFAULT_LEASE_MS}; the same on every replica). */
  leaseMs?: number;
}

/** The server states whose decisions outlive a Redis outage: running, or on their way to it. */
const RUNNING = new Set(['connected', 'connecting', 'reconnecting']);
/** How long {@link Cluster.changed} gathers changes before it announces them (`status --cluster` is that much later). */
const CHANGE_COALESCE_MS = 100;

/** A replica's cluster connection. */
export class Cluster {
  readonly approvals: RedisApprovalStore;
  /** The listing cache's second level. */
  readonly listings: RedisListings;
  /** The shared OAuth credentials, when the cluster has a secret. */
  readonly tokens: RedisTokenStore | undefined;
  /** This replica's id: in its announcement, in the session ids it mints and in the singleton leases it holds. */
  readonly replicaId = newReplicaId();
  /**
   * Signs this replica's session ids and forwards other replicas' sessions,
   * when the cluster has a secret (without one, a session is answered only
   * by the replica that opened it).
   */
  readonly sessions: SessionRouter | undefined;
  /** The singleton servers' leases, and where their calls go. */
  readonly singletons: Singletons;
  /** Signs this replica's announcement and checks the others' (with the cluster secret). */
  private readonly announcementKey: Buffer | undefined;
  /** Announcements already reported as untrusted: one log line per replica and reason. */
  private readonly untrustedSeen = new Set<string>();
  private controller: McpController | undefined;
  private subscriber: Redis | undefined;
  private announcer: ReplicaAnnouncer | undefined;
  /** A coalesced announcement after {@link changed}, when one is due. */
  private changeQueued: NodeJS.Timeout | undefined;
  private down = false;
  private closed = false;

  private constructor(
    readonly redis: Redis,
    readonly keys: WorkspaceKeys,
    private readonly options: ClusterOptions,
  ) {
    this.approvals = new RedisApprovalStore({ redis, keys, target: options.target });
    this.listings = new RedisListings(redis, keys);
    this.announcementKey = options.secret ? announcementKey(options.secret) : undefined;
    const untrusted = (replica: string, why: string): void => this.untrusted(replica, why);
    this.singletons = new Singletons({
      redis,
      keys,
      replica: this.replicaId,
      ttlMs: options.leaseMs ?? DEFAULT_LEASE_MS,
      log: options.log,
      ...(this.announcementKey ? { announcementKey: this.announcementKey } : {}),
      ...(options.secret ? { leaseKey: leaseKey(options.secret) } : {}),
      untrusted,
    });
    this.tokens = options.secret ? new RedisTokenStore({ redis, keys, secret: options.secret, principal: 'gateway' }) : undefined;
    this.sessions = options.secret ? new SessionRouter({ redis, keys, secret: options.secret, replicaId: this.replicaId, log: options.log, untrusted }) : undefined;
  }

  /** Connect to Redis; rejects with a `connect_failed` error when it does not answer. */
  static async open(options: ClusterOptions): Promise<Cluster> {
    const keys = workspaceKeys(checkWorkspaceId(options.workspaceId));
    let cluster: Cluster | undefined;
    const redis = await connectRedis(options.target, (message) => {
      options.log(`${message} (gated servers that are not running stay pending until it answers)`);
      if (cluster) cluster.down = true;
    });
    cluster = new Cluster(redis, keys, options);
    redis.on('ready', () => cluster.recovered());
    return cluster;
  }

  /**
   * Follow `controller`: a decision any replica stores is applied here at once
   * (pub/sub), and a reconnect to Redis re-reads everything.
   */
  async attach(controller: McpController, pool?: GatewayPool): Promise<void> {
    this.controller = controller;
    if (pool) this.singletons.attach(controller, (s) => pool.wants(s), (s) => pool.placementChanged(s));
    this.approvals.running = () =>
      controller
        .status()
        .filter((r) => RUNNING.has(r.state))
        .map((r) => r.name);
    const sub = this.redis.duplicate();
    sub.on('error', () => undefined); // the main client reports connection problems
    await sub.connect();
    // The message is the server whose decision changed: once re-read, say that it is in force here.
    await sub.subscribe(this.keys.approvalsChanged, (server) => this.reread('an approval changed', server));
    // Tokens stored by a terminal's `auth --cluster` or another replica: a server waiting in needs_auth here connects with them.
    await sub.subscribe(this.keys.credentialsChanged, (principal) => void this.tokensStored(principal, pool));
    this.subscriber = sub;
  }

  private async tokensStored(principal: string, pool: GatewayPool | undefined): Promise<void> {
    const controllers = principal === 'gateway' ? [this.controller] : (pool?.principalControllers() ?? []);
    for (const c of controllers) await c?.tokensStored().catch((err: unknown) => this.options.log(`picking up stored tokens: ${describeError(err)}`));
  }

  /**
   * The gate before the pool starts servers: re-read the decisions (SPEC §4
   * in a cluster), so a decision taken on another replica, or Redis gone,
   * counts for this very start.
   */
  async admit(servers: string[] = []): Promise<void> {
    await this.controller?.reload().catch((err: unknown) => this.options.log(`re-reading approvals: ${describeError(err)}`));
    // A singleton is held here only under its lease: take it now if it is free.
    await this.singletons.acquire(servers).catch((err: unknown) => this.options.log(`singleton leases: ${describeError(err)}`));
  }

  /** Announce this replica (for `status --cluster`) with what `describe` says, until {@link close}. */
  announce(describe: () => ReplicaDescription): void {
    this.announcer = new ReplicaAnnouncer(this.redis, this.keys, () => ({ ...describe(), leases: this.singletons.views() }), this.replicaId, this.announcementKey);
    this.announcer.start();
    if (!this.announcementKey) {
      this.options.log(
        'cluster: replica announcements are unsigned ($MCP_RECONCILER_CLUSTER_SECRET is not set): whoever can write to this Redis can point forwarded singleton calls, and the callers\' bearer tokens, at another address; set the secret on every replica to sign them',
      );
    }
  }

  /** An announcement that is not signed with the cluster secret was read: nothing goes there; say so once per replica and reason. */
  private untrusted(replica: string, why: string): void {
    const seen = `${replica}\n${why}`;
    if (this.untrustedSeen.has(seen)) return;
    this.untrustedSeen.add(seen);
    this.options.log(`ignoring replica ${replica}'s announcement in Redis: ${why} (forged, or that replica runs without $MCP_RECONCILER_CLUSTER_SECRET or with another one); no request is forwarded to it`);
  }

  /**
   * A session opened or closed here, or a principal's server changed state:
   * announce it shortly, once for a burst (many principals connecting at once
   * would otherwise write the whole announcement at each of their steps).
   */
  changed(): void {
    if (this.changeQueued) return;
    this.changeQueued = setTimeout(() => {
      this.changeQueued = undefined;
      this.announcer?.refresh();
    }, CHANGE_COALESCE_MS).unref();
  }

  private recovered(): void {
    if (!this.down || this.closed) return;
    this.down = false;
    this.options.log(`Redis at ${this.options.target} answers again; approvals re-read`);
    this.reread('Redis is back');
  }

  private reread(why: string, server?: string): void {
    if (this.closed || !this.controller) return;
    this.controller
      .reload()
      .then(() => {
        const record = server === undefined ? undefined : this.approvals.stored(server);
        if (!record || this.closed) return;
        // The decision's own clock (`at`) is the storing machine's: across machines the figure carries their skew.
        const after = Date.now() - Date.parse(record.at);
        this.options.log(`approvals: "${server}" ${record.decision} in the cluster is in force on this replica (${Number.isFinite(after) ? `${after} ms after it was stored` : 'just now'})`);
      })
      .catch((err: unknown) => this.options.log(`re-reading approvals (${why}): ${describeError(err)}`));
  }

  /** Leave Redis. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.changeQueued);
    await this.singletons.close();
    await this.announcer?.stop();
    this.sessions?.close();
    for (const c of [this.subscriber, this.redis]) {
      if (!c) continue;
      try {
        c.destroy();
      } catch {
        // already gone
      }
    }
  }
}

/** Connect a replica to its cluster (see {@link Cluster.open}). */
export function openCluster(options: ClusterOptions): Promise<Cluster> {
  return Cluster.open(options);
}
