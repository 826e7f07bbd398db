import { DOM_BUILDER_JS } from './dom-builder.js';

/**
 * The daemon page's script, inlined by daemon-dashboard.ts: plain ES2020, DOM
 * built with textContent only (roots, client names and errors never become
 * markup), redrawn from the `daemon` events of the SSE stream. A string for
 * the same reasons as client.ts; no template literals inside.
 */
export const DAEMON_CLIENT_JS = String.raw`
(function () {
  'use strict';
  var token = new URLSearchParams(location.search).get('token') || '';

${DOM_BUILDER_JS}
  function short(id) { return String(id).slice(0, 8); }

  // A word for a POSIX shell: as is when plain, else single-quoted.
  function shellWord(text) {
    return /^[A-Za-z0-9_@%+=:,.\/-]+$/.test(text) ? text : "'" + String(text).replace(/'/g, "'\\''") + "'";
  }

  function ago(ms) {
    var s = Math.max(0, Math.round((Date.now() - ms) / 1000));
    if (s < 60) return s + ' s ago';
    if (s < 3600) return Math.round(s / 60) + ' min ago';
    return Math.round(s / 3600) + ' h ago';
  }

  function table(head, rows) {
    return h('table', null, [
      h('thead', null, [h('tr', null, head.map(function (t) { return h('th', { text: t }); }))]),
      h('tbody', null, rows)
    ]);
  }

  function workspace(w) {
    var byId = new Map(w.sessions.map(function (s) { return [s.id, s]; }));
    var sessions = w.sessions.map(function (s) {
      return h('tr', { 'data-session': s.id }, [
        h('td', null, [h('span', { className: 'sid', text: short(s.id), title: s.id })]),
        h('td', { className: 'mono', text: String(s.pid) }),
        h('td', { text: s.client || '-' }),
        h('td', { text: s.servers ? s.servers.join(', ') : 'all' }),
        h('td', { text: ago(s.since), title: new Date(s.since).toISOString() })
      ]);
    });
    var servers = w.servers.map(function (r) {
      var held = h('td', { className: 'held' }, r.heldBy.length === 0 ? [h('span', { className: 'muted', text: 'no session' })] : r.heldBy.map(function (id) {
        var s = byId.get(id);
        return h('span', { className: 'sid', 'data-session': id, text: short(id) + (s ? ' · pid ' + s.pid : ''), title: id });
      }));
      // The daemon watches the approvals file: approving from any terminal starts it for every session.
      var fix = r.state === 'pending_approval' ? h('code', { className: 'fix', text: 'mcp-reconciler approve ' + shellWord(r.name) + ' --cwd ' + shellWord(w.root) }) : null;
      return h('tr', { 'data-server': r.name }, [
        h('td', { text: r.name }),
        h('td', null, [h('span', { className: 'state', 'data-state': r.state, text: r.state }), fix ? h('div', null, [fix]) : null]),
        h('td', { className: 'mono', text: r.pid === undefined ? '-' : String(r.pid) }),
        held
      ]);
    });
    return h('section', { className: 'ws', 'data-workspace': w.key }, [
      h('h2', { text: w.root }),
      h('h3', { text: w.sessions.length + ' session' + (w.sessions.length === 1 ? '' : 's') }),
      w.sessions.length ? table(['session', 'pid', 'client', 'servers it may use', 'since'], sessions) : h('p', { className: 'muted', text: 'no session attached' }),
      h('h3', { text: 'servers and the sessions that hold them' }),
      w.servers.length ? table(['server', 'state', 'pid', 'held by'], servers) : h('p', { className: 'muted', text: 'no server configured' })
    ]);
  }

  function render(reading) {
    var down = document.getElementById('down');
    var list = document.getElementById('workspaces');
    var meta = document.getElementById('meta');
    var summary = document.getElementById('summary');
    document.body.setAttribute('data-daemon', reading.status ? 'up' : 'down');
    down.hidden = !!reading.status;
    down.textContent = reading.status ? '' : (reading.error || 'no daemon') + (reading.hint ? ' (' + reading.hint + ')' : '');
    list.textContent = '';
    meta.textContent = '';
    summary.textContent = '';
    var st = reading.status;
    if (!st) return;
    document.getElementById('socket').textContent = st.socket;
    function item(label, value) { meta.appendChild(h('span', null, [label + ' ', h('b', { text: value })])); }
    item('daemon pid', String(st.pid));
    item('version', st.version + ' (build ' + st.build + ')');
    item('up since', new Date(st.startedAt).toLocaleString());
    item('exits after', Math.round(st.idleTimeoutMs / 1000) + ' s without a session');
    var sessions = 0, servers = 0, running = 0;
    st.workspaces.forEach(function (w) {
      sessions += w.sessions.length;
      servers += w.servers.length;
      running += w.servers.filter(function (r) { return r.pid !== undefined; }).length;
    });
    function stat(kind, n, label) {
      summary.appendChild(h('div', { className: 'stat', 'data-kind': kind }, [h('div', { className: 'n', text: String(n) }), h('div', { className: 'l', text: label })]));
    }
    stat('workspaces', st.workspaces.length, 'workspaces');
    stat('sessions', sessions, 'sessions');
    stat('servers', servers, 'servers');
    stat('connected', running, 'server processes');
    if (st.workspaces.length === 0) list.appendChild(h('p', { className: 'empty', text: 'No workspace open: the daemon serves no session now.' }));
    st.workspaces.forEach(function (w) { list.appendChild(workspace(w)); });
  }

  var live = document.getElementById('live');
  var liveText = document.getElementById('live-text');
  var events = new EventSource('/events?token=' + encodeURIComponent(token));
  events.onopen = function () { live.setAttribute('data-live', 'open'); liveText.textContent = 'live'; };
  events.onerror = function () { live.setAttribute('data-live', 'lost'); liveText.textContent = 'reconnecting…'; };
  events.addEventListener('daemon', function (e) { render(JSON.parse(e.data)); });
})();
`;
