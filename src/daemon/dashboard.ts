/**
 * The dashboard of the machine-wide daemon (docs/daemon.md): its workspaces,
 * the sessions attached to each, and which session holds which server, as
 * `status --shared` prints them, kept live. The daemon answers one status
 * request per connection, so the page is a polled one (src/dashboard/polled.ts).
 */
import type { Dashboard } from '../dashboard/http.js';
import { polledPage } from '../dashboard/html-page.js';
import { startPolledDashboard, type PolledDashboardOptions } from '../dashboard/polled.js';
import { DAEMON_CLIENT_JS } from './dashboard-client.js';
import type { DaemonStatus } from './protocol.js';

/** The daemon page, with `nonce` on its style and script. */
function daemonPage(nonce: string): string {
  return polledPage(nonce, { title: 'daemon', sub: 'shared daemon', rootId: 'socket', rootTitle: 'daemon socket', meta: true, listId: 'workspaces', script: DAEMON_CLIENT_JS });
}

/**
 * Serve the daemon's dashboard on 127.0.0.1 with the same guards as the
 * controller's (token, loopback Host). `read` asks the daemon for its status
 * (rejecting when none answers). Routes: `GET /` the page, `GET /events` the
 * SSE stream (`daemon` events), `GET /api/daemon` one reading.
 */
export function startDaemonDashboard(read: () => Promise<DaemonStatus>, opts: PolledDashboardOptions = {}): Promise<Dashboard> {
  return startPolledDashboard('daemon', read, daemonPage, opts);
}
