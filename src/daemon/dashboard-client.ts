import { PAGE_SCRIPT_JS } from '../dashboard/page-script.js';

/**
 * The daemon page's script, inlined by dashboard.ts: plain ES2020, DOM
 * built with textContent only (roots, client names and errors never become
 * markup), redrawn from the `daemon` events of the SSE stream. A string for
 * the same reasons as src/dashboard/client.ts; no template literals inside.
 */
export const DAEMON_CLIENT_JS = String.raw`
(function () {
  'use strict';
  var token = new URLSearchParams(location.search).get('token') || '';

${PAGE_SCRIPT_JS}
  function short(id) { return String(id).slice(0, 8); }

  // A word for a POSIX shell: as is when plain, else single-quoted.
  function shellWord(text) {
    return /^[A-Za-z0-9_@%+=:,.\/-]+$/.test(text) ? text : "'" + String(text).replace(/'/g, "'\\''") + "'";
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
    var list = document.getElementById('workspaces');
    var meta = document.getElementById('meta');
    var summary = document.getElementById('summary');
    var st = showReading(reading, 'data-daemon', 'no daemon');
    list.textContent = '';
    meta.textContent = '';
    summary.textContent = '';
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
    stat(summary, 'workspaces', st.workspaces.length, 'workspaces');
    stat(summary, 'sessions', sessions, 'sessions');
    stat(summary, 'servers', servers, 'servers');
    stat(summary, 'connected', running, 'server processes');
    if (st.workspaces.length === 0) list.appendChild(h('p', { className: 'empty', text: 'No workspace open: the daemon serves no session now.' }));
    st.workspaces.forEach(function (w) { list.appendChild(workspace(w)); });
  }

  liveEvents(token).addEventListener('daemon', function (e) { render(JSON.parse(e.data)); });
})();
`;
