/**
 * OAuth for the remote servers of one controller (docs/oauth.md). Everything that
 * speaks OAuth is the SDK's `auth()` driven through an `OAuthClientProvider`;
 * this file decides *when* to call it and where the browser step goes:
 *
 * - {@link OAuthManager.fetchFor} wraps a server's fetch: the stored bearer
 *   token is attached, and a 401 (or a 403 `insufficient_scope`, step-up)
 *   runs `auth()` — refresh and client credentials need nobody; a new
 *   authorization is started only when the host gave `onAuthorizationUrl`.
 *   When the host's hook has brought the browser back by the time it
 *   settles, the same request is retried with the new token; otherwise the
 *   401 goes through (the server rests in `needs_auth`) and the redirect,
 *   whenever it arrives, completes in the background and fires `authorized`.
 * - {@link OAuthManager.authorize} is the explicit flow (`authenticate()`,
 *   `mcp-reconciler auth`): probe, authorize, wait for the redirect.
 */
import {
  auth,
  computeScopeUnion,
  discoverAuthorizationServerMetadata,
  discoverOAuthProtectedResourceMetadata,
  extractWWWAuthenticateParams,
  isStrictScopeSuperset,
  IssuerMismatchError,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
} from '@modelcontextprotocol/client';
import type { FetchLike } from '@modelcontextprotocol/client';
import { discoverAuthorizationServerMetadata as discoverLegacyAuthorizationServerMetadata } from '@modelcontextprotocol/sdk/client/auth.js';
import type { DesiredServer, ServerOAuthConfig } from '../../machines/types.js';
import { describeError, ErrorCode, McpReconcilerError } from '../errors.js';
import { CrossAppAccessProvider, type AuthorizationGrantHandler } from './cross-app-access.js';
import { startLoopback, type AuthorizationRedirect, type LoopbackReceiver } from './loopback.js';
import { clientCredentialsProvider, StoredOAuthProvider } from './oauth-provider.js';
import { credentialKey, serializeInProcess, type TokenStore } from './token-store.js';
import { hasUserAuthorization, isServerOAuth } from './applies.js';
import { AuthorizationServerRefused, hasClientSecret, requireBoundIssuer, requireSecureEndpoint, sameIssuer } from './authorization-server.js';
import type { SharedCallback, SignInRecord } from './shared-callback.js';

/**
 * Called with the URL the user must open to authorise `server`. Open a
 * browser, print it, or show a button. Return a promise to make the
 * controller wait for it: when the redirect has arrived by the time it
 * settles, the connection goes on at once with the new token.
 */
export type AuthorizationUrlHandler = (server: string, url: URL) => void | Promise<void>;

/** Options of {@link OAuthManager}. */
export interface OAuthManagerOptions {
  store: TokenStore;
  /** Without it, connections never start a new authorization on their own (refresh still works). */
  onAuthorizationUrl?: AuthorizationUrlHandler;
  /** `client_name` for dynamic registration. Default `mcp-reconciler`. */
  clientName?: string;
  /** https URL of a client ID metadata document (SEP-991), used when the authorization server supports it. */
  clientMetadataUrl?: string;
  /** How long a started authorization waits for the browser to come back. Default 5 minutes. */
  authorizationTimeoutMs?: number;
  /** Supplies the ID-JAG of servers with `oauth.grantType: "jwt-bearer"` (cross-app access, SEP-990). */
  onAuthorizationGrant?: AuthorizationGrantHandler;
  /** Warnings (never token values). */
  warn?: (message: string) => void;
  /**
   * Where the browser comes back to when not to a loopback receiver of this
   * process: a callback any process of a group serves (docs/cluster-oauth.md).
   */
  callback?: SharedCallback;
}

/** Options of {@link OAuthManager.authorize}. */
export interface AuthorizeOptions {
  /** Where the URL goes for this flow; default the manager's `onAuthorizationUrl`. */
  onAuthorizationUrl?: AuthorizationUrlHandler;
  signal?: AbortSignal;
  /** Default the manager's `authorizationTimeoutMs`. */
  timeoutMs?: number;
}

const DEFAULT_AUTHORIZATION_TIMEOUT_MS = 5 * 60_000;

/** What a shared callback's wait yields: the code was redeemed elsewhere and the tokens are in the store. */
const REDEEMED = Symbol('redeemed elsewhere');

/** Where the browser comes back to: a loopback receiver, or a shared callback (docs/cluster-oauth.md). */
interface Receiver {
  readonly redirectUrl: string;
  /** As {@link SharedCallback.expect}: `stored` once a redirect with `state` would be taken. */
  expect(state: string, signal: AbortSignal, stored: () => void): Promise<AuthorizationRedirect | typeof REDEEMED>;
  close(): Promise<void>;
}

/** An authorization started for one server and waiting for its redirect. */
interface Flow {
  /** Settles once: tokens saved (true), or failed/abandoned (false). */
  done: Promise<boolean>;
  /** Set synchronously when `done` settles (what a hook's promise is checked against). */
  settled: boolean;
  ok: boolean;
  abort: AbortController;
}

/** What a 401 or 403 asks for: where the metadata is, the scope to request, and whether that scope is wider than the one granted. */
interface Challenge {
  resourceMetadataUrl?: URL | undefined;
  scope?: string | undefined;
  /** A step-up whose scope the granted token lacks: only a new authorization can grant it. */
  widen?: boolean;
}

/** Per-server state kept across generations (the provider carries the PKCE verifier of a flow in progress). */
interface Session {
  key: string;
  provider: StoredOAuthProvider | undefined;
  /** Machine-to-machine provider from the config, in memory, built for the authorization server last checked ({@link machineIssuer}). */
  machine: OAuthClientProvider | undefined;
  /** Builds {@link machine} for a checked authorization server; set for machine-to-machine configs. */
  machineFor: ((issuer: string) => OAuthClientProvider) | undefined;
  machineIssuer: string | undefined;
  flow: Flow | undefined;
  /** The 403 challenge last answered with a step-up, so the same one is not chased twice. */
  lastStepUp: string | undefined;
  /** Why the last authorization failed, for the error a connect or a sign-in ends with. */
  lastError?: string;
  /** What to do about the last failure, when it is not "sign in again" (an explicit sign-in's hint). */
  lastHint?: string | undefined;
}

/** Owns the OAuth state of one controller's servers. Create one per controller. */
export class OAuthManager {
  private readonly sessions = new Map<string, Session>();
  private readonly listeners = new Set<(server: string) => void>();
  private disposed = false;

  constructor(private readonly opts: OAuthManagerOptions) {}

  /** The store in use (its `path` is watched by the controller). */
  get store(): TokenStore {
    return this.opts.store;
  }

  /** Subscribe to "`server` has new tokens"; returns the unsubscribe function. */
  onAuthorized(listener: (server: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * A fetch for `entry`'s transport that carries its OAuth token and answers
   * 401 / 403 `insufficient_scope` through the SDK's `auth()` (see the file
   * comment). `undefined` for servers OAuth does not apply to (stdio, sdk,
   * or a config with its own `Authorization` header).
   */
  fetchFor(name: string, entry: DesiredServer): ((next: FetchLike) => FetchLike) | undefined {
    if (!isServerOAuth(entry) || hasUserAuthorization(entry)) return undefined;
    const serverUrl = entry.config.url!;
    return (next) => async (input, init) => {
      const session = await this.session(name, entry);
      let sent: string | undefined;
      const send = async (): Promise<Response> => {
        const headers = new Headers(init?.headers);
        // Read at each send: a machine grant's provider is created by the first 401's answer.
        const tokens = await (session.machine ?? session.provider)?.tokens();
        sent = tokens?.access_token || undefined;
        if (sent) headers.set('Authorization', `Bearer ${sent}`);
        return next(input, { ...init, headers });
      };
      let response = await send();
      let challenge = this.challengeOf(response, session);
      if (!challenge) return response;
      if (response.status === 401 && (await this.storeHasNewerToken(session, sent))) {
        // Another process sharing the store refreshed while this request was out.
        await response.body?.cancel().catch(() => {});
        response = await send();
        challenge = this.challengeOf(response, session);
        if (!challenge) return response;
      }
      const ok = await this.respond(name, entry, session, serverUrl, challenge, next, this.opts.onAuthorizationUrl, undefined, sent);
      if (!ok) return response;
      await response.body?.cancel().catch(() => {});
      return send();
    };
  }

  /**
   * Run the authorization flow for `entry` now, whatever its state: ask the
   * server for its challenge, authorise through the SDK (refresh when
   * possible, else a new authorization whose URL goes to
   * `onAuthorizationUrl`), wait for the browser to come back and store the
   * tokens. Resolves once tokens are stored; rejects with an
   * `McpReconcilerError` (`needs_auth`) saying what failed.
   */
  async authorize(name: string, entry: DesiredServer, options: AuthorizeOptions = {}): Promise<void> {
    if (!isServerOAuth(entry)) {
      throw new McpReconcilerError(ErrorCode.Usage, `server "${name}" is a ${entry.config.type ?? 'stdio'} server; only http and sse servers use OAuth`, {
        hint: 'pass credentials to a stdio server through its "env" instead',
        details: { server: name },
      });
    }
    if (hasUserAuthorization(entry)) {
      throw new McpReconcilerError(ErrorCode.Usage, `server "${name}" sends its own Authorization header, so OAuth is not used for it`, {
        hint: 'remove the "Authorization" header from its config to sign in with OAuth instead',
        details: { server: name },
      });
    }
    const handler = options.onAuthorizationUrl ?? this.opts.onAuthorizationUrl;
    const session = await this.session(name, entry);
    session.lastHint = undefined;
    const serverUrl = entry.config.url!;
    // The challenge tells where the metadata is and which scope is needed; probe without a token.
    const probe = await fetch(serverUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(entry.config.headers ?? {}) },
      body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'mcp-reconciler-auth-probe', version: '0' } } }),
      signal: options.signal ?? null,
    }).catch((err: unknown) => {
      throw new McpReconcilerError(ErrorCode.ConnectFailed, `could not reach server "${name}" at ${serverUrl}: ${describeError(err)}`, {
        hint: 'check that the server is running and the URL is right',
        details: { server: name },
        cause: err,
      });
    });
    await probe.body?.cancel().catch(() => {});
    const params = probe.status === 401 || probe.status === 403 ? extractWWWAuthenticateParams(probe) : {};
    const ok = await this.respond(name, entry, session, serverUrl, { resourceMetadataUrl: params.resourceMetadataUrl, scope: params.scope }, fetch, handler, {
      wait: true,
      ...(options.signal ? { signal: options.signal } : {}),
      timeoutMs: options.timeoutMs ?? this.opts.authorizationTimeoutMs ?? DEFAULT_AUTHORIZATION_TIMEOUT_MS,
      interactive: true,
    });
    if (!ok) {
      throw new McpReconcilerError(ErrorCode.NeedsAuth, `authorising server "${name}" failed: ${session.lastError ?? 'no token was issued'}`, {
        hint: session.lastHint ?? `run \`mcp-reconciler auth ${name}\` again; check the URL it prints and that the browser reaches 127.0.0.1`,
        details: { server: name },
      });
    }
  }

  /** Forget the stored credentials of `entry`'s URL. Resolves with whether there were any. */
  async logout(entry: DesiredServer): Promise<boolean> {
    if (!entry.config.url) return false;
    const key = credentialKey(entry.config.url);
    const had = (await this.opts.store.get(key)) !== undefined;
    await this.opts.store.update(key, () => undefined);
    for (const [name, s] of this.sessions) {
      if (s.key === key) {
        s.flow?.abort.abort();
        this.sessions.delete(name);
      }
    }
    return had;
  }

  /** Whether tokens are stored for `entry` (for status displays). */
  async hasTokens(entry: DesiredServer): Promise<boolean> {
    if (!entry.config.url) return false;
    return (await this.opts.store.get(credentialKey(entry.config.url)))?.tokens !== undefined;
  }

  /** Drop the in-memory state of `name` (a removed server or a changed config): the next connect reloads from the store. */
  forget(name: string): void {
    const s = this.sessions.get(name);
    s?.flow?.abort.abort();
    this.sessions.delete(name);
  }

  /** Abort flows in progress and close their loopback receivers. */
  dispose(): void {
    this.disposed = true;
    for (const s of this.sessions.values()) s.flow?.abort.abort();
    this.sessions.clear();
    this.listeners.clear();
  }

  // ── internals ──────────────────────────────────────────────────────────

  private async session(name: string, entry: DesiredServer): Promise<Session> {
    const key = credentialKey(entry.config.url!);
    const config = entry.config.oauth;
    let s = this.sessions.get(name) as Session | undefined;
    const signature = JSON.stringify([key, config ?? null]);
    if (s && (s as { signature?: string }).signature === signature) {
      // Another process (`mcp-reconciler auth`) may have stored tokens meanwhile.
      if (s.provider && !s.flow) await s.provider.load();
      return s;
    }
    s?.flow?.abort.abort();
    const clientName = this.opts.clientName ?? 'mcp-reconciler';
    const machineFor = this.machineProviderFactory(name, entry.config.url!, config, clientName);
    const provider = machineFor
      ? undefined
      : await new StoredOAuthProvider({
          key,
          store: this.opts.store,
          config,
          clientName,
          ...(this.opts.clientMetadataUrl ? { clientMetadataUrl: this.opts.clientMetadataUrl } : {}),
        }).load();
    provider?.endInteractive();
    s = Object.assign({ key, provider, machine: undefined, machineFor, machineIssuer: undefined, flow: undefined, lastStepUp: undefined }, { signature });
    this.sessions.set(name, s);
    return s;
  }

  /**
   * How to build the machine-to-machine provider of a config that asks for
   * one (client credentials, or jwt-bearer); `undefined` for the
   * authorization-code flow. It is built once the authorization server is
   * checked, so the SDK is told which one the credentials belong to.
   */
  private machineProviderFactory(
    name: string,
    serverUrl: string,
    config: ServerOAuthConfig | undefined,
    clientName: string,
  ): ((issuer: string) => OAuthClientProvider) | undefined {
    if (config?.grantType === 'client_credentials' && config.clientId) return (issuer) => clientCredentialsProvider(config, clientName, issuer)!;
    if (config?.grantType === 'jwt-bearer') return () => this.crossAppAccessProvider(name, serverUrl, config, clientName)!;
    return undefined;
  }

  /**
   * The jwt-bearer provider (cross-app access, SEP-990) when the config asks
   * for it: the SDK's `auth()` does the grant, the host's
   * `onAuthorizationGrant` supplies the ID-JAG.
   */
  private crossAppAccessProvider(name: string, serverUrl: string, config: ServerOAuthConfig | undefined, clientName: string): OAuthClientProvider | undefined {
    if (config?.grantType !== 'jwt-bearer') return undefined;
    const scopes = config.scopes === undefined ? undefined : Array.isArray(config.scopes) ? config.scopes.join(' ') : config.scopes;
    const method = config.tokenEndpointAuthMethod;
    return new CrossAppAccessProvider({
      serverUrl,
      clientId: config.clientId ?? '',
      ...(config.clientSecret !== undefined ? { clientSecret: config.clientSecret } : {}),
      ...(method && method !== 'private_key_jwt' ? { tokenEndpointAuthMethod: method } : {}),
      ...(scopes?.trim() ? { scope: scopes.trim() } : {}),
      clientName,
      assertion: (context) => {
        if (!config.clientId) throw new Error(`server "${name}" uses grantType "jwt-bearer" but its oauth config has no clientId`);
        const hook = this.opts.onAuthorizationGrant;
        if (!hook) throw new Error(`server "${name}" uses grantType "jwt-bearer" but the host gave no onAuthorizationGrant hook to supply the ID-JAG`);
        return hook(name, context);
      },
    });
  }

  /** The challenge in `response` this manager should answer, if any. */
  private challengeOf(response: Response, session: Session): Challenge | undefined {
    if (response.status === 401) {
      const { resourceMetadataUrl, scope } = extractWWWAuthenticateParams(response);
      return { ...(resourceMetadataUrl ? { resourceMetadataUrl } : {}), ...(scope ? { scope } : {}) };
    }
    if (response.status === 403) {
      const { resourceMetadataUrl, scope, error } = extractWWWAuthenticateParams(response);
      if (error !== 'insufficient_scope') return undefined;
      // Step-up once per distinct challenge: the same answer again means more scope will not help.
      const header = response.headers.get('www-authenticate') ?? '';
      if (session.lastStepUp === header) return undefined;
      session.lastStepUp = header;
      // Ask for the scope already granted as well, so the step-up does not lose it (SEP-2350).
      const granted = session.provider?.tokens()?.scope;
      const wanted = scope ? computeScopeUnion(granted, scope) : undefined;
      // A refresh cannot widen a grant (RFC 6749 §6): a wider scope needs a new authorization.
      const widen = isStrictScopeSuperset(wanted, granted);
      return { ...(resourceMetadataUrl ? { resourceMetadataUrl } : {}), ...(wanted ? { scope: wanted } : {}), ...(widen ? { widen } : {}) };
    }
    return undefined;
  }

  /**
   * Answer a challenge through `auth()`. Resolves true when a token for it
   * is stored now (retry the request), false otherwise.
   */
  private async respond(
    name: string,
    entry: DesiredServer,
    session: Session,
    serverUrl: string,
    challenge: Challenge,
    fetchFn: FetchLike,
    handler: AuthorizationUrlHandler | undefined,
    explicit?: { wait: true; signal?: AbortSignal; timeoutMs: number; interactive: true },
    rejectedToken?: string,
  ): Promise<boolean> {
    const base = {
      serverUrl,
      ...(challenge.resourceMetadataUrl ? { resourceMetadataUrl: challenge.resourceMetadataUrl } : {}),
      ...(challenge.scope ? { scope: challenge.scope } : {}),
      fetchFn,
    };
    if (session.machineFor) {
      try {
        const checked = await this.checkAuthorizationServer(name, entry, session, session.machine, base);
        if (!session.machine || session.machineIssuer !== checked.issuer) {
          session.machine = session.machineFor(checked.issuer);
          session.machineIssuer = checked.issuer;
          await session.machine.saveDiscoveryState?.(checked.discovery);
        }
        const ok = (await auth(session.machine, { ...base, fetchFn: checked.fetchFn })) === 'AUTHORIZED';
        // In-band the caller retries its request; an explicit authorize() must tell the server.
        if (ok && explicit && !this.disposed) for (const l of this.listeners) safe(() => l(name));
        return ok;
      } catch (err) {
        session.lastError = describeError(err);
        // A refusal is the caller's error to show; an explicit sign-in would print it twice.
        if (!(explicit && err instanceof AuthorizationServerRefused)) {
          this.opts.warn?.(`OAuth ${entry.config.oauth?.grantType ?? 'client_credentials'} grant for "${name}" failed: ${session.lastError}`);
        }
        if (err instanceof AuthorizationServerRefused) throw err;
        return false;
      }
    }
    const provider = session.provider!;
    // A flow is already waiting for the browser: do not start a second one.
    if (session.flow && !session.flow.settled) {
      if (!explicit) return false;
      session.flow.abort.abort();
    }
    const interactive = explicit !== undefined || handler !== undefined;
    // Nobody to show a URL to: only a refresh can help.
    if (!interactive && !provider.canRefresh) return false;
    let checked: Awaited<ReturnType<OAuthManager['checkAuthorizationServer']>>;
    try {
      checked = await this.checkAuthorizationServer(name, entry, session, provider, base);
    } catch (err) {
      session.lastError = describeError(err);
      if (!(explicit && err instanceof AuthorizationServerRefused)) this.opts.warn?.(`authorising "${name}" failed: ${session.lastError}`);
      if (err instanceof AuthorizationServerRefused) throw err;
      return false;
    }
    provider.bindIssuer(checked.issuer);
    const guarded = { ...base, fetchFn: checked.fetchFn };
    if (!explicit && provider.canRefresh && !challenge.widen) {
      if (await this.refreshShared(session, provider, guarded, rejectedToken)) return true;
    }
    // Nobody to show a URL to: only a refresh could have helped.
    if (!interactive) return false;
    // A step-up must reach the browser: auth() would otherwise refresh the narrower grant.
    const ok = await this.interactive(name, entry, session, provider, challenge.widen ? { ...guarded, forceReauthorization: true } : guarded, handler, explicit);
    // In-band, a refused authorization response is the server's error to show (status, why), not a bare 401.
    if (!ok && !explicit && session.lastHint !== undefined) {
      throw new McpReconcilerError(ErrorCode.NeedsAuth, `Server "${name}": signing in failed: ${session.lastError}`, { hint: session.lastHint, details: { server: name }, permanent: true });
    }
    return ok;
  }

  /**
   * Before `auth()` sends anything to an authorization server: find the one
   * the MCP server names (the cached discovery, else its protected-resource
   * metadata, else its origin as the SDK does), refuse it unless it is https
   * or loopback and, for pinned or pre-registered credentials, the pinned or
   * recorded one; then fetch its metadata and hold every endpoint it names to
   * the same transport rule. Returns the discovery for the provider's cache
   * and a fetch for `auth()` that reaches only the MCP server and the origins
   * checked here. Throws {@link AuthorizationServerRefused} with nothing sent.
   */
  private async checkAuthorizationServer(
    name: string,
    entry: DesiredServer,
    session: Session,
    provider: OAuthClientProvider | undefined,
    base: { serverUrl: string; resourceMetadataUrl?: URL; fetchFn: FetchLike },
  ): Promise<{ issuer: string; discovery: OAuthDiscoveryState; fetchFn: FetchLike }> {
    const config = entry.config.oauth;
    let cached = await provider?.discoveryState?.();
    let legacy = false;
    let issuer = cached?.authorizationServerUrl;
    let resourceMetadata = cached?.resourceMetadata;
    if (issuer) {
      // The MCP server may have moved to another authorization server (SEP-2352): its
      // metadata is read again, and on a change the registration, tokens and discovery
      // recorded for the old one are dropped so the new one is registered with afresh.
      const current = await discoverOAuthProtectedResourceMetadata(
        base.serverUrl,
        base.resourceMetadataUrl ? { resourceMetadataUrl: base.resourceMetadataUrl } : undefined,
        base.fetchFn,
      ).catch(() => undefined);
      const named = current?.authorization_servers?.[0];
      // The same issuer spelt with or without a trailing slash is no move (RFC 8414 §3.3 compares by the identifier).
      if (named !== undefined && !sameIssuer(named, issuer)) {
        await provider?.invalidateCredentials?.('all');
        cached = undefined;
        issuer = named;
        resourceMetadata = current;
      }
    }
    if (!issuer) {
      try {
        resourceMetadata = await discoverOAuthProtectedResourceMetadata(
          base.serverUrl,
          base.resourceMetadataUrl ? { resourceMetadataUrl: base.resourceMetadataUrl } : undefined,
          base.fetchFn,
        );
        issuer = resourceMetadata.authorization_servers?.[0];
      } catch {
        // No RFC 9728 metadata: the MCP server's origin is the authorization server (the SDK's fallback too).
      }
      // The origin, without a trailing slash: the SDK compares the metadata's issuer with it exactly (RFC 8414 §3.3).
      if (!issuer) {
        issuer = new URL(base.serverUrl).origin;
        legacy = true;
      }
    }
    const origins = new Set([new URL(base.serverUrl).origin, requireSecureEndpoint(name, issuer, 'authorization server').origin]);
    const recorded = await this.recordedAuthorizationServer(session, config);
    requireBoundIssuer(name, issuer, config, recorded);
    // A 2025-03-26 server (no protected-resource metadata) may serve metadata whose issuer is
    // not its origin; that revision allowed it, so SDK v1's unchecked discovery reads it (v2 has no unchecked one).
    const metadata =
      cached?.authorizationServerMetadata ??
      (legacy ? await discoverLegacyAuthorizationServerMetadata(issuer, { fetchFn: base.fetchFn }) : await discoverAuthorizationServerMetadata(issuer, { fetchFn: base.fetchFn }));
    for (const field of ['authorization_endpoint', 'token_endpoint', 'registration_endpoint', 'revocation_endpoint'] as const) {
      const value = (metadata as Record<string, unknown> | undefined)?.[field];
      if (typeof value === 'string') origins.add(requireSecureEndpoint(name, value, `${field} of ${issuer}`).origin);
    }
    if (hasClientSecret(config) && recorded === undefined) await this.recordAuthorizationServer(session, config!, issuer);
    const discovery: OAuthDiscoveryState = {
      authorizationServerUrl: issuer,
      ...(cached?.resourceMetadataUrl ? { resourceMetadataUrl: cached.resourceMetadataUrl } : base.resourceMetadataUrl ? { resourceMetadataUrl: base.resourceMetadataUrl.href } : {}),
      ...(resourceMetadata ? { resourceMetadata } : {}),
      ...(metadata ? { authorizationServerMetadata: metadata } : {}),
    };
    if (!cached?.authorizationServerUrl) await provider?.saveDiscoveryState?.(discovery);
    return { issuer, discovery, fetchFn: onlyTo(name, origins, base.fetchFn) };
  }

  /** Where `config`'s pre-registered credentials were first used, as recorded in the store. */
  private async recordedAuthorizationServer(session: Session, config: ServerOAuthConfig | undefined): Promise<string | undefined> {
    if (!hasClientSecret(config)) return undefined;
    if (session.provider) return session.provider.recordedAuthorizationServer;
    const rec = await this.opts.store.get(session.key);
    return rec?.configClientId === config!.clientId ? rec?.authorizationServer : undefined;
  }

  private async recordAuthorizationServer(session: Session, config: ServerOAuthConfig, issuer: string): Promise<void> {
    if (session.provider) return session.provider.recordAuthorizationServer(issuer);
    // Machine-to-machine tokens live in memory; the record holds only the binding.
    await this.opts.store.update(session.key, (r) => ({ ...(r?.configClientId === config.clientId ? r : {}), configClientId: config.clientId!, authorizationServer: issuer }));
  }

  /**
   * Whether the store now holds an access token other than `rejected` (the
   * one a server just answered 401 to): another process sharing the store
   * refreshed meanwhile.
   */
  private async storeHasNewerToken(session: Session, rejected: string | undefined): Promise<boolean> {
    const provider = session.provider;
    if (!provider || !rejected || session.flow) return false;
    try {
      await provider.load();
    } catch (err) {
      session.lastError = describeError(err);
      return false;
    }
    const current = provider.tokens()?.access_token;
    return current !== undefined && current !== '' && current !== rejected;
  }

  /**
   * Refresh under the store's lock, so that of several processes sharing a
   * rotating refresh token only one spends it: after taking the lock the
   * store is read again, and tokens someone else stored meanwhile are used
   * instead of refreshing (a second use of the old refresh token would be
   * `invalid_grant`, and the SDK would then drop every token).
   */
  private async refreshShared(
    session: Session,
    provider: StoredOAuthProvider,
    base: { serverUrl: string; resourceMetadataUrl?: URL; scope?: string; fetchFn: FetchLike },
    rejected: string | undefined,
  ): Promise<boolean> {
    const store = this.opts.store;
    const refresh = async (): Promise<boolean> => {
      if (await this.storeHasNewerToken(session, rejected)) return true;
      if (!provider.canRefresh) return false;
      return (await auth(provider.refreshOnly(), base)) === 'AUTHORIZED';
    };
    try {
      return await (store.lock ? store.lock(session.key, refresh) : serializeInProcess(store, session.key, refresh));
    } catch (err) {
      session.lastError = describeError(err);
      return false;
    }
  }

  private async interactive(
    name: string,
    entry: DesiredServer,
    session: Session,
    provider: StoredOAuthProvider,
    base: { serverUrl: string; resourceMetadataUrl?: URL; scope?: string; fetchFn: FetchLike; forceReauthorization?: boolean },
    handler: AuthorizationUrlHandler | undefined,
    explicit: { signal?: AbortSignal; timeoutMs: number } | undefined,
  ): Promise<boolean> {
    // An explicit sign-in is awaited by its caller: its receiver and timer keep the process alive
    // (unref'd, a CLI whose only work left is this wait would exit before the browser came back).
    session.lastHint = undefined;
    const receiver: Receiver = this.opts.callback ? await this.sharedReceiver(name, provider, base, this.opts.callback) : loopbackReceiver(await this.listen(entry.config.oauth, provider, explicit !== undefined));
    const abort = new AbortController();
    // Whether the sign-in was given up (its timeout, the caller's signal), rather than made moot
    // by tokens that came from elsewhere (`forget`) or the manager's dispose.
    let gaveUp = false;
    const onOuter = (): void => {
      gaveUp = true;
      abort.abort(explicit?.signal?.reason);
    };
    explicit?.signal?.addEventListener('abort', onOuter, { once: true });
    const timeoutMs = explicit?.timeoutMs ?? this.opts.authorizationTimeoutMs ?? DEFAULT_AUTHORIZATION_TIMEOUT_MS;
    const timer = setTimeout(() => {
      gaveUp = true;
      abort.abort(new Error(`nobody completed the authorization within ${Math.round(timeoutMs / 1000)} s`));
    }, timeoutMs);
    if (!explicit) timer.unref();
    let codePromise: Promise<AuthorizationRedirect | typeof REDEEMED> | undefined;
    /** The browser came back to the redirect URI (with a code, or redeemed elsewhere). */
    let redirected = false;
    let hookDone: Promise<void> = Promise.resolve();
    let markStarted: () => void = () => {};
    const started = new Promise<void>((resolve) => (markStarted = resolve));
    provider.beginInteractive(receiver.redirectUrl, (url, state) => {
      markStarted();
      // The URL goes out only once the redirect would be taken: a shared callback keeps the
      // sign-in in Redis first, and a browser that came back to another replica before that
      // would be told the sign-in expired. A sign-in that fails before then hands out nothing.
      const takeable = new Promise<boolean>((resolve) => {
        codePromise = receiver.expect(state ?? '', abort.signal, () => resolve(true));
        codePromise.then(
          () => (redirected = true),
          () => resolve(false),
        );
      });
      // The hook runs beside the SDK: awaiting it here would hold auth() and its caller.
      hookDone = takeable.then(async (ok) => {
        if (!ok) return;
        if (!handler) {
          this.opts.warn?.(`server "${name}" needs authorization: open ${url.href}`);
          return;
        }
        await Promise.resolve()
          .then(() => handler(name, url))
          .catch((err: unknown) => this.opts.warn?.(`onAuthorizationUrl for "${name}" threw: ${describeError(err)}`));
      });
    });

    const flow: Flow = { done: Promise.resolve(false), settled: false, ok: false, abort };
    session.flow = flow;
    // A dynamic registration from an earlier sign-in, which the authorization server may have
    // dropped since: its sign-in page then shows an error and no redirect ever comes back.
    const reusedRegistration = provider.dynamicRegistration !== undefined;
    const finish = async (): Promise<boolean> => {
      try {
        let result = await auth(provider, base);
        if (result !== 'AUTHORIZED') {
          if (!codePromise) throw new Error('the SDK asked for a redirect but gave no authorization URL');
          const back = await codePromise;
          if (back === REDEEMED) {
            // Another process redeemed the code (docs/cluster-oauth.md): the tokens are in the shared store.
            await provider.load();
            if (!provider.tokens()?.access_token) throw new Error('the sign-in was completed by another replica, but the shared token store holds no token for this server');
            return true;
          }
          // The SDK compares `iss` with the recorded issuer (RFC 9207) before it redeems the code.
          result = await auth(provider, { ...base, authorizationCode: back.code, ...(back.iss !== undefined ? { iss: back.iss } : {}) });
        }
        return result === 'AUTHORIZED';
      } catch (err) {
        const mixUp = issuerMismatch(name, err);
        session.lastError = mixUp?.message ?? describeError(err);
        session.lastHint = mixUp?.hint;
        if (!abort.signal.aborted) this.opts.warn?.(`authorising "${name}" failed: ${session.lastError}`);
        else if (gaveUp && reusedRegistration && codePromise && !redirected) {
          // The browser never came back. We cannot see the page, so the registration is
          // dropped either way: the next sign-in registers anew (docs/oauth.md).
          await provider.dropRegistration().catch(() => {});
          session.lastHint =
            `no redirect came back from the sign-in page. If it showed an error (an unknown client or redirect URI), the authorization server no longer knows ` +
            `this client's registration: it is forgotten now, so \`mcp-reconciler auth ${name}\` registers again`;
        }
        return false;
      } finally {
        clearTimeout(timer);
        explicit?.signal?.removeEventListener('abort', onOuter);
        provider.endInteractive();
        await receiver.close();
      }
    };
    flow.done = finish().then((ok) => {
      flow.settled = true;
      flow.ok = ok;
      if (session.flow === flow) session.flow = undefined;
      if (ok && !this.disposed) for (const l of this.listeners) safe(() => l(name));
      return ok;
    });

    if (explicit) return flow.done;
    // In-band: wait until the SDK reached the browser step (or failed before it) and for
    // the host's hook; if the browser is back by then, retry at once.
    await Promise.race([started, flow.done]);
    await hookDone;
    if (flow.settled) return flow.ok;
    // Give the exchange a chance when the code is already in: it needs no user any more.
    const codeIn = codePromise ? await isSettled(codePromise) : false;
    if (codeIn) return flow.done;
    return false;
  }

  /**
   * The shared callback as this flow's receiver: when the SDK reaches the
   * browser step, what the redemption needs is handed to it, and the wait
   * ends once any process redeemed the code.
   */
  private async sharedReceiver(
    name: string,
    provider: StoredOAuthProvider,
    base: { serverUrl: string; resourceMetadataUrl?: URL; scope?: string },
    callback: SharedCallback,
  ): Promise<Receiver> {
    // A registration made for another redirect URI (a loopback one) cannot be used with the shared callback.
    const registered = provider.registeredRedirect;
    if (registered !== undefined && registered !== callback.redirectUrl) await provider.dropRegistration();
    return {
      redirectUrl: callback.redirectUrl,
      // Called while the SDK redirects: the verifier and the registration are saved by then.
      expect: (state, signal, stored) =>
        Promise.resolve()
          .then(() => {
            const record: SignInRecord = {
              state,
              server: name,
              serverUrl: base.serverUrl,
              verifier: provider.codeVerifier(),
              redirectUrl: callback.redirectUrl,
              ...(base.scope ? { scope: base.scope } : {}),
              ...(base.resourceMetadataUrl ? { resourceMetadataUrl: base.resourceMetadataUrl.href } : {}),
              ...(provider.dynamicRegistration ? { clientInformation: provider.dynamicRegistration } : {}),
            };
            return callback.expect(record, signal, stored);
          })
          .then(() => REDEEMED),
      close: async () => {},
    };
  }

  /**
   * Redeem the code of a sign-in another process started (docs/cluster-oauth.md):
   * the authorization server is checked as for any sign-in, the code goes with
   * the record's verifier and redirect URI, and the tokens go to the store
   * (shared with the process that waits for them). Rejects with a `needs_auth`
   * error saying what failed.
   */
  async redeem(name: string, entry: DesiredServer, record: SignInRecord, code: string, iss: string | undefined): Promise<void> {
    if (entry.config.url !== record.serverUrl) {
      throw new McpReconcilerError(ErrorCode.NeedsAuth, `server "${name}" has the URL ${entry.config.url ?? '(none)'} here, but the sign-in was started for ${record.serverUrl}`, {
        hint: 'give every replica the same config, then sign in again',
        details: { server: name },
      });
    }
    const session = await this.session(name, entry);
    if (session.machineFor) {
      throw new McpReconcilerError(ErrorCode.NeedsAuth, `server "${name}" signs in machine to machine here (oauth.grantType), so it takes no authorization code`, {
        hint: 'give every replica the same config, then sign in again',
        details: { server: name },
      });
    }
    // A provider of its own: a flow this process runs for the server keeps its own verifier.
    const provider = await new StoredOAuthProvider({
      key: session.key,
      store: this.opts.store,
      config: entry.config.oauth,
      clientName: this.opts.clientName ?? 'mcp-reconciler',
      ...(this.opts.clientMetadataUrl ? { clientMetadataUrl: this.opts.clientMetadataUrl } : {}),
    }).load();
    const base = {
      serverUrl: record.serverUrl,
      ...(record.resourceMetadataUrl ? { resourceMetadataUrl: new URL(record.resourceMetadataUrl) } : {}),
      ...(record.scope ? { scope: record.scope } : {}),
      fetchFn: fetch as FetchLike,
    };
    try {
      const checked = await this.checkAuthorizationServer(name, entry, session, provider, base);
      provider.bindIssuer(checked.issuer);
      provider.resume(record.redirectUrl, record.verifier, record.clientInformation);
      // The SDK compares `iss` with the recorded issuer (RFC 9207) before it redeems the code.
      const result = await auth(provider, { ...base, fetchFn: checked.fetchFn, authorizationCode: code, ...(iss !== undefined ? { iss } : {}) });
      if (result !== 'AUTHORIZED') throw new Error('no token was issued');
    } catch (err) {
      const mixUp = issuerMismatch(name, err);
      throw new McpReconcilerError(ErrorCode.NeedsAuth, `signing in to server "${name}" failed: ${mixUp?.message ?? describeError(err)}`, {
        hint: mixUp?.hint ?? 'start the sign-in again and open the new URL the gateway logs for it',
        details: { server: name },
        cause: err,
      });
    } finally {
      provider.endInteractive();
    }
    if (session.provider && !session.flow) await session.provider.load();
    if (!this.disposed) for (const l of this.listeners) safe(() => l(name));
  }

  /** A loopback receiver on the registered redirect's port when there is one, else a fresh port (and a fresh registration). */
  private async listen(config: ServerOAuthConfig | undefined, provider: StoredOAuthProvider, keepAlive: boolean): Promise<LoopbackReceiver> {
    // A registration made for another redirect (a clustered gateway's public callback, docs/cluster-oauth.md)
    // cannot be completed on a loopback receiver: the authorization server would refuse our redirect URI.
    if (config?.callbackPort === undefined && provider.registeredRedirect !== undefined && !isLoopbackRedirect(provider.registeredRedirect)) await provider.dropRegistration();
    const wanted = config?.callbackPort ?? portOf(provider.registeredRedirect);
    if (wanted !== undefined) {
      try {
        return await startLoopback(wanted, { keepAlive });
      } catch (err) {
        if (config?.callbackPort !== undefined) {
          throw new McpReconcilerError(ErrorCode.NeedsAuth, `the OAuth callback port ${wanted} is in use: ${describeError(err)}`, {
            hint: 'free that port or change "oauth.callbackPort" in the server config',
          });
        }
        // The registration names a port we cannot serve: register again with a new one.
        await provider.dropRegistration();
      }
    }
    return startLoopback(0, { keepAlive });
  }
}

/** A loopback listener as a flow's receiver: it is listening already, so a redirect is taken from the start. */
function loopbackReceiver(loopback: LoopbackReceiver): Receiver {
  return {
    redirectUrl: loopback.redirectUrl,
    expect: (state, signal, stored) => {
      const redirect = loopback.expect(state, signal);
      stored();
      return redirect;
    },
    close: () => loopback.close(),
  };
}

/**
 * An authorization response whose `iss` is not the issuer the sign-in was
 * started at (RFC 9207): the SDK refused to redeem its code. Both issuers are
 * named, the received one quoted and cut short (it comes from whoever sent
 * the browser back).
 */
function issuerMismatch(server: string, err: unknown): { message: string; hint: string } | undefined {
  if (!(err instanceof IssuerMismatchError) || err.kind !== 'authorization_response') return undefined;
  const expected = JSON.stringify(err.expected);
  const received = err.received === undefined ? undefined : JSON.stringify(err.received.length > 200 ? `${err.received.slice(0, 200)}…` : err.received);
  return {
    message:
      received === undefined
        ? `the browser came back without the "iss" parameter, which the authorization server ${expected} says it always sends, so its code was not redeemed (RFC 9207: it may come from another authorization server)`
        : `the browser came back from the authorization server ${received} (its "iss"), but this sign-in was started at ${expected}, so its code was not redeemed (RFC 9207 mix-up defence)`,
    hint: `Sign in again with \`mcp-reconciler auth ${server}\` and complete only the sign-in it starts. If this repeats, the sign-in is being answered by another authorization server than ${expected} (a mix-up attack or a misconfigured server): tell the MCP server's operator.`,
  };
}

/** `next`, refusing (before sending) any request outside `origins`. */
function onlyTo(server: string, origins: ReadonlySet<string>, next: FetchLike): FetchLike {
  return async (input, init) => {
    const url = new URL(typeof input === 'string' ? input : input.href);
    if (!origins.has(url.origin)) {
      throw new AuthorizationServerRefused(
        `Server "${server}": OAuth was about to send a request to ${url.origin}, which is neither the MCP server nor the authorization server checked for it. Nothing was sent`,
        `Run \`mcp-reconciler auth ${server}\` again; if this repeats, the MCP server's OAuth metadata changed during the sign-in.`,
        { server, url: url.origin },
      );
    }
    return next(input, init);
  };
}

/** Whether `url` is a redirect a loopback receiver of ours serves (`http://127.0.0.1:<port>/…`). */
function isLoopbackRedirect(url: string): boolean {
  try {
    const u = new URL(url);
    return u.protocol === 'http:' && u.hostname === '127.0.0.1';
  } catch {
    return false;
  }
}

function portOf(url: string | undefined): number | undefined {
  if (!url) return undefined;
  try {
    const p = Number(new URL(url).port);
    return p > 0 ? p : undefined;
  } catch {
    return undefined;
  }
}

function safe(fn: () => void): void {
  try {
    fn();
  } catch {
    // a throwing listener must not break the flow
  }
}

/** Whether `p` has already settled, checked after pending callbacks ran. */
async function isSettled(p: Promise<unknown>): Promise<boolean> {
  const marker = Symbol('pending');
  const r = await Promise.race([p.then(() => true, () => true), new Promise((resolve) => setImmediate(() => resolve(marker)))]);
  return r !== marker;
}
