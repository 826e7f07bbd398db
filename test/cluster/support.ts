/**
 * Shared setup of the cluster tests: a real redis-server (test/helpers/redis.ts),
 * one workspace, and several `serve --http --cluster` replicas of it, each a
 * process of the built binary with its own HOME (its own listing cache and
 * process state, as on its own machine) and the same access token.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { runCliCaptured } from '../helpers/cli.js';
import { startTestRedis, type TestRedis } from '../helpers/redis.js';
import { connectHttp, ServeProcess, Workspace, type HttpConnected } from '../gateway/support.js';

/** The access token every replica shares (the shared-token mode; principal auth replaces it later). */
export const CLUSTER_TOKEN = 'c'.repeat(64);

/** One `serve --http --cluster` process. */
export interface Replica {
  readonly name: string;
  readonly serve: ServeProcess;
  readonly url: string;
  /** Open a session on this replica (`query` like `?servers=a`). */
  open(query?: string): Promise<HttpConnected>;
}

/** A workspace, its Redis and its replicas; {@link stop} ends them all and reports what was left. */
export class ClusterFixture {
  readonly ws = new Workspace();
  redis!: TestRedis;
  readonly replicas: Replica[] = [];
  readonly sessions: HttpConnected[] = [];
  readonly workspaceId = `ws-${this.ws.mark}`;

  async startRedis(): Promise<void> {
    this.redis = await startTestRedis();
  }

  /** The cluster options every replica (and `approve --cluster`) takes. */
  clusterArgs(): string[] {
    return ['--cluster', this.redis.socket, '--workspace-id', this.workspaceId];
  }

  /** Environment of replica `name`: its own HOME in the workspace, the shared token. */
  env(name: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
    const home = join(this.ws.dir, `home-${name}`);
    mkdirSync(home, { recursive: true });
    return { ...this.ws.env(), HOME: home, XDG_CACHE_HOME: join(home, '.cache'), XDG_STATE_HOME: join(home, '.state'), MCP_RECONCILER_GATEWAY_TOKEN: CLUSTER_TOKEN, ...extra };
  }

  /** Start replica `name` with `extra` serve options; resolves once it listens. */
  async replica(name: string, extra: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<Replica> {
    const e = this.env(name, env);
    const ws = { args: () => this.ws.args(), env: () => e } as unknown as Workspace;
    const serve = new ServeProcess(ws, ['--http', ...this.clusterArgs(), ...extra]);
    const url = await serve.fromStderr(/listening on (http:\/\/127\.0\.0\.1:\d+\/mcp)/, `replica ${name}'s URL`);
    const replica: Replica = {
      name,
      serve,
      url,
      open: async (query = '') => {
        const s = await connectHttp(url, CLUSTER_TOKEN, query);
        this.sessions.push(s);
        return s;
      },
    };
    this.replicas.push(replica);
    return replica;
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
    return this.ws.cleanup();
  }
}
