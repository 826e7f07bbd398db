/**
 * Principal authentication of a clustered gateway (docs/cluster.md): the
 * gateway is an OAuth 2.1 resource server. Each request carries an access
 * token (a JWT) from the company's identity provider; it is validated with
 * `jose` against the provider's JWKS (signature, issuer, audience = this
 * gateway's resource URL, expiry), and its `scope` says which servers the
 * principal may use. RFC 9728 metadata tells clients where to get a token.
 */
import type { IncomingMessage } from 'node:http';
import { createRemoteJWKSet, jwtVerify, errors as joseErrors, type JWTPayload } from 'jose';
import type { GatewayPrincipal, GatewayRefusal } from '../gateway/http.js';
import type { SessionScope } from '../gateway/scope.js';
import { describeError } from '../errors.js';
import { principalKey } from './credentials.js';

/** The scope that grants every server. */
export const ALL_SERVERS_SCOPE = 'mcp:servers';
/** The prefix of a scope that grants one server: `mcp:server:<name>`. */
export const SERVER_SCOPE_PREFIX = 'mcp:server:';

/** Options of {@link PrincipalAuth}. */
export interface PrincipalAuthOptions {
  /** The identity provider's issuer identifier (`iss`). */
  issuer: string;
  /** Its JWKS URL. */
  jwksUrl: string;
  /** This gateway's resource identifier (its public MCP URL): the token's `aud` must name it (RFC 8707). */
  resource: string;
}

/** The servers a token's scopes grant: every one for `mcp:servers`, else those named `mcp:server:<name>`. */
export function serversOfScopes(payload: JWTPayload): SessionScope {
  const raw = payload.scope ?? payload.scp;
  const scopes = typeof raw === 'string' ? raw.split(/\s+/).filter(Boolean) : Array.isArray(raw) ? raw.filter((s): s is string => typeof s === 'string') : [];
  if (scopes.includes(ALL_SERVERS_SCOPE)) return undefined;
  return new Set(scopes.filter((s) => s.startsWith(SERVER_SCOPE_PREFIX)).map((s) => s.slice(SERVER_SCOPE_PREFIX.length)).filter(Boolean));
}

function bearerOf(req: IncomingMessage): string | undefined {
  const auth = req.headers.authorization;
  const m = typeof auth === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(auth) : null;
  return m?.[1];
}

/** Validates principals' access tokens and serves the RFC 9728 metadata. */
export class PrincipalAuth {
  private readonly jwks: ReturnType<typeof createRemoteJWKSet>;
  /** Where the metadata lives (RFC 9728 §3.1: the well-known prefix before the resource's path). */
  readonly metadataUrl: string;

  constructor(private readonly options: PrincipalAuthOptions) {
    this.jwks = createRemoteJWKSet(new URL(options.jwksUrl), { cooldownDuration: 30_000, timeoutDuration: 5_000 });
    const r = new URL(options.resource);
    this.metadataUrl = `${r.origin}/.well-known/oauth-protected-resource${r.pathname === '/' ? '' : r.pathname}`;
  }

  /** The protected resource metadata document (RFC 9728 §2). */
  metadata(): Record<string, unknown> {
    return {
      resource: this.options.resource,
      authorization_servers: [this.options.issuer],
      bearer_methods_supported: ['header'],
      scopes_supported: [ALL_SERVERS_SCOPE, `${SERVER_SCOPE_PREFIX}<name>`],
      resource_name: 'mcp-reconciler gateway',
    };
  }

  /** Answer the metadata path (with or without the resource's path); `undefined` for any other. */
  route(url: URL): { status: number; headers?: Record<string, string>; body: string } | undefined {
    const path = new URL(this.metadataUrl).pathname;
    if (url.pathname !== path && url.pathname !== '/.well-known/oauth-protected-resource') return undefined;
    return { status: 200, headers: { 'cache-control': 'max-age=3600' }, body: JSON.stringify(this.metadata()) };
  }

  private challenge(status: number, message: string, error?: string): GatewayRefusal {
    const params = [`resource_metadata="${this.metadataUrl}"`, ...(error ? [`error="${error}"`, `error_description="${message.replace(/["\\]/g, '')}"`] : [])];
    return { status, message, headers: { 'www-authenticate': `Bearer ${params.join(', ')}` } };
  }

  /** The principal of `req`, or the 401 to send (RFC 6750 §3, with RFC 9728's `resource_metadata`). */
  async authenticate(req: IncomingMessage): Promise<GatewayPrincipal | GatewayRefusal> {
    const token = bearerOf(req);
    if (!token) return this.challenge(401, `this gateway needs an access token from ${this.options.issuer}: send "Authorization: Bearer <token>" (where to get one: ${this.metadataUrl})`);
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.jwks, { issuer: this.options.issuer, audience: this.options.resource, requiredClaims: ['sub', 'exp'] }));
    } catch (err) {
      const why =
        err instanceof joseErrors.JWTExpired
          ? 'it has expired; get a new one'
          : err instanceof joseErrors.JWTClaimValidationFailed
            ? `its "${err.claim}" claim is wrong (${err.reason}); it must be issued by ${this.options.issuer} for ${this.options.resource}`
            : `it is not valid (${describeError(err)})`;
      return this.challenge(401, `the access token was refused: ${why}`, 'invalid_token');
    }
    const servers = serversOfScopes(payload);
    if (servers !== undefined && servers.size === 0) {
      return this.challenge(403, `the access token of ${payload.sub} grants no server: ask for scope ${ALL_SERVERS_SCOPE} or ${SERVER_SCOPE_PREFIX}<name>`, 'insufficient_scope');
    }
    return { principal: payload.sub!, id: principalKey(this.options.issuer, payload.sub!), servers };
  }
}
