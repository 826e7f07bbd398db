import { PAGE_SCRIPT_JS } from './page-script.js';

/**
 * The dashboard page's script, inlined by page.ts. Plain ES2020 for the
 * browser, no framework. It builds DOM nodes with textContent only (server
 * names and errors never become markup), clones the inlined chart once per
 * server, and updates everything from the SSE stream — there is no polling.
 * Kept as a string because the project compiles without DOM types; it uses
 * no template literals so it can live inside one.
 */
export const CLIENT_JS = String.raw`
(function () {
  'use strict';
  var token = new URLSearchParams(location.search).get('token') || '';
  var cards = new Map();
  var template = document.getElementById('chart');
  var feedList = document.getElementById('feed');
  var FEED_MAX = 200;

${PAGE_SCRIPT_JS}
  function cloneChart() {
    var svg = template.content.firstElementChild.cloneNode(true);
    // ids must stay unique in the page: the chart's state ids become data-state.
    svg.querySelectorAll('[id]').forEach(function (el) {
      var id = el.getAttribute('id');
      if (id.indexOf('state-') === 0) el.setAttribute('data-state', id.slice(6));
      el.removeAttribute('id');
    });
    var box = (svg.getAttribute('viewBox') || '').split(/\s+/);
    if (box.length === 4) svg.style.maxWidth = Math.round(Number(box[2]) * 1.1) + 'px';
    svg.removeAttribute('width');
    svg.removeAttribute('height');
    svg.setAttribute('role', 'img');
    return svg;
  }

  function highlight(card, active) {
    card.chart.querySelectorAll('.current, .active').forEach(function (el) {
      el.classList.remove('current');
      el.classList.remove('active');
    });
    active.forEach(function (id, i) {
      var el = card.chart.querySelector('[data-state="' + CSS.escape(id) + '"]');
      if (el) el.classList.add(i === active.length - 1 ? 'current' : 'active');
    });
    card.chart.setAttribute('aria-label', 'state chart, current state ' + active.join(' > '));
  }

  function post(action, body, buttons) {
    buttons.forEach(function (b) { b.disabled = true; });
    return fetch('/api/' + action, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-dashboard-token': token },
      body: JSON.stringify(body)
    }).then(function (res) {
      return res.json().catch(function () { return {}; }).then(function (data) {
        if (!res.ok) throw new Error((data && data.error) || ('HTTP ' + res.status));
        return data;
      });
    }).catch(function (err) {
      var card = cards.get(body.server);
      if (card) { card.actionError.hidden = false; card.actionError.textContent = action + ' failed: ' + err.message; }
    }).finally(function () {
      buttons.forEach(function (b) { b.disabled = false; });
    });
  }

  function makeCard(name) {
    var title = h('h3', { text: name });
    var scope = h('span', { className: 'badge' });
    var pill = h('span', { className: 'pill' });
    var stateName = h('span', { className: 'state-name' });
    var actions = h('div', { className: 'actions' });
    var desc = h('p', { className: 'desc' });
    var facts = h('dl', { className: 'facts' });
    var tools = h('div', { className: 'tools' });
    var lastError = h('p', { className: 'error' });
    var actionError = h('p', { className: 'error' });
    var chart = h('div', { className: 'chart' }, [cloneChart()]);
    var info = h('div', { className: 'info' }, [facts, tools, lastError, actionError]);
    // The on/off switch (setEnabled, persisted): a checkbox, so it is not one of the card's action buttons.
    var toggle = h('input', { type: 'checkbox', role: 'switch', 'data-action': 'enable', 'aria-label': 'enable ' + name });
    var toggleText = h('span', { className: 'switch-text' });
    var toggleBox = h('label', { className: 'switch', title: 'switch this server on or off (kept in its config file, or the workspace state file)' }, [toggle, h('span', { className: 'slider' }), toggleText]);
    // The log tail: the newest lines; the link opens the whole log as a page of text.
    var logLines = h('ol', { className: 'log-lines' });
    var logLink = h('a', { text: 'full log', href: '/log?server=' + encodeURIComponent(name) + '&token=' + encodeURIComponent(token),
      target: '_blank', rel: 'noopener noreferrer', 'data-action': 'full-log' });
    var logBox = h('div', { className: 'log' }, [h('div', { className: 'log-head' }, [h('span', { text: 'log' }), logLink]), logLines]);
    logLines.title = 'open the full log';
    logLines.addEventListener('click', function () { window.open(logLink.href, '_blank', 'noopener'); });
    var el = h('article', { className: 'card', 'data-server': name }, [
      h('header', { className: 'card-head' }, [toggleBox, title, scope, pill, stateName, actions]),
      desc,
      h('div', { className: 'card-body' }, [info, chart]),
      logBox
    ]);
    lastError.hidden = true;
    actionError.hidden = true;
    var card = { el: el, scope: scope, pill: pill, stateName: stateName, actions: actions, desc: desc, facts: facts, tools: tools,
      lastError: lastError, actionError: actionError, chart: chart, actionsKey: '', toggle: toggle, toggleText: toggleText,
      logBox: logBox, logLines: logLines };
    toggle.addEventListener('change', function () {
      card.actionError.hidden = true;
      var on = toggle.checked;
      post('enable', { server: name, on: on }, [toggle]).then(function (data) {
        // Failed: the switch goes back to what the server is.
        if (!data) toggle.checked = !on;
      });
    });
    renderLog(card, []);
    return card;
  }

  // Control characters (terminal escapes, bidi overrides) shown as escapes, as the CLI prints them.
  function visible(text) {
    return String(text).replace(/[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, function (c) {
      return '\\u' + ('000' + c.charCodeAt(0).toString(16)).slice(-4);
    });
  }

  function renderLog(card, records) {
    card.logLines.textContent = '';
    card.logBox.setAttribute('data-empty', records.length === 0 ? 'true' : 'false');
    if (records.length === 0) { card.logLines.appendChild(h('li', { className: 'muted', text: 'no log lines yet' })); return; }
    records.forEach(function (r) {
      var t = new Date(r.time);
      var time = ('0' + t.getHours()).slice(-2) + ':' + ('0' + t.getMinutes()).slice(-2) + ':' + ('0' + t.getSeconds()).slice(-2);
      var origin = r.source === 'mcp' ? 'log:' + (r.level || 'info') : r.source === 'supervisor' && r.level && r.level !== 'info' ? 'supervisor:' + r.level : r.source;
      card.logLines.appendChild(h('li', { 'data-source': r.source, 'data-level': r.level }, [
        h('time', { text: time, datetime: r.time }), h('span', { className: 'src', text: origin }), h('span', { className: 'text', text: visible(r.text) })
      ]));
    });
    card.logLines.scrollTop = card.logLines.scrollHeight;
  }

  // Text with backtick-quoted commands, shown as code (built as nodes, never as markup).
  function withCode(text) {
    var frag = document.createDocumentFragment();
    String(text).split('\u0060').forEach(function (part, i) {
      if (part) frag.appendChild(i % 2 ? h('code', { text: part }) : document.createTextNode(part));
    });
    return frag;
  }

  function fact(dl, label, value, className) {
    if (value === undefined || value === null || value === '') return;
    dl.appendChild(h('dt', { text: label }));
    dl.appendChild(h('dd', { className: className }, [withCode(value)]));
  }

  function setActions(card, s) {
    var key = s.promptable ? 'prompt' : s.state === 'needs_auth' ? 'auth' : (s.state === 'failed' || s.state === 'reconnecting') ? 'reconnect' : '';
    if (key === card.actionsKey) return;
    card.actionsKey = key;
    card.actions.textContent = '';
    var buttons = [];
    function button(label, className, action, body, testId) {
      var b = h('button', { text: label, className: className, type: 'button', 'data-action': testId });
      b.addEventListener('click', function () { card.actionError.hidden = true; post(action, body, buttons); });
      buttons.push(b);
      card.actions.appendChild(b);
    }
    if (key === 'prompt') {
      button('Approve', 'primary', 'approve', { server: s.name, persist: true }, 'approve');
      button('Approve for session', '', 'approve', { server: s.name, persist: false }, 'approve-session');
      button('Reject', 'danger', 'reject', { server: s.name }, 'reject');
    } else if (key === 'auth') {
      // The sign-in page opens in a new tab; a link stays in the card in case the browser blocked it.
      var signIn = h('button', { text: 'Sign in', className: 'primary', type: 'button', 'data-action': 'sign-in' });
      signIn.addEventListener('click', function () {
        card.actionError.hidden = true;
        post('auth', { server: s.name }, buttons).then(function (data) {
          if (!data || !data.url || !/^https?:/i.test(data.url)) return;
          window.open(data.url, '_blank', 'noopener');
          var link = h('a', { text: 'Open the sign-in page', href: data.url, target: '_blank', rel: 'noopener noreferrer', 'data-action': 'sign-in-link' });
          card.actions.appendChild(link);
        });
      });
      buttons.push(signIn);
      card.actions.appendChild(signIn);
      button('Reconnect now', '', 'reconnect', { server: s.name }, 'reconnect');
    } else if (key === 'reconnect') {
      button('Reconnect now', '', 'reconnect', { server: s.name }, 'reconnect');
    }
  }

  function updateCard(card, s) {
    card.el.setAttribute('data-state', s.state);
    card.el.setAttribute('data-status', s.status);
    card.scope.textContent = s.scope || 'removed';
    card.pill.textContent = s.status;
    card.stateName.textContent = s.active.map(function (id) { return id.split('.').pop(); }).join(' › ');
    card.desc.textContent = s.description || '';
    card.desc.hidden = !s.description;
    card.facts.textContent = '';
    if (s.reasonText) fact(card.facts, 'why', s.reasonText, 'reason');
    if (s.fix) fact(card.facts, 'fix', s.fix, 'fix');
    fact(card.facts, 'source', s.sourceLabel || s.source, 'mono');
    fact(card.facts, 'generation', s.generation ? s.generation + (s.attempt ? ' (attempt ' + s.attempt + ')' : '') : '');
    fact(card.facts, 'pid', s.pid);
    if (s.tools.length > 0) fact(card.facts, 'tokens', s.tokens + ' (tool definitions)', 'tokens');
    card.tools.textContent = '';
    // Tools from the listing cache (a dormant or still-connecting server) are drawn apart.
    // Each tool has its own switch (setEnabled with tools, persisted); a tool switched off is listed as skipped, with its switch to bring it back.
    function toolSwitch(chip, tool, on) {
      if (!s.switchable) return chip;
      var box = h('input', { type: 'checkbox', 'data-action': 'tool-enable', 'data-tool': tool, 'aria-label': (on ? 'disable ' : 'enable ') + tool });
      box.checked = on;
      box.addEventListener('change', function () {
        card.actionError.hidden = true;
        post('enable', { server: s.name, on: box.checked, tools: [tool] }, [box]).then(function (data) { if (!data) box.checked = on; });
      });
      chip.insertBefore(box, chip.firstChild);
      return chip;
    }
    s.tools.forEach(function (t) {
      card.tools.appendChild(toolSwitch(h('span', s.cached ? { className: 'tool cached', text: t, title: 'from the listing cache; the server has not listed it in this session yet' } : { className: 'tool', text: t }), t, true));
    });
    (s.skippedTools || []).forEach(function (t) {
      var chip = h('span', { className: 'tool muted', text: t.rawName + ' (skipped)', title: t.reason });
      card.tools.appendChild(/^disabled by /.test(t.reason) ? toolSwitch(chip, t.rawName, false) : chip);
    });
    if (s.tools.length === 0 && s.state === 'connected') card.tools.appendChild(h('span', { className: 'muted', text: 'no tools' }));
    card.toggle.checked = s.enabled;
    card.toggle.disabled = !s.switchable;
    card.toggleText.textContent = s.enabled ? 'on' : s.disabledByLabel ? 'off · disabled by ' + s.disabledByLabel : 'off';
    card.lastError.hidden = !s.lastError;
    card.lastError.textContent = s.lastError ? 'last error: ' + s.lastError : '';
    setActions(card, s);
    highlight(card, s.active);
  }

  function renderSummary(servers) {
    var counts = { connected: 0, dormant: 0, connecting: 0, pending: 0, failed: 0, 'needs-auth': 0, disabled: 0 };
    var tools = 0;
    var tokens = 0;
    servers.forEach(function (s) { counts[s.status] = (counts[s.status] || 0) + 1; tools += s.tools.length; tokens += s.tokens || 0; });
    var summary = document.getElementById('summary');
    summary.textContent = '';
    stat(summary, 'servers', servers.length, 'servers');
    stat(summary, 'connected', counts.connected, 'connected');
    stat(summary, 'dormant', counts.dormant, 'dormant (start on first call)');
    stat(summary, 'pending', counts.pending, 'waiting for approval');
    stat(summary, 'connecting', counts.connecting, 'connecting');
    stat(summary, 'failed', counts.failed + counts['needs-auth'], 'failed / needs auth');
    stat(summary, 'tools', tools, 'tools registered');
    stat(summary, 'tokens', tokens, 'tokens of tool definitions');
    var promptable = servers.filter(function (s) { return s.promptable; }).map(function (s) { return s.name; });
    var notice = document.getElementById('notice');
    notice.hidden = promptable.length === 0;
    var names = promptable.map(function (n) { return '“' + n + '”'; }).join(', ');
    notice.textContent = promptable.length === 0 ? '' : promptable.length === 1
      ? 'MCP server ' + names + ' comes from a project or workspace file: it will not start until you approve it.'
      : 'MCP servers ' + names + ' come from project or workspace files: they will not start until you approve them.';
  }

  function render(view) {
    document.getElementById('root').textContent = view.root;
    var list = document.getElementById('servers');
    var seen = new Set();
    view.servers.forEach(function (s, i) {
      seen.add(s.name);
      var card = cards.get(s.name);
      if (!card) { card = makeCard(s.name); cards.set(s.name, card); renderLog(card, logs.get(s.name) || []); }
      updateCard(card, s);
      if (list.children[i + 1] !== card.el) list.insertBefore(card.el, list.children[i + 1] || null);
    });
    cards.forEach(function (card, name) { if (!seen.has(name)) { card.el.remove(); cards.delete(name); } });
    document.getElementById('empty').hidden = view.servers.length > 0;
    renderSummary(view.servers);
  }

  function addFeed(entry) {
    var t = new Date(entry.at);
    var time = ('0' + t.getHours()).slice(-2) + ':' + ('0' + t.getMinutes()).slice(-2) + ':' + ('0' + t.getSeconds()).slice(-2);
    var li = h('li', { 'data-kind': entry.kind, 'data-state': entry.state }, [
      h('time', { text: time, datetime: entry.at }),
      h('span', { className: 'who', text: entry.server || (entry.kind === 'approval' ? 'approvals' : entry.kind === 'config-error' ? 'config' : '') }),
      h('span', { className: 'what', text: entry.text })
    ]);
    feedList.insertBefore(li, feedList.firstChild);
    while (feedList.children.length > FEED_MAX) feedList.removeChild(feedList.lastChild);
  }

  var events = liveEvents(token);
  var logs = new Map();
  events.addEventListener('hello', function (e) {
    var data = JSON.parse(e.data);
    feedList.textContent = '';
    data.feed.forEach(addFeed);
    logs = new Map(Object.keys(data.logs || {}).map(function (k) { return [k, data.logs[k]]; }));
    render(data.view);
  });
  events.addEventListener('log', function (e) {
    var data = JSON.parse(e.data);
    logs.set(data.server, data.records);
    var card = cards.get(data.server);
    if (card) renderLog(card, data.records);
  });
  events.addEventListener('status', function (e) { render(JSON.parse(e.data)); });
  events.addEventListener('feed', function (e) { addFeed(JSON.parse(e.data)); });
})();
`;
