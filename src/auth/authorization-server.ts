/**
 * Which authorization server an MCP server's OAuth may talk to, decided
 * before anything is sent to it:
 *
 * - Authorization-server endpoints must be https, except on loopback
 *   (127.0.0.0/8, ::1, localhost), as the MCP authorization spec and
 *   RFC 8252 §8.3 require. This applies to the authorization server the
 *   MCP server names and to every endpoint its metadata names.
 * - Pre-registered credentials (a `clientSecret` or `privateKey`) go only to
 *   the authorization server pinned by `oauth.issuer`, or, without a pin, to
 *   the origin of the first one they were used with (recorded in the token
 *   store). The MCP server alone must not decide where a secret goes.
 */
import type { ServerOAuthConfig } from '../../machines/types.js';
import { ErrorCode, McpReconcilerError } from '../errors.js';

/** Whether `hostname` (as `URL.hostname` gives it) is a loopback host. */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  if (h === 'localhost' || h === '::1') return true;
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(h.startsWith('::ffff:') ? h.slice(7) : h);
  return v4 !== null && v4[1] === '127' && v4.slice(1).every((n) => Number(n) <= 255);
}

/** The transport rule for authorization-server endpoints: https, or http on a loopback host. */
export function isAllowedAuthorizationEndpoint(url: URL): boolean {
  return url.protocol === 'https:' || (url.protocol === 'http:' && isLoopbackHost(url.hostname));
}

/** An authorization server (or endpoint) OAuth refuses to talk to; nothing was sent to it. */
export class AuthorizationServerRefused extends McpReconcilerError {
  constructor(message: string, hint: string, details: Record<string, unknown>) {
    super(ErrorCode.NeedsAuth, message, { hint, details, permanent: true });
    this.name = 'AuthorizationServerRefused';
  }
}

/**
 * Refuse `raw` (the authorization server, or `what` names the metadata field
 * it came from) unless it is https or loopback http.
 */
export function requireSecureEndpoint(server: string, raw: string, what: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new AuthorizationServerRefused(
      `Server "${server}": the ${what} ${JSON.stringify(raw)} is not a URL; OAuth was not started`,
      "The MCP server's OAuth metadata is broken; tell its operator.",
      { server, url: raw },
    );
  }
  if (!isAllowedAuthorizationEndpoint(url)) {
    throw new AuthorizationServerRefused(
      `Server "${server}": refusing the ${what} ${url.href}: authorization-server endpoints must use https (plain http only on loopback: 127.0.0.0/8, ::1, localhost). Nothing was sent to it`,
      'Ask the operator of the MCP server to serve its authorization server over https; plain http exposes codes, tokens and client secrets on the network.',
      { server, url: url.href },
    );
  }
  return url;
}

/** Whether the config holds credentials that must not be shown to an authorization server it did not choose. */
export function hasClientSecret(config: ServerOAuthConfig | undefined): boolean {
  return !!config?.clientId && (!!config.clientSecret || !!config.privateKey);
}

/** Two issuer URLs name the same authorization server (parsed, one trailing `/` tolerated). */
export function sameIssuer(a: string, b: string): boolean {
  const norm = (s: string): string => {
    try {
      return new URL(s).href.replace(/\/$/, '');
    } catch {
      return s.replace(/\/$/, '');
    }
  };
  return norm(a) === norm(b);
}

function originOf(s: string): string {
  try {
    return new URL(s).origin;
  } catch {
    return s;
  }
}

/**
 * Refuse `named` (the authorization server the MCP server names) when the
 * config pins another one with `oauth.issuer`, or when pre-registered
 * credentials were first used on another origin (`recorded`).
 */
export function requireBoundIssuer(server: string, named: string, config: ServerOAuthConfig | undefined, recorded: string | undefined): void {
  const pinned = config?.issuer;
  if (pinned !== undefined) {
    if (sameIssuer(pinned, named)) return;
    throw new AuthorizationServerRefused(
      `Server "${server}" names the authorization server ${named}, but its config pins "oauth.issuer": ${pinned}. Nothing was sent to ${named}`,
      `If the server really moved, set "oauth.issuer" to ${named} in its config (check with its operator first); otherwise the MCP server is pointing you elsewhere.`,
      { server, authorizationServer: named, issuer: pinned },
    );
  }
  if (recorded === undefined || !hasClientSecret(config) || originOf(recorded) === originOf(named)) return;
  throw new AuthorizationServerRefused(
    `Server "${server}" names the authorization server ${named}, but its pre-registered client credentials were first used with ${recorded} (recorded in the token store) and are sent only there. Nothing was sent to ${named}`,
    `If the server really moved, set "oauth.issuer": "${named}" in its config, or run \`mcp-reconciler logout ${server}\` to forget the recorded authorization server and sign in again.`,
    { server, authorizationServer: named, recorded },
  );
}
