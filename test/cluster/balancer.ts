/**
 * A stand-in for the load balancer in front of the replicas: a reverse proxy
 * on 127.0.0.1 that is NOT sticky. A request without `Mcp-Session-Id` (an
 * initialize) goes to {@link TestBalancer.opener}, every other one to
 * {@link TestBalancer.target}, so a session opened on one replica has its
 * requests land on another. Streams are piped both ways.
 */
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export class TestBalancer {
  private server: Server | undefined;
  /** Base URL of the balancer's `/mcp`. */
  url = '';
  /** Requests sent to each replica URL. */
  readonly hits = new Map<string, number>();

  constructor(
    /** The replica URL (`http://127.0.0.1:P/mcp`) initializes go to. */
    public opener: string,
    /** The replica URL every request of an open session goes to. */
    public target: string,
  ) {}

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const to = new URL(req.headers['mcp-session-id'] === undefined ? this.opener : this.target);
      this.hits.set(to.href, (this.hits.get(to.href) ?? 0) + 1);
      const headers = { ...req.headers, host: to.host };
      const up = request({ hostname: to.hostname, port: to.port, path: `${to.pathname}${new URL(req.url ?? '/', 'http://x').search}`, method: req.method, headers }, (ur) => {
        res.writeHead(ur.statusCode ?? 502, ur.headers);
        res.flushHeaders();
        ur.pipe(res);
        ur.once('aborted', () => res.destroy());
      });
      up.on('error', () => (res.headersSent ? res.destroy() : res.writeHead(502).end()));
      res.once('close', () => {
        if (!res.writableFinished) up.destroy();
      });
      req.pipe(up);
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/mcp`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
