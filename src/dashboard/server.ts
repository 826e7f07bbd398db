/**
 * The live dashboard: a plain `node:http` server on 127.0.0.1 that serves one
 * self-contained page (every server drawn as its state chart, current state
 * highlighted, the tail of its log below), pushes changes over Server-Sent
 * Events, and accepts approve / reject / reconnect / sign-in and the on/off
 * switch from that page; each server's whole log is a page of its own. See
 * security.ts for the request guards, http.ts for the shell.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { McpController } from '../controller/controller.js';
import type { LogRecord } from '../controller/server-logs.js';
import { ErrorCode, McpReconcilerError, describeError } from '../errors.js';
import { DashboardHub, type HubMessage } from './hub.js';
import { allowPost, openSse, readJson, send, sendError, sendJson, serveGuarded, sse, type Dashboard, type DashboardOptions } from './http.js';
import { logPage } from './log-page.js';
import { dashboardPage, chartSvg } from './page.js';
import { dashboardView } from './view.js';

export type { Dashboard, DashboardOptions };

/** Largest log page: the newest records up to this many (a log holds two files of 1 MiB by default). */
const MAX_LOG_PAGE_RECORDS = 50_000;

/**
 * Serve the live dashboard for `controller` on 127.0.0.1 (port 0 = a free
 * one). Resolves once listening. Every request must carry the returned token
 * (`?token=` or the `x-dashboard-token` header) and a loopback Host header;
 * POSTs must also be same-origin. Routes: `GET /` the page, `GET /events`
 * the SSE stream (status, feed, each server's log tail), `GET /api/status`,
 * `GET /log?server=NAME` (the server's whole log as a page of text),
 * `POST /api/approve {server, persist?}`, `POST /api/reject {server}`,
 * `POST /api/reconnect {server}`, `POST /api/enable {server, on, tools?}`
 * (`setEnabled`, persisted), `POST /api/auth {server}` (starts an OAuth
 * sign-in and answers with the URL to open).
 */
export async function startDashboard(controller: McpController, opts: DashboardOptions = {}): Promise<Dashboard> {
  const svg = await chartSvg();
  const hub = new DashboardHub(controller);
  const streams = new Set<ServerResponse>();

  const handle = async (req: IncomingMessage, res: ServerResponse, url: URL, port: number): Promise<void> => {
    const route = `${req.method ?? 'GET'} ${url.pathname}`;
    switch (route) {
      case 'GET /': {
        const nonce = randomBytes(16).toString('base64');
        send(res, 200, dashboardPage({ svg, nonce }), 'text/html; charset=utf-8', {
          'content-security-policy': `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
        });
        return;
      }
      case 'GET /api/status':
        sendJson(res, 200, dashboardView(controller));
        return;
      case 'GET /events':
        openStream(res);
        return;
      case 'GET /log':
        await fullLog(res, url);
        return;
      case 'POST /api/approve':
      case 'POST /api/reject':
      case 'POST /api/reconnect':
        await act(req, res, port, url.pathname.slice('/api/'.length) as 'approve' | 'reject' | 'reconnect');
        return;
      case 'POST /api/enable':
        await enable(req, res, port);
        return;
      case 'POST /api/auth':
        await signIn(req, res, port);
        return;
      default:
        if (url.pathname === '/' || url.pathname === '/events' || url.pathname === '/log' || url.pathname.startsWith('/api/')) {
          send(res, 405, `Method ${req.method} not allowed on ${url.pathname}\n`);
        } else {
          send(res, 404, `Not found: ${url.pathname}\n`);
        }
    }
  };

  const openStream = (res: ServerResponse): void => {
    openSse(res);
    sse(res, 'hello', { view: dashboardView(controller), feed: hub.recent(), logs: hub.logTails() });
    streams.add(res);
    const off = hub.subscribe((msg: HubMessage) => {
      if (msg.type === 'status') sse(res, 'status', msg.view);
      else if (msg.type === 'feed') sse(res, 'feed', msg.entry);
      else sse(res, 'log', { server: msg.server, records: msg.records });
    });
    res.on('close', () => {
      off();
      streams.delete(res);
    });
  };

  /**
   * `server`'s whole log (the newest {@link MAX_LOG_PAGE_RECORDS} records),
   * rendered as escaped text on a page without script: what a server wrote
   * is shown, never interpreted.
   */
  const fullLog = async (res: ServerResponse, url: URL): Promise<void> => {
    const server = url.searchParams.get('server') ?? '';
    if (server === '') {
      send(res, 400, 'Bad request: name the server, as in /log?server=NAME&token=…\n');
      return;
    }
    const records: LogRecord[] = [];
    for await (const r of controller.logs(server)) {
      records.push(r);
      if (records.length > MAX_LOG_PAGE_RECORDS) records.shift();
    }
    if (records.length === 0 && !controller.status().some((row) => row.name === server)) {
      send(res, 404, `Not found: no MCP server "${server}" and no log of it in this workspace.\n`);
      return;
    }
    const nonce = randomBytes(16).toString('base64');
    send(res, 200, logPage({ server, records, nonce }), 'text/html; charset=utf-8', {
      'content-security-policy': `default-src 'none'; style-src 'nonce-${nonce}'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
    });
  };

  /**
   * A guarded POST about one server: same-origin only, a JSON body naming
   * `server`; `handle` returns the JSON answer, and a user-facing error
   * becomes `{error, hint}` with its status.
   */
  const postAbout = async (
    req: IncomingMessage,
    res: ServerResponse,
    port: number,
    handle: (server: string, body: Record<string, unknown>) => Promise<Record<string, unknown>>,
  ): Promise<void> => {
    if (!allowPost(req, res, port)) return;
    try {
      const body = await readJson(req);
      const server = body.server;
      if (typeof server !== 'string' || server === '') {
        throw new McpReconcilerError(ErrorCode.Usage, 'missing "server" in the request body', { hint: 'send {"server":"<name>"}' });
      }
      sendJson(res, 200, { ok: true, ...(await handle(server, body)) });
    } catch (err) {
      sendError(res, err);
    }
  };

  const act = (req: IncomingMessage, res: ServerResponse, port: number, action: 'approve' | 'reject' | 'reconnect'): Promise<void> =>
    postAbout(req, res, port, async (server, body) => {
      if (action === 'approve') {
        const persist = body.persist !== false;
        hub.add({ kind: 'action', server, text: persist ? 'approved from the dashboard' : 'approved for this session from the dashboard' });
        await controller.approve(server, { persist });
      } else if (action === 'reject') {
        hub.add({ kind: 'action', server, text: 'rejected from the dashboard' });
        await controller.reject(server);
      } else {
        hub.add({ kind: 'action', server, text: 'reconnect requested from the dashboard' });
        await controller.reconnect(server);
      }
      return {};
    });

  /** The card's switch: `setEnabled`, persisted where `enable` / `disable` keep it (docs/manage.md). */
  const enable = (req: IncomingMessage, res: ServerResponse, port: number): Promise<void> =>
    postAbout(req, res, port, async (server, body) => {
      if (typeof body.on !== 'boolean') {
        throw new McpReconcilerError(ErrorCode.Usage, 'missing "on" in the request body', { hint: 'send {"server":"<name>","on":true} or "on":false' });
      }
      const tools = body.tools;
      if (tools !== undefined && !(Array.isArray(tools) && tools.every((t) => typeof t === 'string' && t !== ''))) {
        throw new McpReconcilerError(ErrorCode.Usage, '"tools" must be a list of tool names', { hint: 'send {"server":"<name>","on":false,"tools":["tool"]}' });
      }
      const result = await controller.setEnabled(server, body.on, tools ? { tools: tools as string[] } : {});
      const what = result.tools ? `tool${result.tools.length === 1 ? '' : 's'} ${result.tools.join(', ')}` : 'server';
      const where = result.file ? ` (kept in ${result.file})` : result.where === 'session' ? ' (for this session)' : '';
      hub.add({ kind: 'action', server, text: `${what} ${body.on ? 'enabled' : 'disabled'} from the dashboard${where}` });
      return { result };
    });

  /**
   * Start an OAuth sign-in for a remote server and answer with the URL the
   * user must open (or none, when the flow needed no browser: client
   * credentials, a refresh). The flow goes on after the answer: the browser
   * comes back to the loopback receiver, the server leaves `needs_auth`, and
   * the page hears it over the event stream like any other change.
   */
  const signIn = (req: IncomingMessage, res: ServerResponse, port: number): Promise<void> =>
    postAbout(req, res, port, async (name) => {
      hub.add({ kind: 'action', server: name, text: 'sign-in started from the dashboard' });
      const url = await new Promise<string | undefined>((resolve, reject) => {
        let answered = false;
        controller
          .authenticate(name, {
            // Not awaited by the flow: the page opens the URL, the redirect completes it.
            onAuthorizationUrl: (_server, authUrl) => {
              answered = true;
              resolve(authUrl.href);
            },
          })
          .then(
            () => {
              hub.add({ kind: 'action', server: name, text: 'signed in from the dashboard' });
              if (!answered) resolve(undefined);
            },
            (err: unknown) => {
              if (!answered) reject(err);
              else hub.add({ kind: 'action', server: name, text: `sign-in did not complete: ${describeError(err)}` });
            },
          );
      });
      return url ? { url } : {};
    });

  return serveGuarded(opts, handle, () => {
    hub.close();
    for (const res of streams) res.end();
    streams.clear();
  });
}
