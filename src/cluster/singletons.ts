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
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode as McpErrorCode, McpError, ResourceUpdatedNotificationSchema, type CallToolResult, type GetPromptResult, type ReadResourceResult } from '@modelcontextprotocol/sdk/types.js';
import { leaseMachine, leaseViewOf, type LeaseView } from '../../machines/lease.machine.js';
import type { McpController } from '../controller/controller.js';
import type { PlacedCall, PlacedPrompt, PlacedRead, PlacedRequest, PlacedSubscribe, ServerPlacement } from '../gateway/pool.js';
import { FORWARDED_BY_HEADER } from '../gateway/session-core.js';
import { describeError } from '../errors.js';
import { ServerLease, type LeaseHolder } from './lease.js';
import { replicaAddress } from './replicas.js';
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
  /** The cluster secret's announcement key: only announcements signed with it are forwarded to. */
  announcementKey?: Buffer;
  /** The cluster secret's lease key: our leases are signed, and one that does not verify is taken over (docs/cluster-gaps.md). */
  leaseKey?: Buffer;
  /** Told about an announcement that is not signed with the cluster secret. */
  untrusted?: (replica: string, why: string) => void;
}

/** How long a session to a holder stays open without forwarded requests. */
const LINK_IDLE_MS = 60_000;
/** At most this many sessions to holders at once (one per holder, server and caller); the least recently used goes first. */
const MAX_LINKS = 64;

/** A session to a holder, reused by the forwarded requests of one caller for one server. */
interface Link {
  client: Client;
  transport: StreamableHTTPClientTransport;
  /** Settles once `initialize` is done. */
  ready: Promise<void>;
  idle: NodeJS.Timeout | undefined;
  /** Resource subscriptions held on this session: the listeners by subscribed URI (the session stays open while there are any). */
  updated: Map<string, Set<(uri: string) => void>>;
}

type Send<T> = (client: Client, options: { signal: AbortSignal; timeout: number }, link: Link) => Promise<T>;

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

/** A prompt's or a resource's refusal: a JSON-RPC error, flagged when it is a replica that does not hold the lease. */
const refuse = (text: string, notHolder: boolean): never => {
  throw new McpError(McpErrorCode.InvalidParams, text, notHolder ? { [NOT_HOLDER_META]: true } : undefined);
};

/** Whether an answer (a tool result) or an error (of a prompt or resource) is a non-holder's refusal: route again. */
function isNotHolder(answer: unknown): boolean {
  if (answer instanceof McpError) return isPlainRecord(answer.data) && answer.data[NOT_HOLDER_META] === true;
  return isPlainRecord(answer) && isPlainRecord(answer._meta) && answer._meta[NOT_HOLDER_META] === true;
}

const isPlainRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

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
      e = { lease: new ServerLease(this.options.redis, this.options.keys, server, this.options.replica, this.options.ttlMs, this.options.leaseKey), actor, token: undefined, heldUntil: 0, expiry: undefined, busy: undefined };
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
        if (r.tookOver) this.forged(server, r.tookOver.value, r.tookOver.trust);
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
    // Its signed announcement's address (where other replicas reach it), or none: then nothing is forwarded.
    const untrusted = (why: string): void => this.options.untrusted?.(holder.replica, why);
    const url = await replicaAddress(this.options.redis, this.options.keys, holder.replica, this.options.announcementKey, untrusted).catch(() => undefined);
    e.actor.send({ type: 'HELD_ELSEWHERE', replica: holder.replica, token: holder.token, ...(url ? { url } : {}) });
    // Listed nowhere here yet (this replica admitted it before any replica had listed it): re-read, the second level has it by now.
    const row = this.controller?.status().find((r) => r.name === server);
    if (row && row.tools.length === 0) await this.controller?.reload().catch(() => undefined);
    if (before.placement !== 'remote' || before.token !== holder.token) this.options.log(`singleton "${server}": runs on replica ${holder.replica} (singleton lease, token ${holder.token})`);
  }

  /** Lease values that did not verify, already logged: one line per server and value. */
  private readonly forgedSeen = new Set<string>();

  private forged(server: string, value: string, trust: string): void {
    const seen = `${server}\n${value}`;
    if (this.forgedSeen.has(seen)) return;
    this.forgedSeen.add(seen);
    this.options.log(
      `singleton "${server}": the lease in Redis (${JSON.stringify(value.slice(0, 80))}) is ${trust === 'unsigned' ? 'not signed' : 'not signed with this cluster\'s secret'} ` +
        '(forged, or a replica without $MCP_RECONCILER_CLUSTER_SECRET or with another one): it counts as free, and this replica took it over',
    );
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
  call(server: string, call: PlacedCall): Promise<CallToolResult | undefined> {
    return this.place(server, call, `Tool ${call.name}`, (client, options) =>
      client.callTool({ name: call.name, arguments: call.arguments ?? {} }, undefined, {
        ...options,
        ...(call.progress ? { onprogress: call.progress, resetTimeoutOnProgress: true } : {}),
      }) as Promise<CallToolResult>,
      // A tool's refusal is a result the model reads.
      (text, notHolder) => textResult(text, notHolder ? { [NOT_HOLDER_META]: true } : undefined),
    );
  }

  /** {@link ServerPlacement.getPrompt}: like {@link call}, for `prompts/get` (a refusal is a JSON-RPC error). */
  getPrompt(server: string, request: PlacedPrompt): Promise<GetPromptResult | undefined> {
    return this.place(server, request, `Prompt ${request.name}`, (client, options) => client.getPrompt({ name: request.name, ...(request.arguments ? { arguments: request.arguments } : {}) }, options), refuse);
  }

  /** {@link ServerPlacement.readResource}: like {@link call}, for `resources/read` (a refusal is a JSON-RPC error). */
  readResource(server: string, request: PlacedRead): Promise<ReadResourceResult | undefined> {
    return this.place(server, request, `Resource ${request.uri}`, (client, options) => client.readResource({ uri: request.uri }, options), refuse);
  }

  /**
   * {@link ServerPlacement.subscribe}: subscribe on the caller's session to
   * the holder; its `notifications/resources/updated` go to `request.updated`
   * until the unsubscribe this resolves with (docs/cluster-gaps.md).
   */
  subscribe(server: string, request: PlacedSubscribe): Promise<(() => Promise<void>) | undefined> {
    const { uri } = request;
    return this.place(
      server,
      request,
      `Resource ${uri}`,
      async (client, options, link) => {
        // Listening before the subscribe: an update the holder sends as soon as it subscribed is not lost.
        let listeners = link.updated.get(uri);
        if (!listeners) link.updated.set(uri, (listeners = new Set()));
        const mine = (named: string): void => request.updated(named);
        listeners.add(mine);
        const off = async (): Promise<void> => {
          listeners.delete(mine);
          if (listeners.size > 0 || link.updated.get(uri) !== listeners) return;
          link.updated.delete(uri);
          await client.unsubscribeResource({ uri }, { timeout: request.timeoutMs }).catch(() => undefined);
        };
        try {
          await client.subscribeResource({ uri }, options);
        } catch (err) {
          await off();
          throw err;
        }
        return off;
      },
      refuse,
    );
  }

  /**
   * Send one request of `server` to the holder, as the calling principal,
   * on a session to the holder that the caller's later requests reuse.
   * The holder as this replica last saw it (refreshed every third of the
   * lease time while a session here needs the server) is tried first, so a
   * forwarded request costs no Redis command; a refusal or a holder that
   * does not answer makes it look again.
   */
  private async place<T>(
    server: string,
    request: PlacedRequest,
    label: string,
    send: Send<T>,
    refusal: (text: string, notHolder: boolean) => T,
  ): Promise<T | undefined> {
    const deadline = Date.now() + 2 * this.options.ttlMs + 30_000;
    let refused = '';
    for (let attempt = 0; ; attempt++) {
      if (this.local(server)) return undefined;
      if (request.forwardedBy !== undefined) {
        const v = this.view(server);
        return refusal(`${label} is not served by this replica: ${v && 'reason' in v ? v.reason : 'it does not hold the singleton lease'}. Try again.`, true);
      }
      let v = this.view(server)!;
      if (attempt > 0 || v.placement !== 'remote' || !v.url) {
        await this.settle(server);
        if (this.local(server)) return undefined;
        v = this.view(server)!;
      }
      if (v.placement === 'remote' && v.url) {
        try {
          const answer = await this.forward(v.url, server, request, send);
          if (!isNotHolder(answer)) return answer;
          refused = 'the replica it was sent to no longer holds the lease';
        } catch (err) {
          if (request.signal.aborted) throw err;
          if (isNotHolder(err)) refused = 'the replica it was sent to no longer holds the lease';
          // The holder's own answer (invalid params, a timeout of the call, …) goes to the client as it is.
          else if (err instanceof McpError) throw err;
          else refused = `replica ${v.replica} at ${v.url} did not answer (${describeError(err)})`;
        }
      } else {
        refused = 'reason' in v ? v.reason : 'it runs nowhere yet';
      }
      // The holder is gone or changing: wait for the lease to move (it expires within its TTL), then route again.
      if (Date.now() > deadline || request.signal.aborted) {
        return refusal(`${label} is unavailable: ${refused}. Its server is a singleton that runs on one replica at a time; another replica takes it over once the lease (${this.options.ttlMs} ms) expires. Try again shortly.`, false);
      }
      await new Promise((r) => setTimeout(r, Math.min(250, this.options.ttlMs / 4)));
    }
  }

  /** Sessions to holders, by holder URL, server and caller's `Authorization` (a session belongs to its principal). */
  private readonly links = new Map<string, Link>();

  /** `send` on the caller's session to the holder at `url`; a session the holder no longer knows (404) is opened anew once. */
  private async forward<T>(url: string, server: string, request: PlacedRequest, send: Send<T>): Promise<T> {
    const id = `${url}\n${server}\n${request.authorization ?? ''}`;
    for (let fresh = false; ; fresh = true) {
      const existing = this.links.get(id);
      const link = existing ?? this.open(id, url, server, request.authorization);
      if (!existing) fresh = true;
      try {
        await link.ready;
        const answer = await send(link.client, { signal: request.signal, timeout: request.timeoutMs }, link);
        this.touch(id, link);
        return answer;
      } catch (err) {
        // An answer of the holder keeps the session; anything else (refused, reset, 404) ends it.
        if (err instanceof McpError && !(err.code === McpErrorCode.ConnectionClosed)) {
          this.touch(id, link);
          throw err;
        }
        this.drop(id, link);
        // The holder closed our session (its idle timeout, a restart): nothing ran; open another once.
        if (!fresh && err instanceof StreamableHTTPError && err.code === 404) continue;
        throw err;
      }
    }
  }

  private open(id: string, url: string, server: string, authorization: string | undefined): Link {
    while (this.links.size >= MAX_LINKS) {
      // The least recently used session without subscriptions, else the least recently used one.
      const [oldest, link] = [...this.links].find(([, l]) => l.updated.size === 0) ?? (this.links.entries().next().value as [string, Link]);
      this.drop(oldest, link);
    }
    const target = new URL(url);
    target.searchParams.set('servers', server);
    const headers: Record<string, string> = { [FORWARDED_BY_HEADER]: this.options.replica };
    if (authorization) headers.authorization = authorization;
    const transport = new StreamableHTTPClientTransport(target, { requestInit: { headers } });
    const client = new Client({ name: 'mcp-reconciler-replica', version: '0.1.0' });
    const link: Link = { client, transport, ready: client.connect(transport), idle: undefined, updated: new Map() };
    // The holder's updates of what this session subscribed to: the exact URI's listeners, else those of the URIs it lies below.
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
      const named = n.params.uri;
      const exact = link.updated.get(named);
      const targets = exact ? [exact] : [...link.updated].filter(([uri]) => named.startsWith(uri)).map(([, set]) => set);
      for (const set of targets) for (const listener of set) listener(named);
    });
    link.ready.catch(() => undefined);
    this.links.set(id, link);
    this.touch(id, link);
    return link;
  }

  /** Most recently used last, and closed after {@link LINK_IDLE_MS} without use. */
  private touch(id: string, link: Link): void {
    if (this.links.get(id) !== link) return;
    this.links.delete(id);
    this.links.set(id, link);
    clearTimeout(link.idle);
    // A session holding subscriptions stays open while they last.
    link.idle = setTimeout(() => (link.updated.size > 0 ? this.touch(id, link) : this.drop(id, link)), LINK_IDLE_MS).unref();
  }

  private drop(id: string, link: Link): void {
    if (this.links.get(id) === link) this.links.delete(id);
    clearTimeout(link.idle);
    void (async () => {
      await link.ready.catch(() => undefined);
      await link.transport.terminateSession().catch(() => undefined);
      await link.client.close().catch(() => undefined);
    })();
  }

  /** Stop renewing and give up the leases we hold (the servers were stopped before: the controller is disposed first). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    for (const [id, link] of [...this.links]) this.drop(id, link);
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
