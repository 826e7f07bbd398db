/**
 * Shared setup of the cluster tests: a real redis-server (test/helpers/redis.ts),
 * one workspace, and several `serve --http --cluster` replicas of it, each a
 * process of the built binary with its own HOME (its own listing cache and
 * process state, as on its own machine) and the same access token.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, expect } from 'vitest';
import { launchChromium } from '../helpers/chromium.js';
import { runCliCaptured } from '../helpers/cli.js';
import { startTestRedis, type TestRedis } from '../helpers/redis.js';
import { waitFor } from '../helpers/processes.js';
import { cliMain, connectHttp, ServeProcess, Workspace, type HttpConnected } from '../gateway/support.js';

/** The URL every replica is reached at behind the load balancer: the access tokens' audience. */
export const PUBLIC_URL = 'http://gateway.test/mcp';

/**
 * A stand-in for the company's identity provider: a JWKS on 127.0.0.1 with a
 * key generated here, and access tokens signed with it.
 */
export class TestIdentityProvider {
  private server: Server | undefined;
  private key!: CryptoKey;
  private jwk!: JWK;
  issuer = '';
  /** JWKS requests served. */
  jwksHits = 0;

  async start(): Promise<void> {
    const { privateKey, publicKey } = await generateKeyPair('ES256');
    this.key = privateKey;
    this.jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
    this.server = createServer((req, res) => {
      if (req.url !== '/jwks') return void res.writeHead(404).end();
      this.jwksHits++;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [this.jwk] }));
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.issuer = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** An access token of `sub` with `scope` (default every server), for `audience` (default {@link PUBLIC_URL}). */
  token(sub: string, scope = 'mcp:servers', options: { audience?: string; issuer?: string; expiresIn?: string | number } = {}): Promise<string> {
    return new SignJWT({ scope })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setSubject(sub)
      .setIssuer(options.issuer ?? this.issuer)
      .setAudience(options.audience ?? PUBLIC_URL)
      .setIssuedAt()
      .setExpirationTime(options.expiresIn ?? '1h')
      .sign(this.key);
  }

  /** The serve options that trust it. */
  args(): string[] {
    return ['--auth-issuer', this.issuer, '--auth-jwks', `${this.issuer}/jwks`, '--public-url', PUBLIC_URL];
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/** One `serve --http --cluster` process. */
export interface Replica {
  readonly name: string;
  readonly serve: ServeProcess;
  readonly url: string;
  /** Open a session on this replica (`query` like `?servers=a`) as `principal` (default alice, every server) or with `token`. */
  open(query?: string, token?: string): Promise<HttpConnected>;
}

/** A workspace, its Redis and its replicas; {@link stop} ends them all and reports what was left. */
export class ClusterFixture {
  readonly ws = new Workspace();
  redis!: TestRedis;
  readonly idp = new TestIdentityProvider();
  readonly replicas: Replica[] = [];
  readonly sessions: HttpConnected[] = [];
  readonly workspaceId = `ws-${this.ws.mark}`;

  /** Start Redis and the identity provider. */
  async startRedis(): Promise<void> {
    this.redis = await startTestRedis();
    await this.idp.start();
  }

  /** The cluster options every replica (and `approve --cluster`) takes. */
  clusterArgs(): string[] {
    return ['--cluster', this.redis.socket, '--workspace-id', this.workspaceId];
  }

  /** Environment of replica `name`: its own HOME in the workspace, the shared token. */
  env(name: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
    const home = join(this.ws.dir, `home-${name}`);
    mkdirSync(home, { recursive: true });
    return { ...this.ws.env(), HOME: home, XDG_CACHE_HOME: join(home, '.cache'), XDG_STATE_HOME: join(home, '.state'), ...extra };
  }

  /** Start replica `name` with `extra` serve options; resolves once it listens. */
  async replica(name: string, extra: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<Replica> {
    const e = this.env(name, env);
    const ws = { args: () => this.ws.args(), env: () => e } as unknown as Workspace;
    const serve = new ServeProcess(ws, ['--http', ...this.clusterArgs(), ...this.idp.args(), ...extra]);
    // Generous: a replica starts in seconds, but the test machine may be loaded far beyond its cores.
    const url = await serve.fromStderr(/listening on (http:\/\/127\.0\.0\.1:\d+\/mcp)/, `replica ${name}'s URL`, 90_000);
    const replica: Replica = {
      name,
      serve,
      url,
      open: async (query = '', token?: string) => {
        const s = await connectHttp(url, token ?? (await this.idp.token('alice')), query);
        this.sessions.push(s);
        return s;
      },
    };
    this.replicas.push(replica);
    return replica;
  }

  /** `mcp-reconciler status --cluster …` (`extra` like `--json`), with `env` added to the workspace's. */
  status(extra: string[] = [], env: NodeJS.ProcessEnv = {}) {
    return runCliCaptured(['status', ...this.clusterArgs(), ...extra, ...this.ws.args()], { ...this.ws.env(), ...env }, this.ws.root);
  }

  /** `status --cluster --json`, parsed; it must exit 0. */
  async statusJson<T>(env: NodeJS.ProcessEnv = {}): Promise<T> {
    const r = await this.status(['--json'], env);
    if (r.code !== 0) throw new Error(`status --cluster --json exited ${r.code}: ${r.stderr}`);
    return JSON.parse(r.stdout) as T;
  }

  /** `mcp-reconciler approve SERVER --cluster …` (or `reject`). */
  decide(verb: 'approve' | 'reject', server: string) {
    return runCliCaptured([verb, server, ...this.clusterArgs(), ...this.ws.args()], this.ws.env(), this.ws.root);
  }

  /** Close the sessions, stop every replica and Redis; how many processes were left. */
  async stop(): Promise<number> {
    for (const s of this.sessions) await s.client.close().catch(() => undefined);
    await Promise.all(this.replicas.map((r) => r.serve.stop()));
    await this.redis?.cleanup();
    await this.idp.stop();
    return this.ws.cleanup();
  }
}

/** `status --cluster … --ui --json` as a process of the built binary: the dashboard's URL, its stderr, a kill that leaves nothing. */
export class StatusUi {
  readonly child: ChildProcessWithoutNullStreams;
  stderr = '';
  private out = '';

  constructor(fx: ClusterFixture) {
    this.child = spawn(process.execPath, [cliMain, 'status', ...fx.clusterArgs(), '--ui', '--json', ...fx.ws.args()], { env: fx.ws.env(), cwd: fx.ws.root, stdio: 'pipe' });
    this.child.stdout.setEncoding('utf8').on('data', (c: string) => (this.out += c));
    this.child.stderr.setEncoding('utf8').on('data', (c: string) => (this.stderr += c));
  }

  /** The URL of its `dashboard` event; `undefined` when it exited first. */
  async url(): Promise<string | undefined> {
    let url: string | undefined;
    await waitFor(
      () => {
        const line = this.out.split('\n').find((l) => l.includes('"event":"dashboard"'));
        if (line) url = (JSON.parse(line) as { url: string }).url;
        return url !== undefined || this.child.exitCode !== null;
      },
      'the dashboard URL',
      60_000,
    );
    return url;
  }

  /** SIGTERM it (an orderly stop) and wait for its exit; its exit code. */
  async stop(): Promise<number | null> {
    this.child.kill('SIGTERM');
    await waitFor(() => this.child.exitCode !== null, 'status --cluster --ui to stop', 30_000);
    return this.child.exitCode;
  }

  /** SIGKILL it if it still runs, and wait for its exit. */
  async kill(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGKILL');
    await waitFor(() => this.child.exitCode !== null || this.child.signalCode !== null, 'the dashboard process to exit', 10_000).catch(() => undefined);
  }
}

/** Headless Chromium on the cluster's dashboard (`status --cluster --ui`). */
export interface DashboardPage {
  readonly page: Page;
  /** Start `status --cluster --ui` and load its page; fails with its stderr when it exits without a URL. */
  open(): Promise<StatusUi>;
  /** The row of replica `r`, found by its process id. */
  row(r: Replica): Locator;
}

/**
 * A {@link DashboardPage} on `fx` for the tests of the enclosing block: the
 * browser starts before them; after them it ends with the dashboard process,
 * then `fx` stops and must leave no process behind.
 */
export function dashboardPage(fx: ClusterFixture): DashboardPage {
  let browser: Browser | undefined;
  let page: Page | undefined;
  let ui: StatusUi | undefined;
  beforeAll(async () => {
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await ui?.kill();
    expect(await fx.stop(), 'processes left behind').toBe(0);
  });
  const dashboard: DashboardPage = {
    get page() {
      if (!page) throw new Error('the dashboard page is opened before the tests');
      return page;
    },
    async open() {
      ui = new StatusUi(fx);
      const url = await ui.url();
      if (url === undefined) throw new Error(`status --cluster --ui exited (${ui.child.exitCode}) before naming its URL: ${ui.stderr}`);
      await dashboard.page.goto(url);
      return ui;
    },
    row: (r) => dashboard.page.locator(`tr:has(td:nth-child(4):text-is("${r.serve.child.pid}"))`),
  };
  return dashboard;
}

/**
 * The sign-in URL `replica` logged for `server`, the n-th one from 1: the
 * gateway's own sign-in, or with `principal` (a principal key) that
 * principal's.
 */
export async function signInUrl(replica: Replica, server: string, options: { principal?: string; nth?: number } = {}): Promise<URL> {
  const { principal, nth = 1 } = options;
  const re = new RegExp(`"${server}" ${principal ? `of principal ${principal} ` : ''}needs a sign-in: open (\\S+)`, 'g');
  let found: string | undefined;
  await waitFor(() => (found = [...replica.serve.stderr.matchAll(re)][nth - 1]?.[1]) !== undefined, `replica ${replica.name} to log sign-in URL #${nth} of "${server}"${principal ? ` for ${principal}` : ''} (stderr: ${replica.serve.stderr})`, 90_000);
  return new URL(found!);
}

/** The authorization server's answer, as `user` when given (the OAuth fixture records it): where it sends the browser back to. */
export async function authorizeAt(url: URL, user?: string): Promise<URL> {
  const asked = new URL(url);
  if (user) asked.searchParams.set('user', user);
  const r = await fetch(asked, { redirect: 'manual' });
  const location = r.headers.get('location');
  if (!location) throw new Error(`no redirect from ${asked.href} (${r.status}: ${await r.text()})`);
  return new URL(location);
}

/** The load balancer: the public callback URL, delivered to `replica`. */
export async function deliver(callback: URL, replica: Replica): Promise<{ status: number; body: string }> {
  const r = await fetch(new URL(callback.pathname + callback.search, replica.url));
  return { status: r.status, body: await r.text() };
}

/**
 * `mcp-reconciler auth SERVER --cluster …` (plus `extra`, like `--principal KEY`)
 * as a process of the built binary, with `env` added; the browser step is a
 * fetch of the printed URL (as `user` when given) and of the loopback
 * redirect. It must exit 0; its output.
 */
export async function signInFromTerminal(fx: ClusterFixture, server: string, env: NodeJS.ProcessEnv, extra: string[] = [], user?: string): Promise<string> {
  const child = spawn(process.execPath, [cliMain, 'auth', server, ...fx.clusterArgs(), '--timeout', '120000', ...extra, ...fx.ws.args()], {
    env: { ...fx.ws.env(), ...env },
    cwd: fx.ws.root,
    stdio: 'pipe',
  });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
  child.stderr.setEncoding('utf8').on('data', (s: string) => (out += s));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    let authorizeUrl: string | undefined;
    await waitFor(() => (authorizeUrl = /https?:\/\/\S+\/authorize\S*/.exec(out)?.[0]) !== undefined || child.exitCode !== null, 'the authorization URL', 60_000);
    expect(authorizeUrl, `auth exited (${String(child.exitCode)}) before printing a URL:\n${out}`).toBeDefined();
    // The browser step: the authorization server redirects to the CLI's loopback receiver.
    const back = await authorizeAt(new URL(authorizeUrl!), user);
    expect((await fetch(back)).status).toBe(200);
    expect(await exited, out).toBe(0);
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  return out;
}
