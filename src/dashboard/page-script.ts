import { DOM_BUILDER_JS } from './dom-builder.js';

/**
 * What every dashboard page's script shares (client.ts, cluster-dashboard.ts,
 * src/daemon/dashboard-client.ts): the DOM builder `h`, the SSE stream with its live
 * indicator, the summary tiles, ages, tables, and the banner of a polled page
 * (polled.ts) whose source cannot be read. A string of ES2020, inlined into
 * those scripts; no template literals inside.
 */
export const PAGE_SCRIPT_JS = String.raw`
${DOM_BUILDER_JS}
  // The page's event stream, its state shown in the top bar (html-page.ts liveHeader).
  function liveEvents(token) {
    var live = document.getElementById('live');
    var liveText = document.getElementById('live-text');
    var events = new EventSource('/events?token=' + encodeURIComponent(token));
    events.onopen = function () { live.setAttribute('data-live', 'open'); liveText.textContent = 'live'; };
    events.onerror = function () { live.setAttribute('data-live', 'lost'); liveText.textContent = 'reconnecting…'; };
    return events;
  }

  // One tile of the summary row: a count and what it counts.
  function stat(summary, kind, n, label) {
    summary.appendChild(h('div', { className: 'stat', 'data-kind': kind }, [h('div', { className: 'n', text: String(n) }), h('div', { className: 'l', text: label })]));
  }

  // How long ago epoch time ms was, in the largest whole unit.
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

  // A polled page's reading (polled.ts): the body marked up or down by attribute attr, the
  // #down banner saying why there is no status (missing when the reading does not say); its status.
  function showReading(reading, attr, missing) {
    var down = document.getElementById('down');
    document.body.setAttribute(attr, reading.status ? 'up' : 'down');
    down.hidden = !!reading.status;
    down.textContent = reading.status ? '' : (reading.error || missing) + (reading.hint ? ' (' + reading.hint + ')' : '');
    return reading.status;
  }
`;
