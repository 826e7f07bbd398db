/**
 * The OAuth redirect of a sign-in that any process of a group may receive
 * (docs/cluster-oauth.md): instead of a loopback receiver of the process that
 * started the sign-in, the browser comes back to a callback URL every
 * process serves. What the code's redemption needs (the PKCE verifier, the
 * client registration, the redirect URI) is kept where every process can
 * read it once; whichever one the browser reaches redeems the code, the
 * tokens go to the shared token store, and the process that started the
 * sign-in is told and re-reads them.
 */
import type { OAuthClientInformationMixed } from '@modelcontextprotocol/client';

/** What any process needs to redeem the code of a sign-in another one started. */
export interface SignInRecord {
  /** The flow's `state` (what the redirect is matched by). */
  state: string;
  /** The server's name in the workspace's config. */
  server: string;
  /** Its URL: the redeeming process checks that its own config names the same one. */
  serverUrl: string;
  /** The PKCE code verifier (RFC 7636). */
  verifier: string;
  /** The redirect URI the authorization request carried (it must be sent again with the code). */
  redirectUrl: string;
  /** The scope asked for, if any. */
  scope?: string;
  /** Where the protected-resource metadata is, when the 401 said so. */
  resourceMetadataUrl?: string;
  /** The dynamic client registration the code was issued to (pre-registered clients come from the config). */
  clientInformation?: OAuthClientInformationMixed;
  /**
   * Whose sign-in it is, for a server signed in per principal
   * (docs/cluster-principals.md): the tokens go to that principal's
   * credentials only. Absent: the gateway's own.
   */
  principal?: string;
}

/** Redeems the code of a sign-in record in this process; rejects saying why it could not. */
export type SignInRedeemer = (record: SignInRecord, code: string, iss: string | undefined) => Promise<void>;

/** See the module comment. */
export interface SharedCallback {
  /** The redirect URI every sign-in registers and sends. */
  readonly redirectUrl: string;
  /**
   * Keep `record` where any process can redeem its code (once, for a limited
   * time). Calls `stored` once it is kept: only from then on can a browser
   * that comes back to any process complete the sign-in, so the sign-in URL
   * is handed out then. Resolves once the tokens are in the shared store
   * (whoever redeemed them); rejects with why the sign-in failed, or when
   * `signal` aborts.
   */
  expect(record: SignInRecord, signal: AbortSignal, stored?: () => void): Promise<void>;
  /** How this process redeems codes that reach it (the controller sets it). */
  setRedeemer(redeem: SignInRedeemer): void;
}
