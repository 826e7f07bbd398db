/**
 * Approvals of a clustered gateway (docs/cluster.md): one Redis hash per
 * workspace, `server → {hash, decision, at}`, shared by every replica. A
 * write is announced on a pub/sub channel so every replica re-reads at once.
 *
 * Fails closed: when Redis cannot be read, `load` yields the error and only
 * the decisions of servers running now (so connected servers keep
 * answering); every gated server that would have to start stays pending.
 */
import type { ApprovalRecord, ApprovalStore } from '../approvals/store.js';
import { ErrorCode, McpReconcilerError, describeError } from '../errors.js';
import { isPlainObject } from '../util/persist.js';
import { setOwn } from '../util/own.js';
import type { Redis, WorkspaceKeys } from './redis.js';

/** Options of {@link RedisApprovalStore}. */
export interface RedisApprovalStoreOptions {
  redis: Redis;
  keys: WorkspaceKeys;
  /** How the store is named in errors: the `--cluster` target. */
  target: string;
  /** Servers running now: their decisions outlive a Redis outage. */
  running?: () => Iterable<string>;
}

function parseRecord(text: string): ApprovalRecord | undefined {
  try {
    const r: unknown = JSON.parse(text);
    if (!isPlainObject(r) || typeof r.hash !== 'string' || (r.decision !== 'approved' && r.decision !== 'rejected') || typeof r.at !== 'string') return undefined;
    return { hash: r.hash, decision: r.decision, at: r.at };
  } catch {
    return undefined;
  }
}

/**
 * The {@link ApprovalStore} of one clustered workspace. The root argument is
 * ignored: the workspace id names the workspace across machines.
 */
export class RedisApprovalStore implements ApprovalStore {
  private lastGood: Record<string, ApprovalRecord> = {};
  running: () => Iterable<string>;

  constructor(private readonly options: RedisApprovalStoreOptions) {
    this.running = options.running ?? (() => []);
  }

  async load(): Promise<{ decisions: Record<string, ApprovalRecord>; error?: McpReconcilerError }> {
    let raw: Record<string, string>;
    try {
      raw = await this.options.redis.hGetAll(this.options.keys.approvals);
    } catch (err) {
      const kept: Record<string, ApprovalRecord> = {};
      for (const name of this.running()) {
        const r = Object.hasOwn(this.lastGood, name) ? this.lastGood[name] : undefined;
        if (r) setOwn(kept, name, r);
      }
      return {
        decisions: kept,
        error: new McpReconcilerError(
          ErrorCode.ApprovalStore,
          `the cluster's approvals in Redis (${this.options.target}) cannot be read: ${describeError(err)}; every gated server that is not running stays pending approval until Redis answers`,
          { hint: `bring Redis at ${this.options.target} back; running servers keep answering meanwhile`, details: { file: `redis ${this.options.target}`, reason: 'unreachable' }, cause: err },
        ),
      };
    }
    const decisions: Record<string, ApprovalRecord> = {};
    for (const [server, text] of Object.entries(raw)) {
      const r = parseRecord(text);
      if (r) setOwn(decisions, server, r);
    }
    this.lastGood = decisions;
    return { decisions: { ...decisions } };
  }

  /** The decision for `server` as last read (what is in force on this replica). */
  stored(server: string): ApprovalRecord | undefined {
    return Object.hasOwn(this.lastGood, server) ? this.lastGood[server] : undefined;
  }

  async set(_root: string, server: string, record: ApprovalRecord): Promise<void> {
    const { redis, keys, target } = this.options;
    try {
      await redis.hSet(keys.approvals, server, JSON.stringify({ hash: record.hash, decision: record.decision, at: record.at }));
      await redis.publish(keys.approvalsChanged, server);
    } catch (err) {
      throw new McpReconcilerError(ErrorCode.ApprovalStore, `Not saving the decision for "${server}": Redis at ${target} did not take it (${describeError(err)}).`, {
        hint: `bring Redis at ${target} back, then decide again`,
        details: { server },
        cause: err,
      });
    }
  }
}
