/**
 * The host's resource subscriptions (SPEC §13), kept per server across
 * connections. A server gets one `resources/subscribe` per URI however many
 * listeners share it, and every new connection of the server gets them all
 * again, so a subscriber keeps hearing `notifications/resources/updated`
 * through reconnects, idle stops and restarts. A subscription ends only when
 * its last listener unsubscribes.
 */
import { describeError } from '../errors.js';
import { notifyAll } from '../util/listeners.js';
import type { LiveConnection, RequestTimeouts } from './connect.js';

/** A `notifications/resources/updated` as a subscriber hears it. */
export interface ResourceUpdate {
  /** The URI the server named: the subscribed one, or one below it. */
  uri: string;
  server: string;
}

/** Called with every update of a subscribed resource. */
export type ResourceUpdateListener = (update: ResourceUpdate) => void;

/** Options of a {@link ResourceSubscriptions}. */
export interface ResourceSubscriptionsOptions {
  /** The current connection of `server`, if it is connected. */
  connectionOf(server: string): LiveConnection | undefined;
  /** How many URIs of `server` are subscribed changed (the machine keeps a server with subscriptions running). */
  onCount(server: string, count: number): void;
  /** A subscribe or unsubscribe sent on the host's behalf (a re-subscribe, a last unsubscribe) failed. */
  onError(message: string): void;
  /** A listener threw. */
  onListenerError?(error: unknown): void;
}

/** Whether an update of `updated` concerns a subscription to `subscribed`: the same URI or one below it. */
function concerns(subscribed: string, updated: string): boolean {
  if (updated === subscribed) return true;
  return updated.startsWith(subscribed) && (subscribed.endsWith('/') || updated[subscribed.length] === '/');
}

/** Subscriptions by server and URI, each with its listeners. */
export class ResourceSubscriptions {
  private readonly byServer = new Map<string, Map<string, Set<ResourceUpdateListener>>>();
  /** Subscribe requests in flight, so concurrent first listeners of one URI send one. */
  private readonly pending = new Map<string, Promise<void>>();

  constructor(private readonly options: ResourceSubscriptionsOptions) {}

  /**
   * Add `listener` to `uri` of `server`. The first listener of a URI sends
   * `resources/subscribe` on `conn` and waits for the answer (a refusal
   * rejects and adds nothing). Resolves with the unsubscribe function
   * (idempotent); the last one of a URI sends `resources/unsubscribe` to
   * the current connection, if there is one.
   */
  async add(server: string, uri: string, listener: ResourceUpdateListener, conn: LiveConnection, opts: RequestTimeouts = {}): Promise<() => Promise<void>> {
    const key = JSON.stringify([server, uri]);
    const first = !this.byServer.get(server)?.has(uri);
    if (first) {
      let sending = this.pending.get(key);
      if (!sending) {
        sending = conn.subscribeResource(uri, opts);
        this.pending.set(key, sending);
        void sending.catch(() => undefined).finally(() => this.pending.delete(key));
      }
      await sending;
      // A new connection that came up meanwhile was re-subscribed without this URI.
      const current = this.options.connectionOf(server);
      if (current && current !== conn) {
        void current.subscribeResource(uri, opts).catch((err: unknown) => this.options.onError(`subscribing to ${uri} of MCP server "${server}" failed: ${describeError(err)}`));
      }
    }
    let uris = this.byServer.get(server);
    if (!uris) this.byServer.set(server, (uris = new Map()));
    let listeners = uris.get(uri);
    if (!listeners) uris.set(uri, (listeners = new Set()));
    // One entry per subscribe call, even for the same function.
    const entry: ResourceUpdateListener = (update) => listener(update);
    listeners.add(entry);
    this.options.onCount(server, uris.size);
    let done = false;
    return async () => {
      if (done) return;
      done = true;
      await this.remove(server, uri, entry);
    };
  }

  /** How many URIs of `server` have a subscription. */
  countOf(server: string): number {
    return this.byServer.get(server)?.size ?? 0;
  }

  /** The subscribed URIs of `server`. */
  urisOf(server: string): string[] {
    return [...(this.byServer.get(server)?.keys() ?? [])];
  }

  /**
   * Send every subscription of `server` to its new connection `conn`. A URI
   * the server refuses now is reported and kept: the next connection tries
   * again.
   */
  async resubscribe(server: string, conn: LiveConnection, opts: RequestTimeouts = {}): Promise<void> {
    const uris = this.urisOf(server);
    if (uris.length === 0) return;
    if (!conn.canSubscribe) {
      this.options.onError(`MCP server "${server}" no longer declares resources.subscribe: its ${uris.length} resource subscription(s) get no updates from this connection`);
      return;
    }
    await Promise.all(
      uris.map((uri) =>
        conn.subscribeResource(uri, opts).catch((err: unknown) => {
          this.options.onError(`re-subscribing to ${uri} of MCP server "${server}" failed: ${describeError(err)}`);
        }),
      ),
    );
  }

  /** Tell the listeners of `server`'s subscriptions that `uri` changed. */
  updated(server: string, uri: string): void {
    for (const [subscribed, listeners] of this.byServer.get(server) ?? []) {
      if (concerns(subscribed, uri)) notifyAll(listeners, { uri, server }, this.options.onListenerError);
    }
  }

  private async remove(server: string, uri: string, entry: ResourceUpdateListener): Promise<void> {
    const uris = this.byServer.get(server);
    const listeners = uris?.get(uri);
    if (!uris || !listeners?.delete(entry) || listeners.size > 0) return;
    uris.delete(uri);
    if (uris.size === 0) this.byServer.delete(server);
    this.options.onCount(server, uris.size);
    const conn = this.options.connectionOf(server);
    // Without a connection there is nothing to tell: the next one is never subscribed.
    await conn?.unsubscribeResource(uri).catch((err: unknown) => {
      this.options.onError(`unsubscribing from ${uri} of MCP server "${server}" failed: ${describeError(err)}`);
    });
  }
}
