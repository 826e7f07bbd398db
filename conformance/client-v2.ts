/**
 * The reference beside our client in `npm run conformance`: the SDK's v2
 * client (`@modelcontextprotocol/client`) used raw, the way a host without
 * mcp-reconciler would, so the table shows which failures are ours and
 * which the suite's or the SDK's. It does what conformance/client.ts does —
 * connect (OAuth as the scenario needs), list the tools, call each one with
 * plausible arguments, accept elicitations with the defaults — at the wire
 * the suite asks for (MCP_CONFORMANCE_PROTOCOL_VERSION: 2026-07-28 pins the
 * new revision, anything else is the 2025 `initialize`).
 *
 *   node dist/conformance/client-v2.js SERVER_URL   (run by the suite)
 */
import {
  Client,
  ClientCredentialsProvider,
  PrivateKeyJwtProvider,
  StreamableHTTPClientTransport,
  UnauthorizedError,
  type OAuthClientInformationContext,
  type OAuthClientProvider,
} from '@modelcontextprotocol/client';
import { authorizationRedirect, callEveryTool, CLIENT_METADATA_URL, conformanceRun, type ConformanceContext } from './support.js';

const REDIRECT_URL = 'http://127.0.0.1:3000/callback';

type DiscoveryState = Parameters<NonNullable<OAuthClientProvider['saveDiscoveryState']>>[0];
type Stored<T extends keyof OAuthClientProvider> = OAuthClientProvider[T] extends (...args: never[]) => infer R ? Awaited<R> : never;

/**
 * An authorization-code provider whose "browser" follows the authorization
 * server's redirect by hand and keeps the callback's parameters for
 * `finishAuth`.
 */
class HeadlessProvider implements OAuthClientProvider {
  callback: URLSearchParams | undefined;
  /** Client registrations and tokens by the authorization server's issuer: a new server means registering again (SEP-2352). */
  private readonly infos = new Map<string, NonNullable<Stored<'clientInformation'>>>();
  private readonly saved = new Map<string, NonNullable<Stored<'tokens'>>>();
  private readonly preRegistered: Stored<'clientInformation'>;
  private verifier = '';
  readonly clientMetadataUrl: string | undefined;

  constructor(preRegistered?: { client_id: string; client_secret?: string }) {
    this.preRegistered = preRegistered;
    this.clientMetadataUrl = preRegistered ? undefined : CLIENT_METADATA_URL;
  }

  get redirectUrl(): string {
    return REDIRECT_URL;
  }

  get clientMetadata() {
    return {
      client_name: 'raw-sdk-v2-conformance',
      redirect_uris: [REDIRECT_URL],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      application_type: 'native',
    };
  }

  // Without a context (the transport adding its Authorization header) the latest one saved answers.
  private latestInfo: Stored<'clientInformation'>;
  private latestTokens: Stored<'tokens'>;

  clientInformation(ctx?: OAuthClientInformationContext) {
    return (ctx ? this.infos.get(ctx.issuer) : this.latestInfo) ?? this.preRegistered;
  }

  saveClientInformation(info: NonNullable<Stored<'clientInformation'>>, ctx?: OAuthClientInformationContext): void {
    if (ctx) this.infos.set(ctx.issuer, info);
    this.latestInfo = info;
  }

  tokens(ctx?: OAuthClientInformationContext) {
    return ctx ? this.saved.get(ctx.issuer) : this.latestTokens;
  }

  saveTokens(tokens: NonNullable<Stored<'tokens'>>, ctx?: OAuthClientInformationContext): void {
    if (ctx) this.saved.set(ctx.issuer, tokens);
    this.latestTokens = tokens;
  }

  async redirectToAuthorization(url: URL): Promise<void> {
    this.callback = (await authorizationRedirect(url)).searchParams;
  }

  private discovery: DiscoveryState | undefined;

  saveDiscoveryState(state: DiscoveryState): void {
    this.discovery = state;
  }

  discoveryState() {
    return this.discovery;
  }

  saveCodeVerifier(v: string): void {
    this.verifier = v;
  }

  codeVerifier(): string {
    return this.verifier;
  }
}

function providerFor(scenario: string, ctx: ConformanceContext): OAuthClientProvider | undefined {
  if (scenario === 'auth/client-credentials-basic' && ctx.client_id) {
    return new ClientCredentialsProvider({ clientId: ctx.client_id, clientSecret: ctx.client_secret ?? '' });
  }
  if (scenario === 'auth/client-credentials-jwt' && ctx.client_id) {
    return new PrivateKeyJwtProvider({ clientId: ctx.client_id, privateKey: ctx.private_key_pem ?? '', algorithm: ctx.signing_algorithm ?? 'ES256' });
  }
  if (scenario === 'auth/pre-registration' && ctx.client_id) {
    return new HeadlessProvider({ client_id: ctx.client_id, ...(ctx.client_secret ? { client_secret: ctx.client_secret } : {}) });
  }
  return scenario.startsWith('auth/') ? new HeadlessProvider() : undefined;
}

async function main(): Promise<number> {
  const run = conformanceRun('client-v2.js');
  if (!run) return 2;
  const { url, scenario, ctx } = run;
  const version = process.env.MCP_CONFORMANCE_PROTOCOL_VERSION;
  const modern = version !== undefined && version >= '2026-07-28';
  const provider = providerFor(scenario, ctx);
  const client = new Client(
    { name: 'raw-sdk-v2-conformance', version: '1.0.0' },
    {
      capabilities: { elicitation: { form: { applyDefaults: true }, url: {} }, sampling: {}, roots: {} },
      versionNegotiation: { mode: modern ? { pin: version } : 'legacy' },
    },
  );
  client.setRequestHandler('elicitation/create', (request) => (request.params.mode === 'url' ? { action: 'accept' } : { action: 'accept', content: {} }));
  client.setRequestHandler('sampling/createMessage', () => ({ role: 'assistant', model: 'conformance', content: { type: 'text', text: 'ok' } }));
  client.setRequestHandler('roots/list', () => ({ roots: [] }));
  const newTransport = () => new StreamableHTTPClientTransport(new URL(url), provider ? { authProvider: provider } : {});
  let transport = newTransport();

  /** Run `op`; when the SDK stopped for the browser step, finish it and run `op` again (a step-up can need it twice; more is the loop the suite's retry limit checks for). */
  const authorized = async <T>(op: () => Promise<T>): Promise<T> => {
    for (let attempt = 0; ; attempt++) {
      try {
        return await op();
      } catch (err) {
        const headless = provider instanceof HeadlessProvider ? provider : undefined;
        if (!(err instanceof UnauthorizedError) || !headless?.callback || attempt >= 2) throw err;
        const params = headless.callback;
        headless.callback = undefined;
        await transport.finishAuth(params);
        // A connect that stopped for the browser step left its transport started: the next try needs a fresh one.
        if (!connected) transport = newTransport();
      }
    }
  };
  let connected = false;

  try {
    await authorized(() => client.connect(transport, { timeout: 25_000 }));
    connected = true;
    const { tools } = await authorized(() => client.listTools());
    const failures = await callEveryTool(tools, (t) => t.name, (t, args) => authorized(() => client.callTool({ name: t.name, arguments: args }, { timeout: 20_000 })));
    return failures === 0 ? 0 : 1;
  } finally {
    await client.close().catch(() => undefined);
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
