/**
 * Per-URI resource updates on the 2026-07-28 lane (SPEC §13, §15): that
 * revision has no `resources/subscribe`; a client names the URIs it wants to
 * hear about in its `subscriptions/listen` filter (`resourceSubscriptions`),
 * and the SDK delivers `notifications/resources/updated` for exactly those
 * URIs on that stream. The SDK does not tell the gateway which URIs are
 * listened to, so the lane reads them off the listen requests and holds one
 * subscription at the managed server per URI while any stream wants it.
 */
import type { McpController } from '../controller/controller.js';
import { describeError } from '../errors.js';
import type { SessionScope } from './scope.js';

/** The URIs a `subscriptions/listen` request asks updates of; [] for any other message. */
export function listenedResources(message: unknown): string[] {
  if (typeof message !== 'object' || message === null) return [];
  const { method, params } = message as { method?: unknown; params?: { notifications?: { resourceSubscriptions?: unknown } } };
  if (method !== 'subscriptions/listen') return [];
  const uris = params?.notifications?.resourceSubscriptions;
  return Array.isArray(uris) ? [...new Set(uris.filter((u): u is string => typeof u === 'string' && u.length > 0))] : [];
}

/** Options of {@link ListenedResources}. */
export interface ListenedResourcesOptions {
  scope: SessionScope;
  timeoutMs: number;
  /** Settles once the lane's servers have started (their resources are listed). */
  ready(): Promise<void>;
  /** Where an update goes: the lane's listen streams (the SDK filters by URI). */
  updated(uri: string): void;
  /** A subscription the managed server refused, for the log. */
  onError?(message: string): void;
}

/** One lane's resource subscriptions at the managed servers, counted by the listen streams that want them. */
export class ListenedResources {
  private readonly wanted = new Map<string, { count: number; off: Promise<(() => Promise<void>) | undefined> }>();
  private closed = false;

  constructor(
    private readonly controller: McpController,
    private readonly options: ListenedResourcesOptions,
  ) {}

  /** Hold subscriptions to `uris` until the returned function is called (idempotent). */
  watch(uris: readonly string[]): () => void {
    if (this.closed || uris.length === 0) return () => undefined;
    for (const uri of uris) {
      const held = this.wanted.get(uri);
      if (held) held.count++;
      else this.wanted.set(uri, { count: 1, off: this.subscribe(uri) });
    }
    let done = false;
    return () => {
      if (done) return;
      done = true;
      for (const uri of uris) this.release(uri);
    };
  }

  private async subscribe(uri: string): Promise<(() => Promise<void>) | undefined> {
    const servers = this.options.scope === undefined ? undefined : [...this.options.scope];
    const onUpdated = (update: { uri: string }): void => {
      this.options.updated(update.uri);
      // The listen filter matches URIs exactly: a change below the listened URI is told as that URI's too.
      if (update.uri !== uri) this.options.updated(uri);
    };
    try {
      await this.options.ready();
      return await this.controller.subscribeResource(uri, onUpdated, { ...(servers ? { servers } : {}), timeoutMs: this.options.timeoutMs });
    } catch (err) {
      this.options.onError?.(`subscribing to ${uri} for a 2026-07-28 listen stream: ${describeError(err)}`);
      return undefined;
    }
  }

  private release(uri: string): void {
    const held = this.wanted.get(uri);
    if (!held || --held.count > 0) return;
    this.wanted.delete(uri);
    // Not awaited: a hung server's unsubscribe must not hold anything up.
    void held.off.then((off) => off?.()).catch(() => undefined);
  }

  /** Drop every subscription (the lane closes). */
  close(): void {
    this.closed = true;
    for (const uri of [...this.wanted.keys()]) {
      const held = this.wanted.get(uri)!;
      held.count = 1;
      this.release(uri);
    }
  }
}
