/**
 * The SDK's `OAuthClientProvider` for one MCP server, backed by a
 * {@link TokenStore}. All protocol work (discovery, registration, PKCE,
 * token exchange, refresh) is the SDK's `auth()`; this class only keeps what
 * it hands over and says where the browser should go.
 */
import { randomBytes } from 'node:crypto';
import type { OAuthClientProvider, OAuthDiscoveryState } from '@modelcontextprotocol/client';
import { ClientCredentialsProvider, PrivateKeyJwtProvider } from '@modelcontextprotocol/client';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/client';
import type { ServerOAuthConfig } from '../../machines/types.js';
import type { StoredCredentials, TokenStore } from './token-store.js';

/** Used as `redirect_uri` while no loopback receiver runs (refreshing needs none, but the SDK reads one). */
export const IDLE_REDIRECT = 'http://127.0.0.1/callback';

/** What the interactive flow plugs into a provider. */
export interface RedirectHandler {
  (authorizationUrl: URL, state: string | undefined): void | Promise<void>;
}

/** Options of {@link StoredOAuthProvider}. */
export interface StoredOAuthProviderOptions {
  /** Store key (see `credentialKey`). */
  key: string;
  store: TokenStore;
  config: ServerOAuthConfig | undefined;
  /** `client_name` sent with dynamic registration. */
  clientName: string;
  /** An https URL of a client ID metadata document (SEP-991), used when the server supports it. */
  clientMetadataUrl?: string;
}

function scopeString(scopes: ServerOAuthConfig['scopes']): string | undefined {
  if (scopes === undefined) return undefined;
  const s = Array.isArray(scopes) ? scopes.join(' ') : scopes;
  return s.trim() === '' ? undefined : s;
}

/**
 * Authorization-code provider with a persistent store. The record is read
 * once ({@link load}) and written through on every save, so another process
 * sees new tokens at once.
 */
export class StoredOAuthProvider implements OAuthClientProvider {
  private record: StoredCredentials = {};
  private verifier: string | undefined;
  private redirect: string = IDLE_REDIRECT;
  private onRedirect: RedirectHandler | undefined;
  private lastState: string | undefined;
  private vettedIssuer: string | undefined;

  constructor(private readonly opts: StoredOAuthProviderOptions) {}

  /** Read the stored record; drop it when it belongs to another pre-registered client. */
  async load(): Promise<this> {
    const rec = (await this.opts.store.get(this.opts.key)) ?? {};
    const clientId = this.opts.config?.clientId;
    // Credentials of another client (the config's clientId changed) must not be presented.
    this.record = (rec.configClientId ?? undefined) === (clientId ?? undefined) ? rec : {};
    return this;
  }

  /** The redirect URI the stored registration was made with, if any. */
  get registeredRedirect(): string | undefined {
    return this.record.redirectUri;
  }

  /** The authorization server the pre-registered credentials were first used with, if recorded. */
  get recordedAuthorizationServer(): string | undefined {
    return this.record.authorizationServer;
  }

  /** Record where pre-registered credentials are first sent (kept until logout). */
  async recordAuthorizationServer(url: string): Promise<void> {
    await this.write((r) => ({ ...r, authorizationServer: url }));
  }

  /**
   * The authorization server checked for this `auth()` call: pre-registered
   * client information is stamped with it, so the SDK presents it there and
   * nowhere else.
   */
  bindIssuer(url: string): void {
    this.vettedIssuer = url;
  }

  /** Whether `auth()` can get a token without a user: a refresh token is stored. */
  get canRefresh(): boolean {
    return typeof this.record.tokens?.refresh_token === 'string';
  }

  /**
   * This provider for an `auth()` call that may only refresh: it never
   * reaches the browser step, and a rejected registration stops the call
   * instead of registering again with a redirect URI nobody serves (the
   * interactive flow registers with its own).
   */
  refreshOnly(): OAuthClientProvider {
    return new Proxy(this, {
      get: (target, prop) => {
        if (prop === 'redirectToAuthorization') return async (): Promise<void> => {};
        if (prop === 'invalidateCredentials') {
          return async (scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): Promise<void> => {
            if (scope === 'all' || scope === 'client') throw new Error('the authorization server rejected the client registration; sign in again');
            await target.invalidateCredentials(scope);
          };
        }
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
  }

  /** Use `url` as the redirect URI and `handler` for the browser step, until {@link endInteractive}. */
  beginInteractive(url: string, handler: RedirectHandler): void {
    this.redirect = url;
    this.onRedirect = handler;
  }

  /**
   * Redeem a code of a sign-in another process started (docs/cluster-oauth.md):
   * its redirect URI, PKCE verifier and, for a dynamic registration, the
   * client the code was issued to (stored with the tokens, since a refresh
   * must present the same client). Undo with {@link endInteractive}.
   */
  resume(redirectUrl: string, verifier: string, clientInformation: OAuthClientInformationMixed | undefined): void {
    this.redirect = redirectUrl;
    this.verifier = verifier;
    if (clientInformation && !this.opts.config?.clientId) this.record = { ...this.record, clientInformation, redirectUri: redirectUrl };
  }

  /** The dynamic client registration in use (`undefined` for a pre-registered client: that one is in the config). */
  get dynamicRegistration(): OAuthClientInformationMixed | undefined {
    return this.opts.config?.clientId ? undefined : this.record.clientInformation;
  }

  endInteractive(): void {
    this.redirect = this.record.redirectUri ?? IDLE_REDIRECT;
    this.onRedirect = undefined;
  }

  /** Forget a dynamic registration (its redirect URI can no longer be served). Pre-registered clients stay. */
  async dropRegistration(): Promise<void> {
    if (this.opts.config?.clientId) return;
    const dropped = this.record.clientInformation?.client_id;
    const without = (r: StoredCredentials): StoredCredentials => ({ ...r, clientInformation: undefined, redirectUri: undefined });
    this.record = without(this.record);
    // Applied to what the store holds now, and only while it still holds this registration: a sign-in
    // elsewhere (a terminal, another replica) may have stored a registration and tokens of its own meanwhile.
    await this.opts.store.update(this.opts.key, (current) => (current && current.clientInformation?.client_id === dropped ? without(current) : current));
  }

  get redirectUrl(): string {
    return this.redirect;
  }

  get clientMetadataUrl(): string | undefined {
    return this.opts.config?.clientId ? undefined : this.opts.clientMetadataUrl;
  }

  get clientMetadata(): OAuthClientMetadata {
    const cfg = this.opts.config;
    const scope = scopeString(cfg?.scopes);
    return {
      client_name: this.opts.clientName,
      redirect_uris: [this.redirect],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: cfg?.tokenEndpointAuthMethod ?? (cfg?.clientSecret ? 'client_secret_basic' : 'none'),
      ...(scope ? { scope } : {}),
    };
  }

  state(): string {
    this.lastState = randomBytes(16).toString('base64url');
    return this.lastState;
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    const cfg = this.opts.config;
    if (cfg?.clientId) {
      const stored = this.record.clientInformation;
      return {
        client_id: cfg.clientId,
        ...(cfg.clientSecret !== undefined ? { client_secret: cfg.clientSecret } : {}),
        ...(cfg.tokenEndpointAuthMethod ? { token_endpoint_auth_method: cfg.tokenEndpointAuthMethod } : {}),
        // Bound to the authorization server checked before this auth() call, else to the one the SDK stamped.
        ...(this.vettedIssuer ? { issuer: this.vettedIssuer } : stored?.client_id === cfg.clientId && stored.issuer ? { issuer: stored.issuer } : {}),
      } as OAuthClientInformationMixed;
    }
    return this.record.clientInformation;
  }

  async saveClientInformation(info: OAuthClientInformationMixed): Promise<void> {
    const cfg = this.opts.config;
    // A pre-registered secret stays in the config, never in the store.
    const stored = cfg?.clientId ? ({ client_id: info.client_id, ...(info.issuer ? { issuer: info.issuer } : {}) } as OAuthClientInformationMixed) : info;
    await this.write((r) => ({ ...r, clientInformation: stored, ...(cfg?.clientId ? {} : { redirectUri: this.redirect }) }));
  }

  tokens(): OAuthTokens | undefined {
    return this.record.tokens;
  }

  async saveTokens(tokens: OAuthTokens): Promise<void> {
    await this.write((r) => ({ ...r, tokens, tokensSavedAt: Date.now() }));
  }

  async redirectToAuthorization(authorizationUrl: URL): Promise<void> {
    // Without an interactive flow there is nobody to send the user to: the caller reports needs_auth.
    await this.onRedirect?.(authorizationUrl, this.lastState ?? authorizationUrl.searchParams.get('state') ?? undefined);
  }

  saveCodeVerifier(codeVerifier: string): void {
    this.verifier = codeVerifier;
  }

  codeVerifier(): string {
    if (!this.verifier) throw new Error('no PKCE code verifier: the authorization was started by another process; start it again');
    return this.verifier;
  }

  async invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): Promise<void> {
    if (scope === 'verifier') {
      this.verifier = undefined;
      return;
    }
    await this.write((r) => {
      const next = { ...r };
      if (scope === 'all' || scope === 'tokens') {
        delete next.tokens;
        delete next.tokensSavedAt;
      }
      if (scope === 'all' || scope === 'client') {
        delete next.clientInformation;
        delete next.redirectUri;
      }
      if (scope === 'all' || scope === 'discovery') delete next.discovery;
      return next;
    });
  }

  async saveDiscoveryState(state: OAuthDiscoveryState): Promise<void> {
    await this.write((r) => ({ ...r, discovery: state }));
  }

  discoveryState(): OAuthDiscoveryState | undefined {
    return this.record.discovery;
  }

  private async write(change: (r: StoredCredentials) => StoredCredentials): Promise<void> {
    const clientId = this.opts.config?.clientId;
    this.record = change(this.record);
    const snapshot = { ...this.record, ...(clientId ? { configClientId: clientId } : {}) };
    await this.opts.store.update(this.opts.key, () => snapshot);
  }
}

/**
 * A machine-to-machine provider (client credentials, with a client secret or
 * a private-key JWT) from the config, or `undefined` when the config asks for
 * the authorization-code flow. Its tokens live in memory: getting a new one
 * needs no user. `expectedIssuer` is the authorization server checked for
 * it (the SDK presents the credentials to that one only).
 */
export function clientCredentialsProvider(config: ServerOAuthConfig | undefined, clientName: string, expectedIssuer: string): OAuthClientProvider | undefined {
  if (config?.grantType !== 'client_credentials' || !config.clientId) return undefined;
  const scope = scopeString(config.scopes);
  if (config.tokenEndpointAuthMethod === 'private_key_jwt' || config.privateKey) {
    return new PrivateKeyJwtProvider({
      clientId: config.clientId,
      privateKey: config.privateKey ?? '',
      algorithm: config.signingAlgorithm ?? 'RS256',
      clientName,
      expectedIssuer,
      ...(scope ? { scope } : {}),
    });
  }
  return new ClientCredentialsProvider({ clientId: config.clientId, clientSecret: config.clientSecret ?? '', clientName, expectedIssuer, ...(scope ? { scope } : {}) });
}
