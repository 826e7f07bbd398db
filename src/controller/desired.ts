import deepEqual from 'fast-deep-equal';
import type { DesiredMap, DesiredServer, GatingState, ServerConfig } from '../../machines/types.js';
import { promptableServers } from '../approvals/promptable.js';
import type { ListingCache } from '../cache/listing-cache.js';
import type { ScopedSettings } from '../config/load.js';
import { nameCollisionIssues } from '../config/name-collisions.js';
import type { ConfigReader } from '../config/reader.js';
import { parseServerConfig } from '../config/schema.js';
import type { ConfigIssue } from '../config/sources.js';
import { ErrorCode, McpReconcilerError } from '../errors.js';
import { computeGating, type ComputedGating } from '../gating/compute.js';
import type { Decisions } from './decisions.js';
import type { SafeEmitter } from './emitter.js';
import type { Logger, McpControllerEvents } from './types.js';

/** What the config → machines side needs from the controller. */
export interface DesiredStateDeps {
  reader: ConfigReader;
  decisions: Decisions;
  logger: Logger;
  emitter: SafeEmitter<McpControllerEvents>;
  /** The host's `--allowed-mcp-server-names`. */
  cliBound: readonly string[] | undefined;
  isTrustedFolder: (() => boolean | Promise<boolean>) | undefined;
  /** Send the reconciler a new desired map and gating. */
  sendConfig(desired: DesiredMap, gating: GatingState): void;
  /** The workspace root, canonical once started. */
  root(): string;
  /** The listing cache, once started. */
  cache(): ListingCache | undefined;
  disposing(): boolean;
  /** The config was re-read: tokens another process stored (`mcp-reconciler auth`) count too. */
  reread(): void;
}

/**
 * The config → machines side of the controller (SPEC §3): reads the config
 * files plus the runtime and sdk servers, computes gating, and sends the
 * reconciler the difference, level-based — a reconcile that finds nothing
 * new sends nothing.
 */
export class DesiredState {
  private current: DesiredMap = {};
  private gating: ComputedGating | undefined;
  private readonly runtimeServers: Record<string, ServerConfig> = {};
  private readonly sdkServers: Record<string, ServerConfig> = {};
  private lastSentKey: unknown = undefined;
  private lastIssuesKey = '[]';
  private readonly removedNames = new Set<string>();
  private count = 0;

  constructor(
    private readonly deps: DesiredStateDeps,
    sdkServers: Record<string, unknown> = {},
  ) {
    for (const [name, instance] of Object.entries(sdkServers)) this.sdkServers[name] = { type: 'sdk', instance };
  }

  /** The desired map as last reconciled. */
  get desired(): DesiredMap {
    return this.current;
  }

  /** The gating computed by the last reconcile. */
  get computed(): ComputedGating | undefined {
    return this.gating;
  }

  /** Servers once sent to the machines and no longer configured. */
  get removed(): ReadonlySet<string> {
    return this.removedNames;
  }

  /** How many reconciles sent something to the machines. */
  get reconciles(): number {
    return this.count;
  }

  /** Read every source now: the desired map, per-source settings (merged by computeGating under the reconcile's trust, SPEC §2.3) and issues. */
  async read(): Promise<{ desired: DesiredMap; settings: ScopedSettings[]; issues: ConfigIssue[] }> {
    const { assembled } = await this.deps.reader.read({ runtime: this.runtimeServers, sdk: this.sdkServers });
    return { desired: assembled.desired, settings: assembled.scopedSettings, issues: assembled.issues };
  }

  /** One level-based reconcile: read everything, send the machines the difference. */
  async reconcile(): Promise<void> {
    const { deps } = this;
    if (deps.disposing()) return;
    const read = await this.read();
    const { settings, issues } = read;
    deps.reread();
    const desired = await this.withCacheFlags(read.desired);
    issues.push(...nameCollisionIssues(desired));
    await deps.decisions.refresh(deps.root());
    const trusted = deps.isTrustedFolder ? await deps.isTrustedFolder() : true;
    if (deps.disposing()) return;

    const issuesKey = JSON.stringify(issues);
    if (issuesKey !== this.lastIssuesKey) {
      this.lastIssuesKey = issuesKey;
      if (issues.length > 0) {
        for (const i of issues) deps.logger.warn(`${i.file}${i.line ? `:${i.line}` : ''}: ${i.message}`);
        deps.emitter.emit('config-error', { issues });
      }
    }

    const computed = computeGating(desired, {
      settings,
      ...(deps.cliBound ? { cliAllowedServerNames: deps.cliBound } : {}),
      trusted,
      approvals: deps.decisions.merged(),
    });
    this.current = desired;
    this.gating = computed;
    for (const name of Object.keys(desired)) this.removedNames.delete(name);

    const key = {
      servers: Object.fromEntries(
        Object.entries(desired).map(([n, d]) => [
          n,
          // startup / idleTimeoutMs are outside both hashes (no new approval), so they are compared here.
          { scope: d.scope, source: d.source, hash: d.hash, fingerprint: d.fingerprint, startup: d.config.startup, idleTimeoutMs: d.config.idleTimeoutMs },
        ]),
      ),
      gating: computed.gating,
    };
    if (deepEqual(key, this.lastSentKey)) return;
    for (const name of Object.keys((this.lastSentKey as typeof key | undefined)?.servers ?? {})) {
      if (!(name in desired)) this.removedNames.add(name);
    }
    this.lastSentKey = key;
    deps.sendConfig(desired, computed.gating);
    this.count++;
    deps.emitter.emit('reconciled', { count: this.count, servers: Object.keys(desired) });
    // Strictly pending from the store (never a name diff), and only servers that would
    // otherwise connect: asking about an excluded or disabled server helps no one.
    const promptable = promptableServers(desired, deps.decisions.merged()).filter((n) => computed.verdicts[n] === 'pending_approval');
    if (promptable.length > 0) deps.emitter.emit('pending-approval', { servers: promptable });
  }

  /**
   * Add or replace a server in the `runtime` scope (or `sdk` when `type:
   * 'sdk'`), validated like a config file's entry; throws `config_invalid`
   * and changes nothing when it is not valid. Applies at the next reconcile.
   */
  addRuntimeServer(name: string, config: ServerConfig): void {
    if (typeof name !== 'string' || name.trim() === '') {
      throw new McpReconcilerError(ErrorCode.ConfigInvalid, 'addRuntimeServer needs a non-empty server name', {
        hint: 'pass the name the tools should be registered under, e.g. addRuntimeServer("files", { command: "…" })',
      });
    }
    const isSdk = config !== null && typeof config === 'object' && (config.type === 'sdk' || config.instance !== undefined);
    const valid = parseServerConfig(name, isSdk ? { ...config, type: 'sdk' } : config, { allowSdk: isSdk });
    if (isSdk) this.sdkServers[name] = { ...valid, type: 'sdk', instance: config.instance };
    else this.runtimeServers[name] = valid;
  }

  /** Remove a runtime or sdk server; applies at the next reconcile. */
  removeRuntimeServer(name: string): void {
    delete this.runtimeServers[name];
    delete this.sdkServers[name];
  }

  /** `desired` with `cached: true` on every entry whose fingerprint has a cached listing (read from disk once). */
  private async withCacheFlags(desired: DesiredMap): Promise<DesiredMap> {
    const cache = this.deps.cache();
    if (!cache) return desired;
    await cache.prepare(Object.values(desired).map((d) => d.fingerprint));
    const out: Record<string, DesiredServer> = {};
    for (const [name, d] of Object.entries(desired)) out[name] = cache.has(d.fingerprint) ? { ...d, cached: true } : d;
    return out;
  }
}
