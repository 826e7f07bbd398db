/**
 * The client the official MCP conformance suite drives (`npm run
 * conformance`). It uses only mcp-reconciler's public API — a controller,
 * one runtime server, `tools()`, `callTool()` and the host hooks — exactly
 * as an embedding host would; there is no raw SDK fallback.
 *
 * The suite runs `node dist/conformance/client.js <server-url>` with the
 * scenario name in MCP_CONFORMANCE_SCENARIO and, for scenarios that need
 * pre-issued credentials, a JSON object in MCP_CONFORMANCE_CONTEXT. Those
 * credentials go where a user would write them: the server's `oauth` config.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createMcpController,
  MemoryApprovalStore,
  MemoryTokenStore,
  requestJwtAuthorizationGrant,
  type AuthorizationGrantHandler,
  type ElicitationAnswer,
  type ElicitationRequest,
  type ServerConfig,
  type ServerOAuthConfig,
} from '../src/index.js';
import { authorizationRedirect, callEveryTool, CLIENT_METADATA_URL, conformanceRun, type ConformanceContext } from './support.js';

const SERVER = 'conformance';

function oauthConfig(scenario: string, ctx: ConformanceContext): ServerOAuthConfig | undefined {
  if (scenario === 'auth/pre-registration' && ctx.client_id) {
    return { clientId: ctx.client_id, ...(ctx.client_secret ? { clientSecret: ctx.client_secret } : {}) };
  }
  if (scenario === 'auth/client-credentials-basic' && ctx.client_id) {
    return { grantType: 'client_credentials', clientId: ctx.client_id, clientSecret: ctx.client_secret ?? '' };
  }
  if (scenario === 'auth/client-credentials-jwt' && ctx.client_id) {
    return {
      grantType: 'client_credentials',
      clientId: ctx.client_id,
      tokenEndpointAuthMethod: 'private_key_jwt',
      privateKey: ctx.private_key_pem ?? '',
      ...(ctx.signing_algorithm ? { signingAlgorithm: ctx.signing_algorithm } : {}),
    };
  }
  if (scenario === 'auth/cross-app-access-complete-flow' && ctx.client_id) {
    return { grantType: 'jwt-bearer', clientId: ctx.client_id, ...(ctx.client_secret ? { clientSecret: ctx.client_secret } : {}) };
  }
  return undefined;
}

/**
 * The host side of cross-app access: the user's enterprise sign-in (here the
 * suite's ID token) exchanged at the IdP for an ID-JAG addressed to the
 * authorization server the controller discovered.
 */
function grantFromIdp(ctx: ConformanceContext): AuthorizationGrantHandler | undefined {
  const { idp_token_endpoint: tokenEndpoint, idp_id_token: idToken, idp_client_id: clientId } = ctx;
  if (!tokenEndpoint || !idToken || !clientId) return undefined;
  return async (_server, grant) => {
    const { jwtAuthGrant } = await requestJwtAuthorizationGrant({
      tokenEndpoint,
      idToken,
      clientId,
      audience: grant.audience,
      resource: grant.resource,
      ...(grant.scope ? { scope: grant.scope } : {}),
      fetchFn: grant.fetch,
    });
    return jwtAuthGrant;
  };
}

/**
 * The browser step without a browser: follow the authorization server's
 * redirect by hand, which lands on the controller's loopback receiver.
 */
async function headlessBrowser(_server: string, url: URL): Promise<void> {
  const callback = await fetch(await authorizationRedirect(url));
  await callback.body?.cancel();
}

/** Accept every form as it comes: the controller fills in the schema's defaults (SEP-1034). */
function acceptWithDefaults(_server: string, request: ElicitationRequest): ElicitationAnswer {
  return request.mode === 'url' ? { action: 'accept' } : { action: 'accept', content: {} };
}

async function main(): Promise<number> {
  const run = conformanceRun('client.js');
  if (!run) return 2;
  const { url, scenario, ctx } = run;
  const onAuthorizationGrant = grantFromIdp(ctx);
  const workspace = mkdtempSync(join(tmpdir(), 'mcp-conformance-'));
  const controller = createMcpController({
    cwd: workspace,
    sources: [],
    watch: false,
    approvals: new MemoryApprovalStore(),
    processStateFile: false,
    readyTimeoutMs: 25_000,
    backoff: { attempts: 1 },
    oauth: { tokenStore: new MemoryTokenStore(), clientMetadataUrl: CLIENT_METADATA_URL, clientName: 'mcp-reconciler-conformance' },
    onAuthorizationUrl: headlessBrowser,
    ...(onAuthorizationGrant ? { onAuthorizationGrant } : {}),
    onElicitation: acceptWithDefaults,
    onSampling: async () => ({ role: 'assistant', model: 'conformance', content: { type: 'text', text: 'ok' } }),
    logger: { warn: (m) => process.stderr.write(`warn: ${m}\n`), error: (m) => process.stderr.write(`error: ${m}\n`) },
  });
  try {
    const oauth = oauthConfig(scenario, ctx);
    const config: ServerConfig = { type: 'http', url, ...(oauth ? { oauth } : {}) };
    await controller.addRuntimeServer(SERVER, config);
    await controller.start();
    const status = controller.status().find((s) => s.name === SERVER);
    process.stderr.write(`server: ${status?.state}${status?.lastError ? ` (${status.lastError})` : ''}\n`);
    if (status?.state !== 'connected') return 1;
    const failures = await callEveryTool(controller.tools(), (t) => t.rawName, (t, args) => controller.callTool(t.name, args, { timeoutMs: 20_000 }));
    return failures === 0 ? 0 : 1;
  } finally {
    await controller.dispose();
    rmSync(workspace, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
