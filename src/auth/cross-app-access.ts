/**
 * Cross-app access (SEP-990, "Enterprise-Managed Authorization"): the user
 * signed in once at the enterprise identity provider (IdP); the client trades
 * that sign-in for an MCP access token without a browser.
 *
 *  1. Token exchange at the IdP (RFC 8693): ID token → Identity Assertion JWT
 *     Authorization Grant (ID-JAG), addressed to the MCP server's
 *     authorization server (`audience`) and the MCP server (`resource`).
 *     {@link requestJwtAuthorizationGrant} does this; the host calls it (or
 *     anything else that yields an ID-JAG) from its `onAuthorizationGrant`
 *     hook, because only the host has the user's ID token.
 *  2. JWT-bearer grant at the authorization server (RFC 7523): the ID-JAG is
 *     the `assertion`, the client authenticates with its pre-registered
 *     credentials. {@link CrossAppAccessProvider} is an `OAuthClientProvider`
 *     whose `prepareTokenRequest` builds that request, so discovery, the
 *     resource indicator, client authentication and the token request itself
 *     are the SDK's `auth()`.
 *
 * SDK 1.32.2 ships no helper for step 1 (its successor's
 * `@modelcontextprotocol/client` has `requestJwtAuthorizationGrant` and a
 * `CrossAppAccessProvider`; the names and options here follow it so the swap
 * is mechanical). Step 1 is one form POST, kept small on purpose.
 *
 * @see https://github.com/modelcontextprotocol/ext-auth/blob/main/specification/draft/enterprise-managed-authorization.mdx
 */
import {
  discoverAuthorizationServerMetadata,
  parseErrorResponse,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
} from '@modelcontextprotocol/client';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/client';
import type { FetchLike } from '@modelcontextprotocol/client';

/** The grant and token types the two steps name: RFC 8693 token exchange, RFC 7523 JWT bearer, SEP-990's ID-JAG. */
const URN = {
  tokenExchangeGrant: 'urn:ietf:params:oauth:grant-type:token-exchange',
  jwtBearerGrant: 'urn:ietf:params:oauth:grant-type:jwt-bearer',
  idJagToken: 'urn:ietf:params:oauth:token-type:id-jag',
  idToken: 'urn:ietf:params:oauth:token-type:id_token',
} as const;

/** What the host gets to produce an ID-JAG for one MCP server. */
export interface AuthorizationGrantContext {
  /** The MCP server's authorization server, as discovered (RFC 9728). */
  authorizationServerUrl: string;
  /** Its issuer identifier: the `audience` of the token exchange. */
  audience: string;
  /** The MCP server's resource identifier: the `resource` of the token exchange. */
  resource: string;
  /** Scopes to ask for (the server config's `oauth.scopes`), if any. */
  scope?: string;
  /** The fetch the connection uses. */
  fetch: FetchLike;
}

/**
 * Host hook for servers with `oauth.grantType: "jwt-bearer"`: return the
 * ID-JAG (a JWT the enterprise IdP signed) for `server`. Typically
 * `requestJwtAuthorizationGrant({ tokenEndpoint, idToken, clientId, ...ctx })`
 * with the ID token of the user's SSO session.
 */
export type AuthorizationGrantHandler = (server: string, context: AuthorizationGrantContext) => string | Promise<string>;

/** Options of {@link requestJwtAuthorizationGrant}. */
export interface RequestJwtAuthorizationGrantOptions {
  /** The IdP's token endpoint. */
  tokenEndpoint: string | URL;
  /** The MCP authorization server's issuer ({@link AuthorizationGrantContext.audience}). */
  audience: string | URL;
  /** The MCP server's resource identifier ({@link AuthorizationGrantContext.resource}). */
  resource: string | URL;
  /** The user's OpenID Connect ID token from the IdP. */
  idToken: string;
  /** This client's id at the IdP. */
  clientId: string;
  /** Its secret at the IdP; omitted for a public client. */
  clientSecret?: string;
  scope?: string;
  fetchFn?: FetchLike;
}

/** A JWT authorization grant issued by the IdP. */
export interface JwtAuthorizationGrant {
  /** The ID-JAG: the `assertion` of the JWT-bearer grant. */
  jwtAuthGrant: string;
  expiresIn?: number;
  scope?: string;
}

/**
 * Step 1: exchange an ID token for an ID-JAG at the IdP (RFC 8693 token
 * exchange with `requested_token_type` id-jag). Throws an `Error` naming the
 * OAuth error code when the IdP refuses (the SDK's `OAuthError` is its
 * `cause`), and when the answer is not an ID-JAG.
 */
export async function requestJwtAuthorizationGrant(options: RequestJwtAuthorizationGrantOptions): Promise<JwtAuthorizationGrant> {
  const params = new URLSearchParams({
    grant_type: URN.tokenExchangeGrant,
    requested_token_type: URN.idJagToken,
    audience: String(options.audience),
    resource: String(options.resource),
    subject_token: options.idToken,
    subject_token_type: URN.idToken,
    client_id: options.clientId,
  });
  // An empty secret makes strict IdPs answer invalid_client for a public client.
  if (options.clientSecret) params.set('client_secret', options.clientSecret);
  if (options.scope) params.set('scope', options.scope);
  const response = await (options.fetchFn ?? fetch)(String(options.tokenEndpoint), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: params.toString(),
  });
  if (!response.ok) {
    const refusal = await parseErrorResponse(response);
    throw new Error(`the identity provider refused the token exchange (HTTP ${response.status}): ${refusal.code}${refusal.message ? ` — ${refusal.message}` : ''}`, {
      cause: refusal,
    });
  }
  const body = (await response.json().catch(() => undefined)) as Record<string, unknown> | undefined;
  if (typeof body?.access_token !== 'string' || body.access_token === '') {
    throw new Error('the identity provider answered the token exchange without an access_token');
  }
  if (body.issued_token_type !== URN.idJagToken) {
    throw new Error(`the identity provider issued a ${String(body.issued_token_type ?? 'token of no stated type')}, not an ID-JAG (${URN.idJagToken})`);
  }
  return {
    jwtAuthGrant: body.access_token,
    ...(typeof body.expires_in === 'number' ? { expiresIn: body.expires_in } : {}),
    ...(typeof body.scope === 'string' ? { scope: body.scope } : {}),
  };
}

/** {@link requestJwtAuthorizationGrant} with the IdP's token endpoint discovered from its issuer URL (RFC 8414 / OpenID). */
export async function discoverAndRequestJwtAuthorizationGrant(
  options: Omit<RequestJwtAuthorizationGrantOptions, 'tokenEndpoint'> & { idpUrl: string | URL },
): Promise<JwtAuthorizationGrant> {
  const { idpUrl, ...rest } = options;
  const metadata = await discoverAuthorizationServerMetadata(idpUrl, rest.fetchFn ? { fetchFn: rest.fetchFn } : {});
  if (!metadata?.token_endpoint) throw new Error(`no token endpoint found in the metadata of the identity provider ${String(idpUrl)}`);
  return requestJwtAuthorizationGrant({ ...rest, tokenEndpoint: metadata.token_endpoint });
}

/** Options of {@link CrossAppAccessProvider}. */
export interface CrossAppAccessProviderOptions {
  /** The MCP server URL (the resource when its metadata names none). */
  serverUrl: string;
  /** This client's pre-registered id at the MCP authorization server. */
  clientId: string;
  /** Its secret (SEP-990 authenticates the grant with `client_secret_basic`). */
  clientSecret?: string;
  tokenEndpointAuthMethod?: 'client_secret_basic' | 'client_secret_post' | 'none';
  scope?: string;
  clientName: string;
  /** Produces the ID-JAG (step 1). */
  assertion: (context: AuthorizationGrantContext) => string | Promise<string>;
  fetchFn?: FetchLike;
}

/**
 * Step 2 as an `OAuthClientProvider` for the SDK's `auth()`: non-interactive
 * (no redirect URL), pre-registered client, and a token request of grant type
 * jwt-bearer whose assertion comes from {@link CrossAppAccessProviderOptions.assertion}.
 * Tokens live in memory: getting a new one needs no user.
 */
export class CrossAppAccessProvider implements OAuthClientProvider {
  private tokenSet: OAuthTokens | undefined;
  private discovery: OAuthDiscoveryState | undefined;

  constructor(private readonly opts: CrossAppAccessProviderOptions) {}

  get redirectUrl(): undefined {
    return undefined;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.opts.clientName,
      redirect_uris: [],
      grant_types: [URN.jwtBearerGrant],
      token_endpoint_auth_method: this.authMethod,
      ...(this.opts.scope ? { scope: this.opts.scope } : {}),
    };
  }

  clientInformation(): OAuthClientInformationMixed {
    return {
      client_id: this.opts.clientId,
      ...(this.opts.clientSecret ? { client_secret: this.opts.clientSecret } : {}),
      token_endpoint_auth_method: this.authMethod,
    } as OAuthClientInformationMixed;
  }

  tokens(): OAuthTokens | undefined {
    return this.tokenSet;
  }

  saveTokens(tokens: OAuthTokens): void {
    this.tokenSet = tokens;
  }

  redirectToAuthorization(): void {
    throw new Error('the jwt-bearer grant has no browser step');
  }

  saveCodeVerifier(): void {
    // no PKCE in a jwt-bearer grant
  }

  codeVerifier(): string {
    throw new Error('the jwt-bearer grant uses no PKCE code verifier');
  }

  invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): void {
    if (scope === 'all' || scope === 'tokens') this.tokenSet = undefined;
    if (scope === 'all' || scope === 'discovery') this.discovery = undefined;
  }

  saveDiscoveryState(state: OAuthDiscoveryState): void {
    this.discovery = state;
  }

  discoveryState(): OAuthDiscoveryState | undefined {
    return this.discovery;
  }

  /** `auth()` calls this after discovery (so the audience and resource are known) and sends the result with client authentication and `resource`. */
  async prepareTokenRequest(scope?: string): Promise<URLSearchParams> {
    const found = this.discovery;
    if (!found) throw new Error('the MCP authorization server has not been discovered yet');
    const authorizationServerUrl = String(found.authorizationServerUrl);
    const assertion = await this.opts.assertion({
      authorizationServerUrl,
      audience: found.authorizationServerMetadata?.issuer ?? authorizationServerUrl,
      resource: found.resourceMetadata?.resource ?? this.opts.serverUrl,
      ...(scope ? { scope } : {}),
      fetch: this.opts.fetchFn ?? fetch,
    });
    if (typeof assertion !== 'string' || assertion === '') throw new Error('onAuthorizationGrant returned no ID-JAG');
    const params = new URLSearchParams({ grant_type: URN.jwtBearerGrant, assertion });
    if (scope) params.set('scope', scope);
    return params;
  }

  private get authMethod(): 'client_secret_basic' | 'client_secret_post' | 'none' {
    return this.opts.tokenEndpointAuthMethod ?? (this.opts.clientSecret ? 'client_secret_basic' : 'none');
  }
}
