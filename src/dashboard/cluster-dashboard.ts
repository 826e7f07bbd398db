/**
 * The dashboard of a clustered gateway (docs/cluster.md): the live replicas
 * of one cluster workspace, as `status --cluster` lists them from Redis, with
 * their sessions in all and per principal, kept live. Replicas announce
 * themselves into Redis, so the page is a polled one (polled.ts). The
 * singleton servers' lease holders are shown on their replica's row and in
 * a table of their own, and so are the principals' own controllers.
 */
import type { PrincipalStatus } from '../gateway/pool.js';
import type { Dashboard } from './http.js';
import { polledPage } from './html-page.js';
import { PAGE_SCRIPT_JS } from './page-script.js';
import { startPolledDashboard, type PolledDashboardOptions } from './polled.js';

/** What the page shows of a cluster workspace (src/cluster/replicas.ts `ReplicaInfo` per replica). */
export interface ClusterOverview {
  workspaceId: string;
  /** The Redis the replicas share, as given (`redis://…`, a socket path). */
  redis: string;
  replicas: {
    id: string;
    url: string;
    host: string;
    pid: number;
    sessions: number;
    principals: Record<string, number>;
    /** Its per-principal controllers by principal key: their sessions there and their servers' states (docs/cluster-principals.md). */
    controllers?: Record<string, PrincipalStatus>;
    /** ISO times: when it started, when it last announced itself. */
    startedAt: string;
    at: string;
  }[];
  /** The singleton servers' lease holders (`status --cluster`'s `leases`). */
  leases?: { server: string; replica: string; token: number; ttlMs: number; url?: string }[];
}

/** The page's script: plain ES2020, DOM built with textContent only, redrawn from `cluster` events. */
const CLUSTER_CLIENT_JS = String.raw`
(function () {
  'use strict';
  var token = new URLSearchParams(location.search).get('token') || '';
${PAGE_SCRIPT_JS}
  function render(reading) {
    var list = document.getElementById('replicas');
    var summary = document.getElementById('summary');
    var st = showReading(reading, 'data-cluster', 'Redis cannot be read');
    list.textContent = '';
    summary.textContent = '';
    if (!st) return;
    document.getElementById('where').textContent = 'workspace ' + st.workspaceId + ' · Redis ' + st.redis;
    var sessions = st.replicas.reduce(function (n, r) { return n + r.sessions; }, 0);
    stat(summary, 'replicas', st.replicas.length, 'live replicas');
    stat(summary, 'sessions', sessions, 'sessions');
    if (st.replicas.length === 0) { list.appendChild(h('p', { className: 'empty', text: 'No live replica of this workspace.' })); return; }
    var leases = st.leases || [];
    var rows = st.replicas.map(function (r) {
      var principals = Object.keys(r.principals).sort();
      var held = leases.filter(function (l) { return l.replica === r.id; });
      return h('tr', { 'data-replica': r.id }, [
        h('td', { className: 'mono', text: r.id }),
        h('td', { className: 'mono', text: r.url }),
        h('td', { text: r.host }),
        h('td', { className: 'mono', text: String(r.pid) }),
        h('td', { className: 'sessions', text: String(r.sessions) }),
        h('td', { className: 'principals' }, principals.length ? principals.map(function (p) {
          return h('span', { className: 'sid', 'data-principal': p, text: p + ' · ' + r.principals[p] });
        }) : [h('span', { className: 'muted', text: '-' })]),
        h('td', { text: ago(Date.parse(r.startedAt)), title: r.startedAt }),
        h('td', { text: ago(Date.parse(r.at)), title: r.at }),
        h('td', { className: 'leases' }, held.length ? held.map(function (l) {
          return h('span', { className: 'sid', 'data-server': l.server, text: l.server + ' · token ' + l.token });
        }) : [h('span', { className: 'muted', text: '-' })])
      ]);
    });
    list.appendChild(h('section', { className: 'ws' }, [
      h('h2', { text: st.replicas.length + ' replica' + (st.replicas.length === 1 ? '' : 's') + ', ' + sessions + ' session' + (sessions === 1 ? '' : 's') }),
      table(['replica', 'url', 'host', 'pid', 'sessions', 'sessions per principal', 'started', 'seen', 'singletons held'], rows)
    ]));
    // Each principal's own controller, per replica (docs/cluster-principals.md): its servers and their states.
    var owned = [];
    st.replicas.forEach(function (r) {
      Object.keys(r.controllers || {}).sort().forEach(function (p) { owned.push({ principal: p, replica: r.id, c: r.controllers[p] }); });
    });
    if (owned.length > 0) {
      list.appendChild(h('section', { className: 'ws', id: 'principals' }, [
        h('h2', { text: owned.length + ' principal controller' + (owned.length === 1 ? '' : 's') }),
        table(['principal', 'replica', 'sessions', 'servers'], owned.map(function (o) {
          var names = Object.keys(o.c.servers).sort();
          return h('tr', { 'data-principal': o.principal, 'data-replica': o.replica }, [
            h('td', { className: 'mono', text: o.principal }),
            h('td', { className: 'mono', text: o.replica }),
            h('td', { className: 'sessions', text: String(o.c.sessions) }),
            h('td', { className: 'servers' }, names.length ? names.map(function (n) {
              return h('span', { className: 'sid', 'data-server': n, 'data-state': o.c.servers[n], text: n + ' · ' + o.c.servers[n] });
            }) : [h('span', { className: 'muted', text: '-' })])
          ]);
        }))
      ]));
    }
    if (leases.length === 0) return;
    // Where each singleton server runs: the replica holding its lease (docs/cluster.md, singletons).
    list.appendChild(h('section', { className: 'ws', id: 'leases' }, [
      h('h2', { text: leases.length + ' singleton lease' + (leases.length === 1 ? '' : 's') }),
      table(['singleton', 'holder', 'url', 'token', 'expires'], leases.map(function (l) {
        return h('tr', { 'data-singleton': l.server }, [
          h('td', { className: 'mono', text: l.server }),
          h('td', { className: 'mono holder', text: l.replica }),
          h('td', { className: 'mono', text: l.url || '(not announced: gone?)' }),
          h('td', { className: 'mono token', text: String(l.token) }),
          h('td', { text: 'in ' + (l.ttlMs / 1000).toFixed(1) + ' s unless renewed' })
        ]);
      }))
    ]));
  }
  liveEvents(token).addEventListener('cluster', function (e) { render(JSON.parse(e.data)); });
})();
`;

function clusterPage(nonce: string): string {
  return polledPage(nonce, { title: 'cluster', sub: 'cluster', rootId: 'where', listId: 'replicas', script: CLUSTER_CLIENT_JS });
}

/**
 * Serve the cluster's dashboard on 127.0.0.1 with the guards of http.ts.
 * `read` lists the live replicas (rejecting when Redis cannot be read).
 * Routes: `GET /` the page, `GET /events` (`cluster` events), `GET /api/cluster`.
 */
export function startClusterDashboard(read: () => Promise<ClusterOverview>, opts: PolledDashboardOptions = {}): Promise<Dashboard> {
  return startPolledDashboard('cluster', read, clusterPage, opts);
}
