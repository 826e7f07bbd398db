/**
 * The OAuth sign-in of a managed server across replicas (docs/cluster-oauth.md):
 * the browser comes back to `/oauth/callback` on the gateway's public URL,
 * whichever replica the load balancer picks. The replica that started the
 * sign-in keeps what the redemption needs in Redis, sealed and single use
 * (`…:oauth-state:<state>`, 10 minutes); the one the callback reaches takes
 * it (one Lua script: read, delete, mark used), redeems the code, stores the
 * tokens in the shared sealed credential store and tells the starter
 * (`…:oauth-result:<state>` plus a pub/sub nudge), which re-reads them and
 * connects.
 */
import { createHash } from 'node:crypto';
import type { SharedCallback, SignInRecord, SignInRedeemer } from '../auth/shared-callback.js';
import { describeError } from '../errors.js';
import { seal, sealingKey, unseal } from './credentials.js';
import type { Redis, WorkspaceKeys } from './redis.js';

/** The callback's path on the gateway's public origin. */
export const OAUTH_CALLBACK_PATH = '/oauth/callback';

/** How long a started sign-in can be completed (and how long its outcome and its "used" mark are kept). */
export const SIGN_IN_TTL_MS = 10 * 60_000;

/** A `state` this module made keys of: the SDK's are 22 base64url characters. */
const STATE = /^[A-Za-z0-9_-]{16,128}$/;

/** Polling for the outcome, besides the nudge (a message lost while the subscriber reconnected): 250 ms doubling to 5 s. */
const POLL_FIRST_MS = 250;
const POLL_MAX_MS = 5_000;

/**
 * Take a sign-in: its sealed record, deleted at once and marked used; `'used'`
 * when it was taken before (the mark outlives it), nil when unknown or expired.
 */
const TAKE = `
local v = redis.call('GET', KEYS[1])
if v then
  redis.call('DEL', KEYS[1])
  redis.call('SET', KEYS[2], '1', 'PX', ARGV[1])
  return v
end
if redis.call('EXISTS', KEYS[2]) == 1 then return 'used' end
return false`;

/** What a redeeming replica tells the starter. */
interface Outcome {
  ok: boolean;
  error?: string;
}

interface Waiter {
  urlHash: string;
  /** Whose sign-in it is (absent: the gateway's): another principal's tokens are not the ones it waits for. */
  principal: string | undefined;
  settle: (outcome: Outcome) => void;
}

/** A sign-in callback of one principal's controller (see {@link RedisSignIns.forPrincipal}). */
export interface PrincipalSignIns extends SharedCallback {
  /** How that controller redeems codes, once it has said so. */
  redeemer(): SignInRedeemer | undefined;
}

/** Options of {@link RedisSignIns}. */
export interface RedisSignInsOptions {
  redis: Redis;
  keys: WorkspaceKeys;
  /** The cluster secret: the records are sealed like the credentials. */
  secret: string;
  /** `--public-url`: the callback is {@link OAUTH_CALLBACK_PATH} beside it. */
  publicUrl: string;
  log: (line: string) => void;
  /** Redis operations, counted. */
  count?: (op: string) => void;
}

/** The redirect URI of a gateway reached at `publicUrl`: `/oauth/callback` beside its MCP path. */
export function callbackUrlOf(publicUrl: string): string {
  return new URL(`.${OAUTH_CALLBACK_PATH}`, publicUrl).href;
}

/** See the module comment. */
export class RedisSignIns implements SharedCallback {
  readonly redirectUrl: string;
  private readonly key: Buffer;
  private readonly waiters = new Map<string, Waiter>();
  private redeem: SignInRedeemer | undefined;
  private principalRedeemer: ((principal: string) => Promise<SignInRedeemer | undefined>) | undefined;
  private subscriber: Redis | undefined;
  private subscribing: Promise<void> | undefined;
  private closed = false;

  constructor(private readonly options: RedisSignInsOptions) {
    this.key = sealingKey(options.secret);
    this.redirectUrl = callbackUrlOf(options.publicUrl);
  }

  setRedeemer(redeem: SignInRedeemer): void {
    this.redeem = redeem;
  }

  /**
   * The callback of `principal`'s own controller (docs/cluster-principals.md):
   * its records carry the principal, so whichever replica redeems the code
   * stores the tokens under that principal's credentials, and only that
   * principal's sign-ins take the news as theirs.
   */
  forPrincipal(principal: string): PrincipalSignIns {
    let redeem: SignInRedeemer | undefined;
    return {
      redirectUrl: this.redirectUrl,
      expect: (record, signal, stored) => this.expect({ ...record, principal }, signal, stored),
      setRedeemer: (fn) => void (redeem = fn),
      redeemer: () => redeem,
    };
  }

  /** How a code of `principal`'s sign-in that reaches this replica is redeemed (its controller here, started for it if need be). */
  setPrincipalRedeemer(find: (principal: string) => Promise<SignInRedeemer | undefined>): void {
    this.principalRedeemer = find;
  }

  async expect(record: SignInRecord, signal: AbortSignal, stored?: () => void): Promise<void> {
    if (!STATE.test(record.state)) throw new Error(`the sign-in's state ${JSON.stringify(record.state)} is not one this gateway can keep`);
    const { redis, keys } = this.options;
    const stateKey = keys.oauthState(record.state);
    await this.subscribe();
    this.options.count?.('SET');
    await redis.set(stateKey, seal(this.key, stateKey, JSON.stringify(record)), { PX: SIGN_IN_TTL_MS });
    stored?.();
    const outcome = await new Promise<Outcome>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      let delay = POLL_FIRST_MS;
      const done = (o: Outcome | Error): void => {
        if (!this.waiters.has(record.state)) return;
        this.waiters.delete(record.state);
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        if (o instanceof Error) reject(o);
        else resolve(o);
      };
      const onAbort = (): void => {
        // Nobody waits for it any more: a late callback is told it expired.
        this.options.count?.('DEL');
        redis.del(stateKey).catch(() => undefined);
        done(signal.reason instanceof Error ? signal.reason : new Error('the sign-in was cancelled'));
      };
      const poll = (): void => {
        timer = setTimeout(() => {
          this.check(record.state).then(
            (o) => (o ? done(o) : poll()),
            () => poll(),
          );
          delay = Math.min(delay * 2, POLL_MAX_MS);
        }, delay);
        timer.unref();
      };
      this.waiters.set(record.state, { urlHash: hashOf(record.serverUrl), principal: record.principal, settle: done });
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      poll();
    });
    if (!outcome.ok) {
      const why = outcome.error ?? 'the sign-in failed on another replica';
      this.options.log(`the sign-in of "${record.server}" started here failed: ${why}; reconnect the server to start a new one`);
      throw new Error(why);
    }
  }

  /**
   * The callback route: `undefined` for other paths, else the page the
   * browser shows (the redemption happens before it is answered).
   */
  route(url: URL): Promise<{ status: number; headers: Record<string, string>; body: string }> | undefined {
    if (url.pathname !== OAUTH_CALLBACK_PATH) return undefined;
    return this.callback(url.searchParams).then(({ status, title, text }) => ({
      status,
      headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' },
      body: page(title, text),
    }));
  }

  /** Stop waiting and leave the subscription. */
  close(): void {
    this.closed = true;
    for (const w of [...this.waiters.values()]) w.settle({ ok: false, error: 'the gateway stopped before the sign-in completed' });
    try {
      this.subscriber?.destroy();
    } catch {
      // already gone
    }
  }

  private async callback(q: URLSearchParams): Promise<{ status: number; title: string; text: string }> {
    const again = 'Start the sign-in again: use the newest sign-in URL the gateway logged for this server (each works once, for 10 minutes), or reconnect the server to get a new one.';
    const state = q.get('state') ?? '';
    if (!STATE.test(state)) {
      return { status: 400, title: 'Sign-in failed', text: `This page was opened without the sign-in's <code>state</code>, so its code was not used. ${again}` };
    }
    const { redis, keys } = this.options;
    const stateKey = keys.oauthState(state);
    let taken: unknown;
    try {
      this.options.count?.('EVAL');
      taken = await redis.eval(TAKE, { keys: [stateKey, `${stateKey}:used`], arguments: [String(SIGN_IN_TTL_MS)] });
    } catch (err) {
      return { status: 503, title: 'Sign-in failed', text: `The gateway cannot reach its Redis (${escapeHtml(describeError(err))}), so the sign-in could not be completed. Try this page again in a moment; if it keeps failing, start the sign-in again.` };
    }
    if (taken === 'used') {
      return { status: 400, title: 'Sign-in link already used', text: `This sign-in was already completed (or refused) once; a redirect is used only once, so its code was not used again. ${again}` };
    }
    if (typeof taken !== 'string') {
      return { status: 400, title: 'Sign-in expired', text: `The gateway knows no sign-in in progress with this <code>state</code>: it expired (a sign-in waits 10 minutes), it was cancelled, or it was not started by this gateway. Its code was not used. ${again}` };
    }
    let record: SignInRecord;
    try {
      record = JSON.parse(unseal(this.key, stateKey, taken)) as SignInRecord;
    } catch {
      return { status: 400, title: 'Sign-in failed', text: `The sign-in record in Redis does not open with this replica's cluster secret (is MCP_RECONCILER_CLUSTER_SECRET the same on every replica?). Its code was not used. ${again}` };
    }
    const server = escapeHtml(record.server);
    const oauthError = q.get('error');
    const code = q.get('code');
    if (oauthError || !code) {
      const what = `${oauthError ?? 'no code in the redirect'}${q.get('error_description') ? `: ${q.get('error_description')}` : ''}`;
      await this.tell(record, { ok: false, error: `the authorization server answered ${what}` });
      return { status: 400, title: 'Authorization failed', text: `The authorization server answered ${escapeHtml(what)} for server "${server}". ${again}` };
    }
    try {
      // A principal's sign-in is redeemed by that principal's controller: its tokens go under its key only.
      const redeem = record.principal === undefined ? this.redeem : await this.principalRedeemer?.(record.principal);
      if (!redeem) throw new Error(record.principal === undefined ? 'this replica redeems no sign-ins (it has no OAuth set up)' : 'this replica redeems no per-principal sign-ins');
      await redeem(record, code, q.get('iss') ?? undefined);
    } catch (err) {
      const message = describeError(err);
      this.options.log(`sign-in of "${record.server}" failed here: ${message}`);
      await this.tell(record, { ok: false, error: message });
      return { status: 400, title: 'Sign-in failed', text: `${escapeHtml(message)}. ${again}` };
    }
    this.options.log(`sign-in of "${record.server}" completed here; its tokens are in the cluster's credential store`);
    await this.tell(record, { ok: true });
    return { status: 200, title: 'Signed in', text: `mcp-reconciler has signed in to server "${server}" ${record.principal === undefined ? 'for the gateway' : 'for you'}. You can close this window.` };
  }

  /** Leave the outcome for the starter to poll, and nudge every replica. */
  private async tell(record: SignInRecord, outcome: Outcome): Promise<void> {
    const { redis, keys } = this.options;
    try {
      this.options.count?.('SET');
      await redis.set(`${keys.oauthState(record.state)}:result`, JSON.stringify(outcome), { PX: SIGN_IN_TTL_MS });
      this.options.count?.('PUBLISH');
      await redis.publish(this.channel(), JSON.stringify({ state: record.state, url: hashOf(record.serverUrl), ...(record.principal !== undefined ? { p: record.principal } : {}), ok: outcome.ok }));
    } catch (err) {
      this.options.log(`telling the other replicas about the sign-in of "${record.server}": ${describeError(err)}`);
    }
  }

  /** The outcome of `state`, when a replica left one. */
  private async check(state: string): Promise<Outcome | undefined> {
    this.options.count?.('GET');
    const raw = await this.options.redis.get(`${this.options.keys.oauthState(state)}:result`);
    if (typeof raw !== 'string') return undefined;
    try {
      return JSON.parse(raw) as Outcome;
    } catch {
      return undefined;
    }
  }

  private channel(): string {
    return this.options.keys.oauthState('signed-in');
  }

  /** One subscriber per replica, opened with the first sign-in it starts. */
  private subscribe(): Promise<void> {
    this.subscribing ??= (async () => {
      const sub = this.options.redis.duplicate();
      sub.on('error', () => undefined); // the main client reports connection problems
      await sub.connect();
      if (this.closed) return void sub.destroy();
      this.subscriber = sub;
      await sub.subscribe(this.channel(), (message) => this.nudged(message));
    })().catch((err: unknown) => {
      // Polling still finds the outcome.
      this.subscribing = undefined;
      this.options.log(`subscribing to sign-in outcomes: ${describeError(err)} (polling instead)`);
    });
    return this.subscribing;
  }

  private nudged(message: string): void {
    let m: { state?: string; url?: string; p?: string; ok?: boolean };
    try {
      m = JSON.parse(message) as typeof m;
    } catch {
      return;
    }
    const own = m.state === undefined ? undefined : this.waiters.get(m.state);
    if (own) {
      // Read the outcome (its error, if any) rather than trust the message.
      this.check(m.state!).then((o) => o && own.settle(o), () => undefined);
      return;
    }
    // Another sign-in of the same server, for the same principal (or both the gateway's), succeeded: the tokens this one waits for are there.
    if (m.ok) for (const w of [...this.waiters.values()]) if (w.urlHash === m.url && w.principal === m.p) w.settle({ ok: true });
  }
}

function hashOf(url: string): string {
  return createHash('sha256').update(url).digest('hex').slice(0, 32);
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function page(title: string, text: string): string {
  return `<!doctype html><meta charset="utf-8"><title>${title}</title><body style="font-family:system-ui;margin:3em"><h1>${title}</h1><p>${text}</p></body>`;
}
