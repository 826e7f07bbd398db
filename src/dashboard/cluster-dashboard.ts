/**
 * The dashboard of a clustered gateway (docs/cluster.md): the live replicas
 * of one cluster workspace, as `status --cluster` lists them from Redis, with
 * their sessions in all and per principal, kept live. Replicas announce
 * themselves into Redis, so the page is a polled one (polled.ts). The
 * singleton servers' lease holders are shown on their replica's row and in
 * a table of their own.
 */
import { DOM_BUILDER_JS } from './dom-builder.js';
import type { Dashboard } from './http.js';
import { startPolledDashboard, type PolledDashboardOptions } from './polled.js';
import { DASHBOARD_CSS, TABLE_PAGE_CSS } from './styles.js';

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
${DOM_BUILDER_JS}
  function ago(iso) {
    var s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
    return s < 60 ? s + ' s ago' : s < 3600 ? Math.round(s / 60) + ' min ago' : Math.round(s / 3600) + ' h ago';
  }
  function render(reading) {
    var down = document.getElementById('down');
    var list = document.getElementById('replicas');
    var summary = document.getElementById('summary');
    document.body.setAttribute('data-cluster', reading.status ? 'up' : 'down');
    down.hidden = !!reading.status;
    down.textContent = reading.status ? '' : (reading.error || 'Redis cannot be read') + (reading.hint ? ' (' + reading.hint + ')' : '');
    list.textContent = '';
    summary.textContent = '';
    var st = reading.status;
    if (!st) return;
    document.getElementById('where').textContent = 'workspace ' + st.workspaceId + ' · Redis ' + st.redis;
    var sessions = st.replicas.reduce(function (n, r) { return n + r.sessions; }, 0);
    function stat(kind, n, label) {
      summary.appendChild(h('div', { className: 'stat', 'data-kind': kind }, [h('div', { className: 'n', text: String(n) }), h('div', { className: 'l', text: label })]));
    }
    stat('replicas', st.replicas.length, 'live replicas');
    stat('sessions', sessions, 'sessions');
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
        h('td', { text: ago(r.startedAt), title: r.startedAt }),
        h('td', { text: ago(r.at), title: r.at }),
        h('td', { className: 'leases' }, held.length ? held.map(function (l) {
          return h('span', { className: 'sid', 'data-server': l.server, text: l.server + ' · token ' + l.token });
        }) : [h('span', { className: 'muted', text: '-' })])
      ]);
    });
    list.appendChild(h('section', { className: 'ws' }, [
      h('h2', { text: st.replicas.length + ' replica' + (st.replicas.length === 1 ? '' : 's') + ', ' + sessions + ' session' + (sessions === 1 ? '' : 's') }),
      h('table', null, [
        h('thead', null, [h('tr', null, ['replica', 'url', 'host', 'pid', 'sessions', 'sessions per principal', 'started', 'seen', 'singletons held'].map(function (t) { return h('th', { text: t }); }))]),
        h('tbody', null, rows)
      ])
    ]));
    if (leases.length === 0) return;
    // Where each singleton server runs: the replica holding its lease (docs/cluster.md, singletons).
    list.appendChild(h('section', { className: 'ws', id: 'leases' }, [
      h('h2', { text: leases.length + ' singleton lease' + (leases.length === 1 ? '' : 's') }),
      h('table', null, [
        h('thead', null, [h('tr', null, ['singleton', 'holder', 'url', 'token', 'expires'].map(function (t) { return h('th', { text: t }); }))]),
        h('tbody', null, leases.map(function (l) {
          return h('tr', { 'data-singleton': l.server }, [
            h('td', { className: 'mono', text: l.server }),
            h('td', { className: 'mono holder', text: l.replica }),
            h('td', { className: 'mono', text: l.url || '(not announced: gone?)' }),
            h('td', { className: 'mono token', text: String(l.token) }),
            h('td', { text: 'in ' + (l.ttlMs / 1000).toFixed(1) + ' s unless renewed' })
          ]);
        }))
      ])
    ]));
  }
  var live = document.getElementById('live');
  var liveText = document.getElementById('live-text');
  var events = new EventSource('/events?token=' + encodeURIComponent(token));
  events.onopen = function () { live.setAttribute('data-live', 'open'); liveText.textContent = 'live'; };
  events.onerror = function () { live.setAttribute('data-live', 'lost'); liveText.textContent = 'reconnecting…'; };
  events.addEventListener('cluster', function (e) { render(JSON.parse(e.data)); });
})();
`;

function clusterPage(nonce: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>mcp-reconciler · cluster</title>
<link rel="icon" href="data:,">
<style nonce="${nonce}">${DASHBOARD_CSS}${TABLE_PAGE_CSS}</style>
</head>
<body>
<header class="top">
  <div class="brand"><span class="mark" aria-hidden="true"></span><span class="name">mcp-reconciler</span><span class="sub">cluster</span></div>
  <div class="root" id="where"></div>
  <div class="live" id="live" data-live="connecting" role="status"><span class="dot"></span><span id="live-text">connecting…</span></div>
</header>
<section class="summary" id="summary" aria-label="summary"></section>
<div class="down" id="down" role="alert" hidden></div>
<main class="workspaces" id="replicas" aria-label="replicas"></main>
<script nonce="${nonce}">${CLUSTER_CLIENT_JS}</script>
</body>
</html>
`;
}

/**
 * Serve the cluster's dashboard on 127.0.0.1 with the guards of http.ts.
 * `read` lists the live replicas (rejecting when Redis cannot be read).
 * Routes: `GET /` the page, `GET /events` (`cluster` events), `GET /api/cluster`.
 */
export function startClusterDashboard(read: () => Promise<ClusterOverview>, opts: PolledDashboardOptions = {}): Promise<Dashboard> {
  return startPolledDashboard('cluster', read, clusterPage, opts);
}
