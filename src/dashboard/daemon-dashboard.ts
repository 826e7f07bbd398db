/**
 * The dashboard of the machine-wide daemon (docs/daemon.md): its workspaces,
 * the sessions attached to each, and which session holds which server, as
 * `status --shared` prints them, kept live. The daemon answers one status
 * request per connection, so the page is a polled one (polled.ts).
 */
import { DAEMON_CLIENT_JS } from './daemon-client.js';
import type { Dashboard } from './http.js';
import { startPolledDashboard, type PolledDashboardOptions } from './polled.js';
import { DASHBOARD_CSS, TABLE_PAGE_CSS } from './styles.js';

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

/** The daemon page, with `nonce` on its style and script. */
function daemonPage(nonce: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>mcp-reconciler · daemon</title>
<link rel="icon" href="data:,">
<style nonce="${nonce}">${DASHBOARD_CSS}${TABLE_PAGE_CSS}</style>
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
export function startDaemonDashboard(read: () => Promise<DaemonOverview>, opts: PolledDashboardOptions = {}): Promise<Dashboard> {
  return startPolledDashboard('daemon', read, daemonPage, opts);
}
