/**
 * What both conformance clients (conformance/client.ts, ours; and
 * conformance/client-v2.ts, the raw SDK v2 reference) share: the context the
 * suite passes and how it starts a client, the client ID metadata URL, the
 * browser step of an authorization, and plausible tool arguments.
 */

/** Context fields the suite may pass in MCP_CONFORMANCE_CONTEXT (all optional: most scenarios pass none). */
export interface ConformanceContext {
  client_id?: string;
  client_secret?: string;
  private_key_pem?: string;
  signing_algorithm?: string;
  /** Cross-app access (SEP-990): the user's ID token and where to exchange it. */
  idp_client_id?: string;
  idp_id_token?: string;
  idp_issuer?: string;
  idp_token_endpoint?: string;
}

/**
 * A client ID metadata document URL (SEP-991) as a host would publish one;
 * the suite's authorization servers accept any https URL with a path.
 */
export const CLIENT_METADATA_URL = 'https://conformance-test.local/client-metadata.json';

/** Plausible arguments for a tool's input schema: every required property gets a value of its type. */
export function argumentsFor(inputSchema: unknown): Record<string, unknown> {
  const schema = inputSchema as { properties?: Record<string, { type?: string; enum?: unknown[] }>; required?: string[] };
  const args: Record<string, unknown> = {};
  for (const name of schema.required ?? []) {
    const prop = schema.properties?.[name] ?? {};
    if (prop.enum?.length) args[name] = prop.enum[0];
    else if (prop.type === 'number' || prop.type === 'integer') args[name] = 1;
    else if (prop.type === 'boolean') args[name] = true;
    else if (prop.type === 'array') args[name] = [];
    else if (prop.type === 'object') args[name] = {};
    else args[name] = 'conformance';
  }
  return args;
}

/** What the suite runs a client with: the server URL (its one argument), the scenario and its context (from the environment). */
export interface ConformanceRun {
  url: string;
  scenario: string;
  ctx: ConformanceContext;
}

/** This process's run, or `undefined` (after printing the usage of `bin`) when it was started without a server URL. */
export function conformanceRun(bin: string): ConformanceRun | undefined {
  const url = process.argv[2];
  if (!url) {
    process.stderr.write(`usage: ${bin} SERVER_URL (run by the conformance suite)\n`);
    return undefined;
  }
  const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '';
  const ctx = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? '{}') as ConformanceContext;
  return { url, scenario, ctx };
}

/**
 * The browser step without a browser: request the authorization URL and
 * return where the authorization server redirects (the client's callback,
 * with the code), without following it.
 */
export async function authorizationRedirect(url: URL): Promise<URL> {
  const authorize = await fetch(url, { redirect: 'manual' });
  const location = authorize.headers.get('location');
  await authorize.body?.cancel();
  if (!location) throw new Error(`the authorization endpoint answered ${authorize.status} without a redirect`);
  return new URL(location, url);
}

/**
 * Call every tool with plausible arguments ({@link argumentsFor}), printing
 * `name: ok`, `name: error result` or why it threw; how many threw.
 */
export async function callEveryTool<T extends { inputSchema: unknown }>(
  tools: readonly T[],
  nameOf: (tool: T) => string,
  call: (tool: T, args: Record<string, unknown>) => Promise<{ isError?: boolean | undefined }>,
): Promise<number> {
  let failures = 0;
  for (const tool of tools) {
    try {
      const result = await call(tool, argumentsFor(tool.inputSchema));
      process.stderr.write(`${nameOf(tool)}: ${result.isError ? 'error result' : 'ok'}\n`);
    } catch (err) {
      failures++;
      process.stderr.write(`${nameOf(tool)}: ${err instanceof Error ? err.message : String(err)}\n`);
    }
  }
  return failures;
}
