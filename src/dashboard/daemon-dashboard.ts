/**
 * The dashboard of the machine-wide daemon (docs/daemon.md): its workspaces,
 * the sessions attached to each, and which session holds which server, as
 * `status --shared` prints them, kept live. The daemon answers one status
 * request per connection, so this page's server asks it again every
 * `pollMs` while a page is open and pushes a new view over Server-Sent
 * Events only when something changed.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describeError, McpReconcilerError } from '../errors.js';
import { openSse, send, sendJson, serveGuarded, sse, type Dashboard, type DashboardOptions } from './http.js';
import { DAEMON_CLIENT_JS } from './daemon-client.js';
import { DASHBOARD_CSS } from './styles.js';

/** What the page shows of the daemon: the fields of its status answer it needs (src/daemon/protocol.ts `DaemonStatus`). */
export interface DaemonOverview {
  pid: number;
  build: string;
  version: string;
  socket: string;
  /** Epoch ms. */
  startedAt: number;
  idleTimeoutMs: number;
  workspaces: {
    key: string;
    root: string;
    sessions: { id: string; pid: number; client?: string; servers?: string[]; since: number }[];
    servers: { name: string; state: string; pid?: number; heldBy: string[] }[];
  }[];
}

/** One reading: the daemon's status, or why there is none (no daemon running, another build). */
export interface DaemonReading {
  status?: DaemonOverview;
  error?: string;
  hint?: string;
  /** When it was read (ISO time). */
  at: string;
}

/** Options of {@link startDaemonDashboard}. */
export interface DaemonDashboardOptions extends DashboardOptions {
  /** How often the daemon is asked while a page is open; default 1000 ms. */
  pollMs?: number;
}

const DAEMON_CSS = `
.meta { padding: 14px 24px 0; color: var(--muted); font-size: 13px; display: flex; flex-wrap: wrap; gap: 6px 18px; }
.meta b { color: var(--text); font-weight: 600; }
.workspaces { display: flex; flex-direction: column; gap: 16px; padding: 16px 24px 24px; }
.ws { background: var(--panel); border: 1px solid var(--line); border-radius: var(--radius); padding: 14px 16px; }
.ws h2 { margin: 0 0 10px; font-size: 15px; font-family: ui-monospace, Menlo, Consolas, "Liberation Mono", monospace; overflow-wrap: anywhere; }
.ws h3 { margin: 12px 0 6px; font-size: 12px; text-transform: uppercase; letter-spacing: .6px; color: var(--muted); }
.ws table { border-collapse: collapse; width: 100%; font-size: 13px; }
.ws th { text-align: left; color: var(--muted); font-weight: 500; padding: 4px 10px 4px 0; border-bottom: 1px solid var(--line); }
.ws td { padding: 5px 10px 5px 0; border-bottom: 1px solid #f1f5f9; vertical-align: top; }
.ws td.mono, .ws .sid { font-family: ui-monospace, Menlo, Consolas, "Liberation Mono", monospace; font-size: 12px; }
.sid { display: inline-block; margin: 0 6px 2px 0; padding: 1px 7px; border-radius: 6px; background: var(--busy-soft); color: #1e3a8a; }
.state { font-size: 12px; font-weight: 600; padding: 1px 9px; border-radius: 999px; background: var(--off-soft); color: var(--off); }
.state[data-state="connected"], .state[data-state="dormant"] { background: var(--ok-soft); color: var(--ok); }
.state[data-state="failed"] { background: var(--bad-soft); color: var(--bad); }
.state[data-state="pending_approval"] { background: var(--wait-soft); color: var(--wait); }
.state[data-state="connecting"], .state[data-state="reconnecting"] { background: var(--busy-soft); color: var(--busy); }
.down { margin: 16px 24px; padding: 12px 14px; border-radius: var(--radius); background: var(--wait-soft); border: 1px solid #fcd34d; color: #78350f; }
.down[hidden] { display: none; }
`;

/** The daemon page, with `nonce` on its style and script. */
function daemonPage(nonce: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>mcp-reconciler · daemon</title>
<link rel="icon" href="data:,">
<style nonce="${nonce}">${DASHBOARD_CSS}${DAEMON_CSS}</style>
</head>
<body>
<header class="top">
  <div class="brand"><span class="mark" aria-hidden="true"></span><span class="name">mcp-reconciler</span><span class="sub">shared daemon</span></div>
  <div class="root" id="socket" title="daemon socket"></div>
  <div class="live" id="live" data-live="connecting" role="status"><span class="dot"></span><span id="live-text">connecting…</span></div>
</header>
<div class="meta" id="meta"></div>
<section class="summary" id="summary" aria-label="summary"></section>
<div class="down" id="down" role="alert" hidden></div>
<main class="workspaces" id="workspaces" aria-label="workspaces"></main>
<script nonce="${nonce}">${DAEMON_CLIENT_JS}</script>
</body>
</html>
`;
}

/**
 * Serve the daemon's dashboard on 127.0.0.1 with the same guards as the
 * controller's (token, loopback Host). `read` asks the daemon for its status
 * (rejecting when none answers). Routes: `GET /` the page, `GET /events` the
 * SSE stream (`daemon` events), `GET /api/daemon` one reading.
 */
export async function startDaemonDashboard(read: () => Promise<DaemonOverview>, opts: DaemonDashboardOptions = {}): Promise<Dashboard> {
  const pollMs = opts.pollMs ?? 1000;
  const streams = new Set<ServerResponse>();
  let last: DaemonReading | undefined;
  let lastText = '';
  let looping = false;
  let closed = false;
  let wake: (() => void) | undefined;
  let timer: NodeJS.Timeout | undefined;

  const readOnce = async (): Promise<DaemonReading> => {
    try {
      return { status: await read(), at: new Date().toISOString() };
    } catch (err) {
      return { error: describeError(err), ...(err instanceof McpReconcilerError && err.hint ? { hint: err.hint } : {}), at: new Date().toISOString() };
    }
  };

  /** While a page is open: ask the daemon, and tell every page when the answer changed (the reading time aside). */
  const loop = async (): Promise<void> => {
    looping = true;
    try {
      while (!closed && streams.size > 0) {
        const reading = await readOnce();
        if (closed) return;
        last = reading;
        const text = JSON.stringify({ ...reading, at: undefined });
        if (text !== lastText) {
          lastText = text;
          for (const res of streams) sse(res, 'daemon', reading);
        }
        await new Promise<void>((resolve) => {
          wake = resolve;
          timer = setTimeout(resolve, pollMs);
        });
      }
    } finally {
      looping = false;
    }
  };

  const handle = async (req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> => {
    const route = `${req.method ?? 'GET'} ${url.pathname}`;
    switch (route) {
      case 'GET /': {
        const nonce = randomBytes(16).toString('base64');
        send(res, 200, daemonPage(nonce), 'text/html; charset=utf-8', {
          'content-security-policy': `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
        });
        return;
      }
      case 'GET /api/daemon':
        sendJson(res, 200, await readOnce());
        return;
      case 'GET /events': {
        openSse(res);
        streams.add(res);
        res.on('close', () => streams.delete(res));
        if (looping) {
          // The loop's next change reaches this page too; until then, the last reading.
          if (last) sse(res, 'daemon', last);
        } else {
          lastText = '';
          void loop();
        }
        return;
      }
      default:
        if (url.pathname === '/' || url.pathname === '/events' || url.pathname.startsWith('/api/')) {
          send(res, 405, `Method ${req.method} not allowed on ${url.pathname}\n`);
        } else {
          send(res, 404, `Not found: ${url.pathname}\n`);
        }
    }
  };

  return serveGuarded(opts, handle, () => {
    closed = true;
    clearTimeout(timer);
    wake?.();
    for (const res of streams) res.end();
    streams.clear();
  });
}
