/**
 * Singleton servers of a clustered gateway (docs/cluster.md): a server
 * marked `singleton: true` runs on one replica at a time, the one holding
 * its Redis lease ({@link ServerLease}, with a fencing token). The holder
 * renews the lease every third of its TTL; every other replica keeps the
 * server `dormant` (its tools listed from the listing cache's second level)
 * and forwards its calls to the holder's announced URL, as the calling
 * principal. A replica that needs the server takes the lease once it is free
 * (the holder released it, or died and it expired) and starts it.
 *
 * Fencing: the holder trusts its lease only until the TTL after its last
 * renewal that got through. When a renewal is refused (another replica holds
 * a newer token) or that time passes first, the replica stops the server
 * before anything else and no call runs there under the old token.
 */
import { createActor, type ActorRefFrom } from 'xstate';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { leaseMachine, leaseViewOf, type LeaseView } from '../../machines/lease.machine.js';
import type { McpController } from '../controller/controller.js';
import type { PlacedCall, ServerPlacement } from '../gateway/pool.js';
import { FORWARDED_BY_HEADER } from '../gateway/session-core.js';
import { describeError } from '../errors.js';
import { ServerLease, type LeaseHolder } from './lease.js';
import { liveReplicas } from './replicas.js';
import type { Redis, WorkspaceKeys } from './redis.js';

/** Default lease time; `MCP_RECONCILER_LEASE_MS` changes it (the same on every replica). */
export const DEFAULT_LEASE_MS = 15_000;


/** `_meta` key of a refusal by a replica that does not hold the lease (the forwarder looks again). */
const NOT_HOLDER_META = 'mcp-reconciler/not-holder';

/** Options of {@link Singletons}. */
export interface SingletonsOptions {
  redis: Redis;
  keys: WorkspaceKeys;
  /** This replica's id (the one it announces). */
  replica: string;
  ttlMs: number;
  log: (line: string) => void;
}

/** What one singleton's lease is, here. */
interface Entry {
  lease: ServerLease;
  actor: ActorRefFrom<typeof leaseMachine>;
  /** Our token while we hold it. */
  token: number | undefined;
  /** Local clock (ms) until which our lease is certainly ours: the TTL after the start of the last renewal that got through. */
  heldUntil: number;
  expiry: NodeJS.Timeout | undefined;
  busy: Promise<void> | undefined;
}

const textResult = (text: string, meta?: Record<string, unknown>): CallToolResult => ({ content: [{ type: 'text', text }], isError: true, ...(meta ? { _meta: meta } : {}) });

/** The singleton servers of one replica; see the module comment. */
export class Singletons implements ServerPlacement {
  private readonly entries = new Map<string, Entry>();
  private controller: McpController | undefined;
  private demand: (server: string) => boolean = () => false;
  private changed: (server: string) => void = () => undefined;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly options: SingletonsOptions) {}

  /**
   * Follow `controller`'s singleton servers; `demand` says whether a session
   * here needs a server, `changed` is told when one may now run here or must
   * not any more.
   */
  attach(controller: McpController, demand: (server: string) => boolean, changed: (server: string) => void): void {
    this.controller = controller;
    this.demand = demand;
    this.changed = changed;
    this.timer = setInterval(() => void this.tick(), Math.max(100, Math.floor(this.options.ttlMs / 3))).unref();
  }

  /** Whether `server` is marked `singleton: true` in the config now. */
  isSingleton(server: string): boolean {
    const d = this.controller?.config().desired;
    return d !== undefined && Object.hasOwn(d, server) && d[server]!.config.singleton === true;
  }

  private entry(server: string): Entry {
    let e = this.entries.get(server);
    if (!e) {
      const actor = createActor(leaseMachine, { input: { server } });
      actor.start();
      e = { lease: new ServerLease(this.options.redis, this.options.keys, server, this.options.replica, this.options.ttlMs), actor, token: undefined, heldUntil: 0, expiry: undefined, busy: undefined };
      this.entries.set(server, e);
    }
    return e;
  }

  /** Where `server` runs, seen from here (the lease machine's projection); `undefined` for a server that is no singleton. */
  view(server: string): LeaseView | undefined {
    if (!this.isSingleton(server)) return undefined;
    return leaseViewOf(this.entry(server).actor.getSnapshot());
  }

  /** Every singleton's view, for the replica's announcement and `status --cluster`. */
  views(): Record<string, LeaseView> {
    const out: Record<string, LeaseView> = {};
    for (const name of this.entries.keys()) if (this.isSingleton(name)) out[name] = leaseViewOf(this.entries.get(name)!.actor.getSnapshot());
    return out;
  }

  /** {@link ServerPlacement.local}: a singleton runs here only under a lease that is certainly ours now. */
  local(server: string): boolean {
    if (!this.isSingleton(server)) return true;
    const e = this.entry(server);
    return e.token !== undefined && Date.now() < e.heldUntil;
  }

  /** Try to take the leases of the singletons among `servers` (the pool's gate, before it holds them). */
  async acquire(servers: Iterable<string>): Promise<void> {
    await Promise.all([...servers].filter((s) => this.isSingleton(s)).map((s) => this.settle(s)));
  }

  /** One step for `server`, serialised: renew ours, or take a free one we need, or learn who holds it. */
  private settle(server: string): Promise<void> {
    const e = this.entry(server);
    e.busy ??= this.step(server, e).finally(() => (e.busy = undefined));
    return e.busy;
  }

  private async step(server: string, e: Entry): Promise<void> {
    if (this.closed) return;
    const started = Date.now();
    try {
      if (e.token !== undefined) {
        if (started >= e.heldUntil) return this.lost(server, e, 'it expired before a renewal got through');
        if (!(await e.lease.renew(e.token))) return this.lost(server, e, 'another replica holds it now');
        this.extend(server, e, started);
        // Nobody here needs it and it is not running: let another replica that needs it take it.
        if (!this.demand(server) && !this.running(server)) {
          const token = e.token;
          e.token = undefined;
          clearTimeout(e.expiry);
          await e.lease.release(token);
          e.actor.send({ type: 'RELEASED' });
          this.options.log(`singleton "${server}": lease released (token ${token}), nobody here uses it`);
        }
        return;
      }
      const r = await e.lease.acquire();
      if (r.held) {
        e.token = r.token;
        this.extend(server, e, started);
        e.actor.send({ type: 'ACQUIRED', token: r.token });
        this.options.log(`singleton "${server}": this replica holds the lease (token ${r.token}); it runs here`);
        this.changed(server);
        return;
      }
      await this.elsewhere(server, e, r.holder);
    } catch (err) {
      if (e.token !== undefined && Date.now() >= e.heldUntil) return this.lost(server, e, `Redis did not answer (${describeError(err)})`);
      if (e.token === undefined) e.actor.send({ type: 'UNREACHABLE', error: describeError(err) });
    }
  }

  private async elsewhere(server: string, e: Entry, holder: LeaseHolder | undefined): Promise<void> {
    if (!holder) return void e.actor.send({ type: 'FREE' });
    const before = leaseViewOf(e.actor.getSnapshot());
    const url = (await liveReplicas(this.options.redis, this.options.keys).catch(() => [])).find((r) => r.id === holder.replica)?.url;
    e.actor.send({ type: 'HELD_ELSEWHERE', replica: holder.replica, token: holder.token, ...(url ? { url } : {}) });
    // Listed nowhere here yet (this replica admitted it before any replica had listed it): re-read, the second level has it by now.
    const row = this.controller?.status().find((r) => r.name === server);
    if (row && row.tools.length === 0) await this.controller?.reload().catch(() => undefined);
    if (before.placement !== 'remote' || before.token !== holder.token) this.options.log(`singleton "${server}": runs on replica ${holder.replica} (singleton lease, token ${holder.token})`);
  }

  private extend(server: string, e: Entry, from: number): void {
    e.heldUntil = from + this.options.ttlMs;
    clearTimeout(e.expiry);
    // Fencing by the clock: a renewal that never got through ends the lease here when it ends in Redis.
    e.expiry = setTimeout(() => {
      if (e.token !== undefined && Date.now() >= e.heldUntil) this.lost(server, e, 'it expired before a renewal got through');
    }, this.options.ttlMs + 1).unref();
  }

  /** Our lease is gone: stop the server here first, then say so. */
  private lost(server: string, e: Entry, why: string): void {
    const token = e.token;
    e.token = undefined;
    clearTimeout(e.expiry);
    this.controller?.park(server);
    e.actor.send({ type: 'LOST' });
    this.options.log(`singleton "${server}": lease lost (token ${token}: ${why}); stopped it here`);
    this.changed(server);
  }

  private running(server: string): boolean {
    const row = this.controller?.status().find((r) => r.name === server);
    return row !== undefined && (row.state === 'connected' || row.state === 'connecting' || row.state === 'reconnecting');
  }

  private async tick(): Promise<void> {
    if (this.closed || !this.controller) return;
    for (const server of Object.keys(this.controller.config().desired)) {
      if (!this.isSingleton(server)) continue;
      const e = this.entry(server);
      if (e.token !== undefined || this.demand(server)) void this.settle(server);
    }
  }

  /**
   * {@link ServerPlacement.call}: forward a call of `server`'s tool to the
   * holder, as the calling principal. `undefined` when the lease became ours
   * meanwhile (the caller calls here). A call that was itself forwarded is
   * never forwarded again.
   */
  async call(server: string, call: PlacedCall): Promise<CallToolResult | undefined> {
    const deadline = Date.now() + 2 * this.options.ttlMs + 30_000;
    let refused = '';
    for (;;) {
      if (this.local(server)) return undefined;
      if (call.forwardedBy !== undefined) {
        const v = this.view(server);
        return textResult(`Tool ${call.name} is not served by this replica: ${v && 'reason' in v ? v.reason : 'it does not hold the singleton lease'}. Try the call again.`, { [NOT_HOLDER_META]: true });
      }
      await this.settle(server);
      if (this.local(server)) return undefined;
      const v = this.view(server)!;
      if (v.placement === 'remote' && v.url) {
        try {
          const result = await this.forward(v.url, server, call);
          if (!(result._meta && result._meta[NOT_HOLDER_META] === true)) return result;
          refused = 'the replica it was sent to no longer holds the lease';
        } catch (err) {
          if (call.signal.aborted) throw err;
          refused = `replica ${v.replica} at ${v.url} did not answer (${describeError(err)})`;
        }
      } else {
        refused = 'reason' in v ? v.reason : 'it runs nowhere yet';
      }
      // The holder is gone or changing: wait for the lease to move (it expires within its TTL), then route again.
      if (Date.now() > deadline || call.signal.aborted) {
        return textResult(`Tool ${call.name} is unavailable: ${refused}. Its server is a singleton that runs on one replica at a time; another replica takes it over once the lease (${this.options.ttlMs} ms) expires. Try again shortly.`);
      }
      await new Promise((r) => setTimeout(r, Math.min(250, this.options.ttlMs / 4)));
    }
  }

  private async forward(url: string, server: string, call: PlacedCall): Promise<CallToolResult> {
    const target = new URL(url);
    target.searchParams.set('servers', server);
    const headers: Record<string, string> = { [FORWARDED_BY_HEADER]: this.options.replica };
    if (call.authorization) headers.authorization = call.authorization;
    const transport = new StreamableHTTPClientTransport(target, { requestInit: { headers } });
    const client = new Client({ name: 'mcp-reconciler-replica', version: '0.1.0' });
    await client.connect(transport);
    try {
      return (await client.callTool({ name: call.name, arguments: call.arguments ?? {} }, undefined, {
        signal: call.signal,
        timeout: call.timeoutMs,
        ...(call.progress ? { onprogress: call.progress, resetTimeoutOnProgress: true } : {}),
      })) as CallToolResult;
    } finally {
      await transport.terminateSession().catch(() => undefined);
      await client.close().catch(() => undefined);
    }
  }

  /** Stop renewing and give up the leases we hold (the servers were stopped before: the controller is disposed first). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    for (const [server, e] of this.entries) {
      clearTimeout(e.expiry);
      const token = e.token;
      e.token = undefined;
      if (token !== undefined) {
        this.controller?.park(server);
        await e.lease.release(token).catch(() => undefined);
      }
      e.actor.stop();
    }
  }
}
