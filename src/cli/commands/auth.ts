/**
 * `auth SERVER` / `logout SERVER`: OAuth sign-in and sign-out for one remote
 * server of the workspace, from any terminal. Tokens go to the token store
 * (`$MCP_RECONCILER_OAUTH_STORE` or `~/.config/mcp-reconciler/oauth.json`,
 * mode 0600); a running `watch` watches that file and connects a server
 * waiting in `needs_auth` as soon as its tokens appear.
 */
import type { DesiredServer } from '../../../machines/types.js';
import { OAuthManager } from '../../auth/manager.js';
import { defaultTokenStorePath, FileTokenStore } from '../../auth/token-store.js';
import { ErrorCode, McpReconcilerError } from '../../errors.js';
import { parseTimeoutMs, type CliCommand, type CliContext, type CliOption, type CliPositional } from '../command.js';
import { loadWorkspace } from '../workspace.js';

const DEFAULT_WAIT_MS = 5 * 60_000;

async function serverEntry(ctx: CliContext): Promise<DesiredServer> {
  // main checked the count against the declared `positionals`.
  const [server] = ctx.positionals as [string];
  const ws = await loadWorkspace(ctx.global, ctx.io);
  const entry = Object.hasOwn(ws.assembled.desired, server) ? ws.assembled.desired[server] : undefined;
  if (!entry) {
    const known = Object.keys(ws.assembled.desired);
    throw new McpReconcilerError(ErrorCode.UnknownServer, `no MCP server named "${server}" is configured in ${ctx.global.root}`, {
      hint: known.length ? `configured servers: ${known.join(', ')}` : 'check `mcp-reconciler config`',
    });
  }
  return entry;
}

function tokenStore(ctx: CliContext): FileTokenStore {
  const flag = ctx.values['token-store'];
  return new FileTokenStore(typeof flag === 'string' ? flag : defaultTokenStorePath(ctx.io.env));
}

async function authRun(ctx: CliContext): Promise<number> {
  const entry = await serverEntry(ctx);
  const timeoutMs = parseTimeoutMs(ctx.values) ?? DEFAULT_WAIT_MS;
  const store = tokenStore(ctx);
  const manager = new OAuthManager({ store, authorizationTimeoutMs: timeoutMs, warn: (m) => ctx.io.stderr.write(`${m}\n`) });
  try {
    await manager.authorize(entry.name, entry, {
      timeoutMs,
      ...(ctx.io.signal ? { signal: ctx.io.signal } : {}),
      onAuthorizationUrl: (server, url) => {
        if (ctx.global.json) {
          ctx.io.stdout.write(`${JSON.stringify({ server, authorizationUrl: url.href })}\n`);
        } else {
          ctx.io.stdout.write(`Open this URL in a browser to authorise "${server}":\n\n  ${url.href}\n\nWaiting up to ${Math.round(timeoutMs / 1000)} s for the browser to come back…\n`);
        }
      },
    });
  } finally {
    manager.dispose();
  }
  if (ctx.global.json) ctx.io.stdout.write(`${JSON.stringify({ server: entry.name, authorized: true, tokenStore: store.path })}\n`);
  else ctx.io.stdout.write(`Authorised "${entry.name}"; tokens stored in ${store.path}. A running watch connects it now.\n`);
  return 0;
}

async function logoutRun(ctx: CliContext): Promise<number> {
  const entry = await serverEntry(ctx);
  const store = tokenStore(ctx);
  const manager = new OAuthManager({ store });
  const had = await manager.logout(entry);
  manager.dispose();
  if (ctx.global.json) ctx.io.stdout.write(`${JSON.stringify({ server: entry.name, removed: had, tokenStore: store.path })}\n`);
  else ctx.io.stdout.write(had ? `Removed the stored OAuth credentials of "${entry.name}" from ${store.path}.\n` : `No OAuth credentials were stored for "${entry.name}".\n`);
  return 0;
}

const tokenStoreOption: CliOption = {
  type: 'string',
  value: 'FILE',
  help: 'OAuth token store (default: $MCP_RECONCILER_OAUTH_STORE or ~/.config/mcp-reconciler/oauth.json)',
};

const serverArg: CliPositional = { name: 'SERVER', arity: 'required', help: 'a remote (HTTP) server of this workspace' };

/** `auth SERVER`: sign in to a remote server with OAuth (prints the URL, waits for the loopback redirect). */
export const authCommand: CliCommand = {
  name: 'auth',
  positionals: [serverArg],
  summary: 'sign in to a remote server with OAuth; a running watch picks the tokens up',
  options: {
    timeout: { type: 'string', value: 'MS', help: `how long to wait for the browser (default ${DEFAULT_WAIT_MS})` },
    'token-store': tokenStoreOption,
  },
  examples: ['mcp-reconciler auth linear                  # prints the sign-in URL, waits for the browser, stores the tokens (0600)'],
  run: authRun,
};

/** `logout SERVER`: forget a remote server's stored OAuth credentials. */
export const logoutCommand: CliCommand = {
  name: 'logout',
  positionals: [serverArg],
  summary: "forget a remote server's stored OAuth credentials",
  options: { 'token-store': tokenStoreOption },
  examples: ['mcp-reconciler logout linear                # forget its tokens; it asks to sign in again next time'],
  run: logoutRun,
};
