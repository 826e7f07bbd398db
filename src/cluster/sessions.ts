/**
 * Sessions of the older protocol revision in a clustered gateway
 * (docs/cluster-sessions.md): a session stays on the replica that opened it.
 * Its `Mcp-Session-Id` names that replica and is signed (HMAC-SHA256 under a
 * key derived from the cluster secret), so any replica can tell, without
 * asking Redis, whether an id is genuine and whose it is. A request that
 * lands elsewhere is piped to the owner at the URL it announces (streams
 * included, nothing buffered), with the client's `Authorization` header: the
 * owner authenticates the principal again. A forged id, or an owner that is
 * gone, is answered 404, upon which the client initializes a new session
 * (MCP 2025-11-25, "Session Management").
 */
import { createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import { Agent, request, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { describeError } from '../errors.js';
import { sealingKey } from './credentials.js';
import type { Redis, WorkspaceKeys } from './redis.js';
import { HEARTBEAT_MS, replicaAddress } from './replicas.js';
import { announcementKey } from './announcements.js';

/** Set on a forwarded request: the owner answers it itself, never forwards it again. */
export const FORWARDED_HEADER = 'mcp-reconciler-forwarded-by';

/** How long a forward may take to connect before the owner counts as gone. */
const CONNECT_TIMEOUT_MS = 5_000;

/** Headers of one hop only (RFC 9110 §7.6.1), not passed on. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host']);

/** The key that signs session ids: derived from the cluster secret with its own label, so it never equals the sealing key. */
export function sessionKey(secret: string): Buffer {
  sealingKey(secret); // the same length check, and usage error, as for sealing
  return Buffer.from(hkdfSync('sha256', secret, 'mcp-reconciler cluster', 'session ids v1', 32));
}

/** Options of {@link SessionRouter}. */
export interface SessionRouterOptions {
  redis: Redis;
  keys: WorkspaceKeys;
  /** The cluster secret (`MCP_RECONCILER_CLUSTER_SECRET`). */
  secret: string;
  /** This replica's id (its announcement's). */
  replicaId: string;
  /** Where forwarding problems are told. */
  log: (line: string) => void;
  /** Told about an announcement that is not signed with the cluster secret (default: a line to `log`). */
  untrusted?: (replica: string, why: string) => void;
}

/** What {@link SessionRouter.forward} did, for tests and the log. */
export type ForwardOutcome = 'forwarded' | 'forged' | 'own' | 'loop' | 'owner-gone';

function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return typeof v === 'string' ? v : undefined;
}

/** Mints this replica's session ids and forwards requests for other replicas' sessions. */
export class SessionRouter {
  private readonly key: Buffer;
  /** Checks the owners' announcements: only a signed one is forwarded to. */
  private readonly announcements: Buffer;
  /** Owners' URLs as last announced: one Redis read per owner per heartbeat, not per call. */
  private readonly owners = new Map<string, { url: string; until: number }>();
  /** Kept-alive connections to the other replicas. */
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 256 });

  constructor(private readonly options: SessionRouterOptions) {
    this.key = sessionKey(options.secret);
    this.announcements = announcementKey(options.secret);
    if (!/^[0-9a-f]+$/.test(options.replicaId)) throw new Error(`replica id ${options.replicaId} is not hex`);
  }

  private mac(body: string): string {
    return createHmac('sha256', this.key).update(`${this.options.keys.replicas}\n${body}`).digest('base64url').slice(0, 32);
  }

  /** A new session id owned by this replica: `<replica>.<random>.<mac>` (visible ASCII, as the spec asks). */
  mint(): string {
    const body = `${this.options.replicaId}.${randomBytes(16).toString('base64url')}`;
    return `${body}.${this.mac(body)}`;
  }

  /** The replica that minted `id`, or `undefined` when it was not signed with this cluster's secret. */
  ownerOf(id: string): string | undefined {
    const m = /^([0-9a-f]{1,64})\.([A-Za-z0-9_-]{1,64})\.([A-Za-z0-9_-]{32})$/.exec(id);
    if (!m) return undefined;
    const expected = Buffer.from(this.mac(`${m[1]}.${m[2]}`));
    const given = Buffer.from(m[3]!);
    return expected.length === given.length && timingSafeEqual(expected, given) ? m[1] : undefined;
  }

  /** Where `owner` can be reached, from its announcement (signed with the cluster secret); `undefined` when it has none (gone) or a forged one. */
  private async ownerUrl(owner: string): Promise<string | undefined> {
    const cached = this.owners.get(owner);
    if (cached && cached.until > Date.now()) return cached.url;
    const url = await replicaAddress(this.options.redis, this.options.keys, owner, this.announcements, (why) =>
      this.options.untrusted ? this.options.untrusted(owner, why) : this.options.log(`ignoring replica ${owner}'s announcement in Redis: ${why}; its sessions are not forwarded to it`),
    );
    if (url === undefined) return undefined;
    this.owners.set(owner, { url, until: Date.now() + HEARTBEAT_MS });
    return url;
  }

  /**
   * Answer a request whose `Mcp-Session-Id` (`id`) this replica does not
   * hold: pipe it to its owner, or answer 404 via `notFound` (forged id, our
   * own closed session, a request forwarded once already, owner gone).
   */
  async forward(id: string, req: IncomingMessage, res: ServerResponse, notFound: (message: string) => void): Promise<ForwardOutcome> {
    const owner = this.ownerOf(id);
    if (owner === undefined) {
      notFound('Session not found: this session id was not issued by this gateway; initialize a new session');
      return 'forged';
    }
    if (owner === this.options.replicaId) {
      notFound('Session not found: it was closed or unused for the session idle timeout; initialize a new session');
      return 'own';
    }
    if (headerValue(req.headers, FORWARDED_HEADER) !== undefined) {
      notFound('Session not found: the replica it was forwarded to does not hold it; initialize a new session');
      return 'loop';
    }
    const url = await this.reachableUrl(owner, `forwarding session ${id}`);
    if (url === undefined) {
      notFound(`Session not found: replica ${owner}, which held it, is gone; initialize a new session`);
      return 'owner-gone';
    }
    return this.pipe(owner, new URL(url), req, res, (why) => {
      this.options.log(`session ${id}: ${why}; the client is told to initialize a new session`);
      notFound(`Session not found: replica ${owner}, which held it, does not answer; initialize a new session`);
    });
  }

  /**
   * A 2026-07-28 retry whose `requestState` another replica minted: the
   * call it continues is waiting there (input-required rounds live in the
   * process that runs the call), so the request, whose body was already
   * read, is sent on to it. Resolves `false` when the state is this
   * replica's, not this cluster's, already forwarded once, or its replica is
   * gone: this replica answers it then (an unknown `requestState`, which
   * tells the client to call again without it).
   */
  async forwardRetry(state: string, body: unknown, req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    const owner = this.ownerOf(state);
    if (owner === undefined || owner === this.options.replicaId || headerValue(req.headers, FORWARDED_HEADER) !== undefined) return false;
    const url = await this.reachableUrl(owner, 'forwarding an input-required retry');
    if (url === undefined) return false;
    const what = `an input-required retry for replica ${owner}`;
    const outcome = await this.pipe(owner, new URL(url), req, res, (why) => this.options.log(`${what}: ${why}; answered here as an unknown requestState`), Buffer.from(JSON.stringify(body)));
    return outcome === 'forwarded';
  }

  /**
   * {@link ownerUrl}, with Redis unreadable told in the log as `what` and
   * answered `undefined`: the owner cannot be found, so the request is
   * answered here (the client starts over on a replica that answers).
   */
  private async reachableUrl(owner: string, what: string): Promise<string | undefined> {
    try {
      return await this.ownerUrl(owner);
    } catch (err) {
      this.options.log(`${what}: the address of replica ${owner} cannot be read from Redis: ${describeError(err)}`);
      return undefined;
    }
  }

  /**
   * Send `req` on to `owner` at `target` and its answer back; `body` when the
   * request's body was read already. `fail` hears why when the owner does
   * not answer (nothing was sent to `res` then).
   */
  private pipe(owner: string, target: URL, req: IncomingMessage, res: ServerResponse, fail: (why: string) => void, body?: Buffer): Promise<ForwardOutcome> {
    const headers: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(req.headers)) if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
    if (body) headers['content-length'] = String(body.length);
    headers.host = target.host;
    headers[FORWARDED_HEADER] = this.options.replicaId;
    const search = new URL(req.url ?? '/', 'http://x').search;
    return new Promise((resolve) => {
      let answered = false;
      const up = request(
        { protocol: target.protocol, hostname: target.hostname.replace(/^\[|\]$/g, ''), port: target.port, path: `${target.pathname}${search}`, method: req.method, headers, agent: this.agent },
        (ur) => {
          answered = true;
          const out: Record<string, string | string[]> = {};
          for (const [name, value] of Object.entries(ur.headers)) if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value;
          res.writeHead(ur.statusCode ?? 502, out);
          // An SSE stream must reach the client event by event: send the headers now and pipe, never buffer.
          if (String(ur.headers['content-type'] ?? '').startsWith('text/event-stream')) res.flushHeaders();
          ur.pipe(res);
          // The owner died mid-stream: end the client's stream too, so it reconnects.
          ur.once('aborted', () => res.destroy());
          ur.once('error', () => res.destroy());
          resolve('forwarded');
        },
      );
      up.on('socket', (socket) => {
        // Small writes (headers, then a short body or one event) must not wait on Nagle's algorithm.
        socket.setNoDelay(true);
        if (!socket.connecting) return;
        const timer = setTimeout(() => up.destroy(new Error(`no connection within ${CONNECT_TIMEOUT_MS} ms`)), CONNECT_TIMEOUT_MS);
        socket.once('connect', () => clearTimeout(timer));
        socket.once('close', () => clearTimeout(timer));
      });
      up.on('error', (err) => {
        if (answered) return void res.destroy();
        this.owners.delete(owner);
        fail(`replica ${owner} at ${target.origin} does not answer (${describeError(err)})`);
        resolve('owner-gone');
      });
      // The client left (closed its SSE stream, cancelled): close the hop to the owner too.
      res.once('close', () => {
        if (!res.writableFinished) up.destroy();
      });
      if (body) up.end(body);
      else req.pipe(up);
    });
  }

  /** Close the kept-alive connections. */
  close(): void {
    this.agent.destroy();
  }
}
