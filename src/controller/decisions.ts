import { isGated } from '../../machines/admission.js';
import type { ApprovalDecision, DesiredMap, DesiredServer } from '../../machines/types.js';
import { decisionsFor } from '../approvals/hash.js';
import type { ApprovalRecord, ApprovalStore } from '../approvals/store.js';
import type { ConfigIssue } from '../config/sources.js';
import { ErrorCode, McpReconcilerError } from '../errors.js';
import type { SafeEmitter } from './emitter.js';
import type { Logger, McpControllerEvents } from './types.js';
import { getOwn, setOwn } from '../util/own.js';

/**
 * The approval decisions a controller applies (SPEC §4): those in the store,
 * read on every reconcile, and those made for this controller's life only
 * (`approve(…, { persist: false })`), which win while it lives.
 */
export class Decisions {
  /** A Map: names are user data (`__proto__`, `toString`, …). */
  private readonly session = new Map<string, ApprovalDecision>();
  private stored: Record<string, ApprovalRecord> = {};
  private lastStoreError: string | undefined;

  constructor(
    readonly store: ApprovalStore,
    /** Where a store problem is reported: the log and the `config-error` event. */
    private readonly report: { logger: Logger; emitter: SafeEmitter<McpControllerEvents> },
  ) {}

  /** Re-read the store's decisions for `root`; a store problem is reported once per distinct error. */
  async refresh(root: string): Promise<void> {
    const { decisions, error } = await this.store.load(root);
    this.stored = decisions;
    // Not on every reload it persists through.
    const errorKey = error ? error.message : undefined;
    if (errorKey === this.lastStoreError) return;
    this.lastStoreError = errorKey;
    if (error) {
      this.report.logger.error(error.message);
      const issues: ConfigIssue[] = [{ file: this.store.path ?? 'approvals store', message: `${error.message}${error.hint ? ` — ${error.hint}` : ''}` }];
      this.report.emitter.emit('config-error', { issues });
    }
  }

  /**
   * The decision in force per server of `desired`: the session's, else the
   * store's as last read (one stored under an earlier version's hash of the
   * same config included).
   */
  merged(desired: DesiredMap): Record<string, ApprovalDecision> {
    const out = decisionsFor(this.stored, desired);
    // A session approval for the current hash wins over a stored decision for the session's life.
    for (const [name, d] of this.session) setOwn(out, name, d);
    return out;
  }

  /** Approve `entry` for its current hash: in the store, or for this session only. Throws `usage` for a server that is not gated. */
  async approve(root: string, entry: DesiredServer, persist: boolean): Promise<void> {
    if (!isGated(entry)) {
      throw new McpReconcilerError(ErrorCode.Usage, `"${entry.name}" comes from the ${entry.scope} scope and needs no approval`, {
        hint: 'only servers from project and workspace files are gated',
      });
    }
    const decision: ApprovalDecision = { hash: entry.hash, decision: 'approved' };
    if (persist) {
      await this.store.set(root, entry.name, { ...decision, at: new Date().toISOString() });
      this.session.delete(entry.name);
    } else {
      this.session.set(entry.name, decision);
    }
  }

  /** Reject `entry` for its current hash, in the store. Throws `usage` for a server that is not gated. */
  async reject(root: string, entry: DesiredServer): Promise<void> {
    if (!isGated(entry)) {
      throw new McpReconcilerError(ErrorCode.Usage, `"${entry.name}" comes from the ${entry.scope} scope and cannot be rejected`, {
        hint: 'exclude it with `mcp.excluded` in your settings instead',
      });
    }
    this.session.delete(entry.name);
    await this.store.set(root, entry.name, { hash: entry.hash, decision: 'rejected', at: new Date().toISOString() });
  }
}

/** The configured entry of `server`; throws `unknown_server` naming the configured ones. */
export function entryOrThrow(server: string, desired: DesiredMap): DesiredServer {
  const entry = getOwn(desired, server);
  if (!entry) {
    const known = Object.keys(desired);
    throw new McpReconcilerError(ErrorCode.UnknownServer, `no MCP server named "${server}" is configured`, {
      hint: known.length ? `configured servers: ${known.join(', ')}` : 'no servers are configured; check `mcp-reconciler config`',
      details: { server },
    });
  }
  return entry;
}

/**
 * The entry a decision (approve, reject, authenticate, logout) is about. Once
 * started, the reconciled one; before `start()` the config is read for it,
 * but nothing is started: a decision never spawns anything by itself, and the
 * controller applies it when the host starts it.
 */
export async function decisionEntry(
  server: string,
  controller: { started: boolean; desired: DesiredMap; readDesired(): Promise<DesiredMap> },
): Promise<DesiredServer> {
  if (controller.started) return entryOrThrow(server, controller.desired);
  return entryOrThrow(server, await controller.readDesired());
}
