/**
 * Cross-app access (SEP-990) through the public API: a server whose config
 * says `oauth.grantType: "jwt-bearer"`, the host's `onAuthorizationGrant`
 * trading an ID token for an ID-JAG at an identity provider with
 * `requestJwtAuthorizationGrant()`, and the controller doing the JWT-bearer
 * grant at the MCP authorization server through the SDK's `auth()`.
 *
 * The fixture below is an IdP, an authorization server and a protected MCP
 * server on one loopback port. Grants are opaque strings remembered with what
 * they were issued for (no signatures: what is under test is what the client
 * sends, not JWT validation).
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  requestJwtAuthorizationGrant,
  type AuthorizationGrantContext,
  type McpController,
} from '../../src/index.js';
import { json, listenLoopback, serveProtectedMcp } from '../fixtures/oauth-fixture.js';
import { authTestController, reach, stateOf } from './support.js';

const ID_TOKEN = 'the-users-id-token';
const IDP_CLIENT = 'idp-client';
const MCP_CLIENT = 'mcp-client';
const MCP_SECRET = 'mcp-secret';

interface XaaFixture {
  /** Authorization server (issuer) and IdP base. */
  base: string;
  /** The MCP endpoint. */
  url: string;
  idpTokenEndpoint: string;
  /** Token-exchange requests the IdP answered with a grant, and the forms it got. */
  exchanges: URLSearchParams[];
  /** JWT-bearer requests at the authorization server: form and Authorization header. */
  bearerGrants: { form: URLSearchParams; authorization: string | undefined }[];
  /** The IdP's next answer is this OAuth error. */
  failNextExchange(error: string): void;
  expireAccessTokens(): void;
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of req) text += chunk;
  return text;
}

async function startXaaFixture(): Promise<XaaFixture> {
  let base = '';
  const grants = new Map<string, { audience: string; resource: string }>();
  const access = new Set<string>();
  const exchanges: URLSearchParams[] = [];
  const bearerGrants: XaaFixture['bearerGrants'] = [];
  let nextExchangeError: string | undefined;

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', base);
    if (req.method === 'GET' && url.pathname === '/.well-known/oauth-protected-resource/mcp') {
      return json(res, 200, { resource: `${base}/mcp`, authorization_servers: [base] });
    }
    if (req.method === 'GET' && url.pathname === '/.well-known/oauth-authorization-server') {
      return json(res, 200, {
        issuer: base,
        authorization_endpoint: `${base}/authorize`,
        token_endpoint: `${base}/token`,
        response_types_supported: ['code'],
        grant_types_supported: ['urn:ietf:params:oauth:grant-type:jwt-bearer'],
        token_endpoint_auth_methods_supported: ['client_secret_basic'],
      });
    }
    if (req.method === 'POST' && url.pathname === '/idp/token') {
      const form = new URLSearchParams(await readBody(req));
      if (nextExchangeError) {
        const error = nextExchangeError;
        nextExchangeError = undefined;
        return json(res, 400, { error, error_description: 'the IdP said no' });
      }
      const ok =
        form.get('grant_type') === 'urn:ietf:params:oauth:grant-type:token-exchange' &&
        form.get('requested_token_type') === 'urn:ietf:params:oauth:token-type:id-jag' &&
        form.get('subject_token_type') === 'urn:ietf:params:oauth:token-type:id_token' &&
        form.get('subject_token') === ID_TOKEN &&
        form.get('client_id') === IDP_CLIENT &&
        !!form.get('audience') &&
        !!form.get('resource');
      if (!ok) return json(res, 400, { error: 'invalid_request', error_description: `bad token exchange: ${form.toString()}` });
      exchanges.push(form);
      const grant = `idjag-${randomBytes(8).toString('hex')}`;
      grants.set(grant, { audience: form.get('audience')!, resource: form.get('resource')! });
      return json(res, 200, { access_token: grant, issued_token_type: 'urn:ietf:params:oauth:token-type:id-jag', token_type: 'N_A', expires_in: 300 });
    }
    if (req.method === 'POST' && url.pathname === '/token') {
      const form = new URLSearchParams(await readBody(req));
      const authorization = req.headers.authorization;
      bearerGrants.push({ form, authorization });
      if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') return json(res, 400, { error: 'unsupported_grant_type' });
      if (authorization !== `Basic ${Buffer.from(`${MCP_CLIENT}:${MCP_SECRET}`).toString('base64')}`) return json(res, 401, { error: 'invalid_client' });
      const grant = grants.get(form.get('assertion') ?? '');
      grants.delete(form.get('assertion') ?? '');
      if (!grant || grant.audience !== base || grant.resource !== `${base}/mcp` || form.get('resource') !== `${base}/mcp`) {
        return json(res, 400, { error: 'invalid_grant', error_description: 'unknown ID-JAG, or issued for another audience or resource' });
      }
      const token = `at-${randomBytes(8).toString('hex')}`;
      access.add(token);
      return json(res, 200, { access_token: token, token_type: 'Bearer', expires_in: 3600 });
    }
    if (url.pathname === '/mcp') return serveProtectedMcp(req, res, access, base, 'xaa-fixture');
    json(res, 404, { error: 'not_found' });
  };

  const listening = await listenLoopback(handle);
  base = listening.base;
  return {
    base,
    url: `${base}/mcp`,
    idpTokenEndpoint: `${base}/idp/token`,
    exchanges,
    bearerGrants,
    failNextExchange: (error) => {
      nextExchangeError = error;
    },
    expireAccessTokens: () => access.clear(),
    close: listening.close,
  };
}


describe('cross-app access (SEP-990): token exchange at the IdP, JWT-bearer grant at the authorization server', () => {
  let fixture: XaaFixture;
  const controllers: McpController[] = [];

  beforeEach(async () => {
    fixture = await startXaaFixture();
  });
  afterEach(async () => {
    await Promise.all(controllers.splice(0).map((c) => c.dispose()));
    await fixture.close();
  });

  function controller(opts: Parameters<typeof authTestController>[1] = {}): McpController {
    const c = authTestController(process.cwd(), opts);
    controllers.push(c);
    return c;
  }

  /** The host's hook: the user's ID token, exchanged at the IdP for what the controller asks. */
  function hostHook(seen: AuthorizationGrantContext[] = []) {
    return async (_server: string, ctx: AuthorizationGrantContext): Promise<string> => {
      seen.push(ctx);
      const grant = await requestJwtAuthorizationGrant({
        tokenEndpoint: fixture.idpTokenEndpoint,
        idToken: ID_TOKEN,
        clientId: IDP_CLIENT,
        audience: ctx.audience,
        resource: ctx.resource,
        fetchFn: ctx.fetch,
      });
      return grant.jwtAuthGrant;
    };
  }

  const config = () => ({ type: 'http' as const, url: fixture.url, oauth: { grantType: 'jwt-bearer' as const, clientId: MCP_CLIENT, clientSecret: MCP_SECRET } });

  it('connects without a browser: the hook gets the discovered audience and resource, the grant goes out with client_secret_basic', async () => {
    const seen: AuthorizationGrantContext[] = [];
    const c = controller({ onAuthorizationGrant: hostHook(seen), onAuthorizationUrl: () => expect.fail('no browser step in cross-app access') });
    await c.addRuntimeServer('remote', config());
    await c.start();
    expect(stateOf(c)?.state).toBe('connected');
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ authorizationServerUrl: fixture.base, audience: fixture.base, resource: fixture.url });
    expect(fixture.exchanges).toHaveLength(1);
    expect(fixture.exchanges[0]!.get('audience')).toBe(fixture.base);
    expect(fixture.bearerGrants).toHaveLength(1);
    const sent = fixture.bearerGrants[0]!;
    expect(sent.form.get('grant_type')).toBe('urn:ietf:params:oauth:grant-type:jwt-bearer');
    expect(sent.form.get('client_secret')).toBeNull(); // in the Basic header, not the body
    expect((await c.callTool('mcp__remote__echo', { text: 'x' })).isError).toBeFalsy();
  });

  it('gets a new grant on its own when the access token stops working', async () => {
    const seen: AuthorizationGrantContext[] = [];
    const c = controller({ onAuthorizationGrant: hostHook(seen) });
    await c.addRuntimeServer('remote', config());
    await c.start();
    expect(stateOf(c)?.state).toBe('connected');
    fixture.expireAccessTokens();
    expect((await c.callTool('mcp__remote__echo', { text: 'again' })).isError).toBeFalsy();
    expect(seen).toHaveLength(2);
    expect(fixture.bearerGrants).toHaveLength(2);
    expect(stateOf(c)?.state).toBe('connected');
  });

  it('rests in needs_auth and says why when the host gave no onAuthorizationGrant hook', async () => {
    const warnings: string[] = [];
    const c = controller({ logger: { warn: (m) => warnings.push(m), error: () => {} } });
    await c.addRuntimeServer('remote', config());
    await c.start();
    expect(stateOf(c)?.state).toBe('needs_auth');
    expect(fixture.bearerGrants).toHaveLength(0); // nothing is sent without an assertion
    expect(warnings.join('\n')).toContain('onAuthorizationGrant');
  });

  it('rests in needs_auth when the IdP refuses the token exchange, and connects once it agrees (authenticate)', async () => {
    const warnings: string[] = [];
    fixture.failNextExchange('access_denied');
    const c = controller({ onAuthorizationGrant: hostHook(), logger: { warn: (m) => warnings.push(m), error: () => {} } });
    await c.addRuntimeServer('remote', config());
    await c.start();
    expect(stateOf(c)?.state).toBe('needs_auth');
    expect(warnings.join('\n')).toContain('access_denied');
    const connected = reach(c, 'connected');
    await c.authenticate('remote');
    await connected;
    expect(fixture.bearerGrants).toHaveLength(1);
  });
});

describe('requestJwtAuthorizationGrant', () => {
  let fixture: XaaFixture;
  beforeEach(async () => {
    fixture = await startXaaFixture();
  });
  afterEach(async () => {
    await fixture.close();
  });

  const options = () => ({ tokenEndpoint: fixture.idpTokenEndpoint, idToken: ID_TOKEN, clientId: IDP_CLIENT, audience: fixture.base, resource: fixture.url });

  it('sends an RFC 8693 token exchange for an ID-JAG and returns it', async () => {
    const grant = await requestJwtAuthorizationGrant({ ...options(), clientSecret: 'idp-secret', scope: 'read' });
    expect(grant.jwtAuthGrant).toMatch(/^idjag-/);
    expect(grant.expiresIn).toBe(300);
    const form = fixture.exchanges[0]!;
    expect(form.get('client_secret')).toBe('idp-secret');
    expect(form.get('scope')).toBe('read');
  });

  it('omits an empty client secret (public client)', async () => {
    await requestJwtAuthorizationGrant({ ...options(), clientSecret: '' });
    expect(fixture.exchanges[0]!.has('client_secret')).toBe(false);
  });

  it('throws the OAuth error the IdP answers with', async () => {
    fixture.failNextExchange('invalid_grant');
    await expect(requestJwtAuthorizationGrant(options())).rejects.toThrow(/the IdP said no/);
  });

  it('refuses a token that is not an ID-JAG', async () => {
    const fake: typeof fetch = async () => new Response(JSON.stringify({ access_token: 'x', issued_token_type: 'urn:ietf:params:oauth:token-type:access_token', token_type: 'Bearer' }), { status: 200 });
    await expect(requestJwtAuthorizationGrant({ ...options(), fetchFn: fake })).rejects.toThrow(/not an ID-JAG/);
  });
});
