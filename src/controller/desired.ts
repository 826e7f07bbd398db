import { sameEntry, type ReconcilerEvent } from '../../machines/reconciler.machine.js';
import type { DesiredMap, DesiredServer, GatingState, ServerConfig } from '../../machines/types.js';
import { promptableServers } from '../approvals/promptable.js';
import type { ScopedSettings } from '../config/load.js';
import { effectiveConfig } from '../config/effective.js';
import { parseServerConfig } from '../config/schema.js';
import type { ConfigIssue } from '../config/sources.js';
import { ErrorCode, McpReconcilerError } from '../errors.js';
import type { ComputedGating } from '../gating/compute.js';
import { serversEqual } from '../config/identity.js';
import { gatingEqual } from '../gating/equality.js';
import type { AuthHooks } from './auth.js';
import type { Workspace } from './workspace.js';
import { getOwn, setOwn } from '../util/own.js';

/** The enable/disable switches and profile laid over what the files say (switches.ts). */
export type DesiredOverlay = (desired: DesiredMap, settings: readonly ScopedSettings[]) => Promise<DesiredMap>;

/** What the reconciler was last sent: its desired map and gating. */
export interface ReconcilerLevels {
  desired: DesiredMap;
  gating: GatingState;
}

/** The configs of a desired map, for `serversEqual`. */
function configsOf(desired: DesiredMap): Record<string, ServerConfig> {
  return Object.fromEntries(Object.entries(desired).map(([name, d]) => [name, d.config]));
}

/**
 * Whether the reconciler would see another desired map: other configs
 * (`serversEqual`, SPEC §2.4), or an entry whose provenance, hashes or
 * start-up settings moved (`sameEntry`, what the reconciler itself compares;
 * an approval is bound to the hash, so it must never go stale).
 */
function desiredChanged(a: DesiredMap, b: DesiredMap): boolean {
  if (!serversEqual(configsOf(a), configsOf(b))) return true;
  return Object.keys(b).some((name) => !Object.hasOwn(a, name) || !sameEntry(a[name]!, b[name]!));
}

/** Names whose approval decision (hash or verdict) differs, sorted. */
function changedApprovals(a: GatingState['approvals'], b: GatingState['approvals']): string[] {
  const names = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...names].filter((n) => getOwn(a, n)?.hash !== getOwn(b, n)?.hash || getOwn(a, n)?.decision !== getOwn(b, n)?.decision).sort();
}

/**
 * The events that take the reconciler from `prev` to `next` (SPEC §3),
 * each naming what changed: `CONFIG` when the desired map changed (it
 * carries the gating too); else `TRUST` when only the folder's trust
 * changed, one `APPROVAL` per name when only decisions changed, `GATING`
 * when the `allowed` / `excluded` lists changed (`gatingEqual`) or several
 * kinds did at once (it carries the whole gating). Nothing when nothing
 * changed; always `CONFIG` when nothing was sent yet. Pure.
 */
export function reconcilerEvents(prev: ReconcilerLevels | undefined, next: ReconcilerLevels): ReconcilerEvent[] {
  if (!prev || desiredChanged(prev.desired, next.desired)) return [{ type: 'CONFIG', desired: next.desired, gating: next.gating }];
  const a = prev.gating;
  const b = next.gating;
  const listsChanged = !gatingEqual({ allowed: a.allowed, excluded: a.excluded }, { allowed: b.allowed, excluded: b.excluded });
  const trustChanged = a.trusted !== b.trusted;
  const decided = changedApprovals(a.approvals, b.approvals);
  const kinds = Number(listsChanged) + Number(trustChanged) + Number(decided.length > 0);
  if (kinds === 0) return [];
  if (kinds > 1 || listsChanged) return [{ type: 'GATING', gating: b }];
  if (trustChanged) return [{ type: 'TRUST', trusted: b.trusted }];
  return decided.map((name) => ({ type: 'APPROVAL', name, decision: getOwn(b.approvals, name) }));
}

/**
 * The config → machines side of the controller (SPEC §3), and the one place
 * that sends to the reconciler: reads the config files plus the runtime and
 * sdk servers, computes gating, and sends the reconciler the difference,
 * level-based, as the event that names it (see {@link reconcilerEvents}) —
 * a reconcile that finds nothing new sends nothing.
 */
export class DesiredState {
  private readonly runtimeServers: Record<string, ServerConfig> = {};
  private readonly sdkServers: Record<string, ServerConfig> = {};
  private lastSent: ReconcilerLevels | undefined;
  private lastIssuesKey = '[]';
  private count = 0;
  /** The host's `--allowed-mcp-server-names`, captured once and immutable. */
  private readonly cliBound: readonly string[] | undefined;

  /**
   * Writes the workspace's `desired`, `gating` and `issues`; `auth` hears
   * of every re-read (tokens another process stored count too).
   */
  constructor(
    private readonly ws: Workspace,
    private readonly auth: AuthHooks,
    /** Switches and profile over the files' desired map (switches.ts); none: the files alone. */
    private readonly overlay?: DesiredOverlay,
  ) {
    const { options } = ws;
    for (const [name, instance] of Object.entries(options.sdkServers ?? {})) setOwn(this.sdkServers, name, { type: 'sdk', instance });
    this.cliBound = options.cliAllowedServerNames ? Object.freeze([...options.cliAllowedServerNames]) : undefined;
  }

  /** How many reconciles sent something to the machines. */
  get reconciles(): number {
    return this.count;
  }

  /** Read every source now: the desired map, per-source settings (merged by computeGating under the reconcile's trust, SPEC §2.3) and issues. */
  async read(): Promise<{ desired: DesiredMap; settings: ScopedSettings[]; issues: ConfigIssue[]; watchPaths: string[] }> {
    const { assembled, watchPaths } = await this.ws.reader.read({ runtime: this.runtimeServers, sdk: this.sdkServers });
    const overlaid = this.overlay ? await this.overlay(assembled.desired, assembled.scopedSettings) : assembled.desired;
    const select = this.ws.options.selectServers;
    const desired = select ? select(overlaid) : overlaid;
    return { desired, settings: assembled.scopedSettings, issues: assembled.issues, watchPaths };
  }

  /** One level-based reconcile: read everything, send the machines the difference. */
  async reconcile(): Promise<void> {
    const evaluated = await this.evaluate();
    if (!evaluated) return;
    const { ws } = this;
    const { desired, computed, approvals } = evaluated;
    const events = reconcilerEvents(this.lastSent, { desired, gating: computed.gating });
    if (events.length === 0) return;
    // Gating events leave the reconciler's desired map as it was: compare the next read with that.
    this.lastSent = { desired: events[0]!.type === 'CONFIG' ? desired : this.lastSent!.desired, gating: computed.gating };
    for (const event of events) ws.actor.send(event);
    this.count++;
    ws.emitter.emit('reconciled', { count: this.count, servers: Object.keys(desired) });
    // Strictly pending from the store (never a name diff), and only servers that would
    // otherwise connect: asking about an excluded or disabled server helps no one.
    const promptable = promptableServers(desired, approvals).filter((n) => getOwn(computed.verdicts, n) === 'pending_approval');
    if (promptable.length > 0) ws.emitter.emit('pending-approval', { servers: promptable });
  }

  /**
   * Read everything and keep the result ({@link desired}, {@link computed},
   * the config issues) without sending the machines anything: a reload
   * before `start()`, which must not connect a server.
   */
  async refresh(): Promise<void> {
    await this.evaluate();
  }

  /** Read every source, report new config issues, compute gating and keep the result; `undefined` once disposing. */
  private async evaluate(): Promise<{ desired: DesiredMap; computed: ComputedGating; approvals: GatingState['approvals'] } | undefined> {
    const { ws } = this;
    if (ws.disposing) return undefined;
    const read = await this.read();
    await this.follow(read.watchPaths);
    void this.auth.pickUpStoredTokens();
    const desired = await this.withCacheFlags(read.desired);
    await ws.decisions.refresh(ws.root);
    const trusted = ws.options.isTrustedFolder ? await ws.options.isTrustedFolder() : true;
    if (ws.disposing) return undefined;
    const approvals = ws.decisions.merged(desired);
    const { issues, gating: computed } = effectiveConfig(
      { desired, settings: read.settings, issues: read.issues },
      { approvals, cliAllowedServerNames: this.cliBound, trusted },
    );

    ws.issues = issues;
    const issuesKey = JSON.stringify(issues);
    if (issuesKey !== this.lastIssuesKey) {
      this.lastIssuesKey = issuesKey;
      if (issues.length > 0) {
        for (const i of issues) ws.logger.warn(`${i.file}${i.line ? `:${i.line}` : ''}: ${i.message}`);
        ws.emitter.emit('config-error', { issues });
      }
    }
    ws.desired = desired;
    ws.gating = computed;
    return { desired, computed, approvals };
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
    if (isSdk) setOwn(this.sdkServers, name, { ...valid, type: 'sdk', instance: config.instance });
    else setOwn(this.runtimeServers, name, valid);
  }

  /** Remove a runtime or sdk server; applies at the next reconcile. */
  removeRuntimeServer(name: string): void {
    delete this.runtimeServers[name];
    delete this.sdkServers[name];
  }

  /**
   * Watch what this read depended on (its files, env files, …) and the
   * stores, so an edit to an env file reloads like a save of the config file
   * itself. Resolves once the watches are in place; a watcher error is left
   * to the watcher's own `onError`.
   */
  private async follow(configPaths: readonly string[]): Promise<void> {
    const { watcher, storePaths } = this.ws;
    if (!watcher) return;
    const next = [...new Set([...configPaths, ...storePaths])];
    if (next.join('\n') === watcher.files().join('\n')) return;
    await watcher.setFiles(next).catch(() => undefined);
  }

  /** `desired` with `cached: true` on every entry whose fingerprint has a cached listing (read from disk once). */
  private async withCacheFlags(desired: DesiredMap): Promise<DesiredMap> {
    const cache = this.ws.cache;
    if (!cache) return desired;
    await cache.prepare(Object.values(desired).map((d) => d.fingerprint));
    const out: Record<string, DesiredServer> = {};
    for (const [name, d] of Object.entries(desired)) setOwn(out, name, cache.has(d.fingerprint) ? { ...d, cached: true } : d);
    return out;
  }
}
