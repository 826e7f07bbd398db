import { stateNameOf } from '../../machines/reason.js';
import type { DesiredServer } from '../../machines/types.js';
import type { FetchLike } from '@modelcontextprotocol/client';
import { hasUserAuthorization, isServerOAuth } from '../auth/applies.js';
import type { OAuthManager } from '../auth/manager.js';
import { getOwn } from '../util/own.js';
import { ErrorCode, McpReconcilerError } from '../errors.js';
import { defaultTokenStorePath, FileTokenStore, type TokenStore } from '../auth/token-store.js';
import type { ServerStateName } from './types.js';
import type { Workspace } from './workspace.js';

/**
 * The controller's side of OAuth (docs/oauth.md): the token manager, and waking
 * servers in `needs_auth` when tokens arrive — from an authorization this
 * process ran, from another process (`mcp-reconciler auth`) writing the token
 * store, or while a connect attempt was still failing with 401.
 */
export class AuthHooks {
  /** Where tokens are kept (its `path` is watched by the controller). */
  readonly store: TokenStore;
  /** Servers that got new tokens since their current connect attempt began. */
  private readonly fresh = new Set<string>();
  private manager: OAuthManager | undefined;
  private loading: Promise<OAuthManager> | undefined;

  constructor(private readonly ws: Workspace) {
    const tokenStore = ws.options.oauth?.tokenStore;
    this.store = typeof tokenStore === 'object' ? tokenStore : new FileTokenStore(tokenStore ?? defaultTokenStorePath(ws.env));
    // A code of a sign-in another replica started, which reached this one (docs/cluster-oauth.md).
    ws.options.oauth?.callback?.setRedeemer(async (record, code, iss) => {
      const entry = getOwn(this.ws.desired, record.server);
      if (!entry) {
        throw new McpReconcilerError(ErrorCode.UnknownServer, `the sign-in is for server "${record.server}", which is not configured on this replica`, {
          hint: 'give every replica the same config, then sign in again',
          details: { server: record.server },
        });
      }
      await (await this.oauth()).redeem(record.server, entry, record, code, iss);
    });
  }

  /**
   * The token manager, loaded on first use: the OAuth code and the SDK's
   * auth module stay unloaded in a workspace without remote servers (docs/performance.md).
   */
  oauth(): Promise<OAuthManager> {
    this.loading ??= import('../auth/manager.js').then(({ OAuthManager }) => {
      const { options, logger } = this.ws;
      const manager = new OAuthManager({
        store: this.store,
        ...(options.onAuthorizationUrl ? { onAuthorizationUrl: options.onAuthorizationUrl } : {}),
        ...(options.onAuthorizationGrant ? { onAuthorizationGrant: options.onAuthorizationGrant } : {}),
        ...(options.oauth?.clientName ? { clientName: options.oauth.clientName } : {}),
        ...(options.oauth?.clientMetadataUrl ? { clientMetadataUrl: options.oauth.clientMetadataUrl } : {}),
        ...(options.oauth?.authorizationTimeoutMs ? { authorizationTimeoutMs: options.oauth.authorizationTimeoutMs } : {}),
        ...(options.oauth?.callback ? { callback: options.oauth.callback } : {}),
        warn: (message) => logger.warn(message),
      });
      manager.onAuthorized((name) => this.tokensArrived(name));
      this.manager = manager;
      return manager;
    });
    return this.loading;
  }

  /**
   * The fetch wrapper that attaches `name`'s tokens and answers its 401s, or
   * undefined when OAuth does not apply to the entry (nothing is loaded then).
   */
  fetchFor(name: string, entry: DesiredServer): ((next: FetchLike) => FetchLike) | undefined {
    if (!isServerOAuth(entry) || hasUserAuthorization(entry)) return undefined;
    return (next) => {
      let wrapped: FetchLike | undefined;
      return async (input, init) => {
        wrapped ??= (await this.oauth()).fetchFor(name, entry)?.(next) ?? next;
        return wrapped(input, init);
      };
    };
  }

  /** Stop the manager's flows and timers, when it was ever loaded. */
  dispose(): void {
    this.manager?.dispose();
  }

  /** A connect attempt of `name` begins: tokens that arrive from here on are news to it. */
  connectStarted(name: string): void {
    this.fresh.delete(name);
  }

  /** `name` entered `state`: tokens that came in while its attempt was still failing with 401 are used now. */
  onState(name: string, state: ServerStateName): void {
    if (state === 'needs_auth' && this.fresh.has(name)) queueMicrotask(() => this.ws.actor.send({ type: 'AUTHENTICATED', name }));
  }

  /** After the token store changed: servers in needs_auth whose URL now has tokens try again. */
  async pickUpStoredTokens(): Promise<void> {
    for (const [name, ref] of this.ws.servers()) {
      if (stateNameOf(ref.getSnapshot()) !== 'needs_auth') continue;
      const entry = getOwn(this.ws.desired, name);
      const manager = await this.oauth();
      if (!entry || !(await manager.hasTokens(entry).catch(() => false))) continue;
      // What this process holds of the server's sign-in is older than the store (a sign-in it still waits
      // for included, whose URL is moot now): the connect reads the stored tokens afresh.
      manager.forget(name);
      this.tokensArrived(name);
    }
  }

  /** New tokens for `name`: a server waiting in needs_auth connects with them. */
  private tokensArrived(name: string): void {
    if (this.ws.disposing) return;
    this.fresh.add(name);
    if (this.ws.running()) this.ws.actor.send({ type: 'AUTHENTICATED', name });
  }
}
