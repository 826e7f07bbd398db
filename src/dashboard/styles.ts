/** The dashboard page's stylesheet (inlined; no external fonts or images). */
export const DASHBOARD_CSS = `
:root {
  --bg: #f4f6fa; --panel: #ffffff; --text: #0f172a; --muted: #64748b; --line: #e2e8f0;
  --ok: #16a34a; --ok-soft: #dcfce7;
  --wait: #d97706; --wait-soft: #fef3c7;
  --busy: #2563eb; --busy-soft: #dbeafe;
  --bad: #dc2626; --bad-soft: #fee2e2;
  --auth: #7c3aed; --auth-soft: #ede9fe;
  --off: #64748b; --off-soft: #e2e8f0;
  --radius: 10px;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Liberation Sans", Helvetica, Arial, sans-serif;
  font-size: 14px; color: var(--text); background: var(--bg);
}
* { box-sizing: border-box; }
body { margin: 0; }
code, .mono { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, "Liberation Mono", monospace; font-size: 12px; }

.top { display: flex; align-items: center; gap: 20px; padding: 14px 24px; background: #0f172a; color: #e2e8f0; }
.brand { display: flex; align-items: baseline; gap: 10px; }
.brand .mark { width: 12px; height: 12px; border-radius: 3px; background: linear-gradient(135deg, #38bdf8, #818cf8); align-self: center; }
.brand .name { font-weight: 700; font-size: 16px; color: #fff; letter-spacing: .2px; }
.brand .sub { color: #94a3b8; font-size: 13px; }
.root { flex: 1; color: #94a3b8; font-family: ui-monospace, Menlo, Consolas, "Liberation Mono", monospace; font-size: 12px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.live { display: flex; align-items: center; gap: 8px; font-size: 12px; color: #cbd5e1; }
.live .dot { width: 8px; height: 8px; border-radius: 50%; background: #94a3b8; }
.live[data-live="open"] .dot { background: #22c55e; box-shadow: 0 0 0 3px rgba(34,197,94,.25); }
.live[data-live="lost"] .dot { background: #f59e0b; }

.summary { display: flex; flex-wrap: wrap; gap: 10px; padding: 16px 24px 0; }
.stat { background: var(--panel); border: 1px solid var(--line); border-radius: var(--radius); padding: 8px 14px; min-width: 104px; }
.stat .n { font-size: 20px; font-weight: 700; line-height: 1.2; }
.stat .l { color: var(--muted); font-size: 12px; }
.stat[data-kind="connected"] .n { color: var(--ok); }
.stat[data-kind="dormant"] .n { color: var(--ok); opacity: .7; }
.stat[data-kind="pending"] .n { color: var(--wait); }
.stat[data-kind="failed"] .n { color: var(--bad); }
.stat[data-kind="connecting"] .n { color: var(--busy); }

.notice { margin: 14px 24px 0; padding: 10px 14px; border-radius: var(--radius); background: var(--wait-soft); border: 1px solid #fcd34d; color: #78350f; }

.layout { display: grid; grid-template-columns: minmax(0, 1fr) 330px; gap: 20px; padding: 16px 24px 24px; align-items: start; }
@media (max-width: 1100px) { .layout { grid-template-columns: 1fr; } }
.servers { display: flex; flex-direction: column; gap: 16px; min-width: 0; }
.empty { color: var(--muted); }

.card { background: var(--panel); border: 1px solid var(--line); border-left: 4px solid var(--tone); border-radius: var(--radius); padding: 14px 16px 12px; --tone: var(--off); --tone-soft: var(--off-soft); }
.card[data-status="connected"] { --tone: var(--ok); --tone-soft: var(--ok-soft); }
.card[data-status="dormant"] { --tone: var(--ok); --tone-soft: var(--ok-soft); border-style: dashed; }
.tool.cached { font-style: italic; opacity: .8; }
.card[data-status="pending"] { --tone: var(--wait); --tone-soft: var(--wait-soft); }
.card[data-status="connecting"] { --tone: var(--busy); --tone-soft: var(--busy-soft); }
.card[data-status="failed"] { --tone: var(--bad); --tone-soft: var(--bad-soft); }
.card[data-status="needs-auth"] { --tone: var(--auth); --tone-soft: var(--auth-soft); }

.card-head { display: flex; align-items: center; flex-wrap: wrap; gap: 8px 10px; }
.card-head h3 { margin: 0; font-size: 16px; }
.badge { font-size: 11px; padding: 2px 8px; border-radius: 999px; border: 1px solid var(--line); color: var(--muted); background: #f8fafc; }
.pill { font-size: 12px; font-weight: 600; padding: 2px 10px; border-radius: 999px; color: var(--tone); background: var(--tone-soft); }
.state-name { font-family: ui-monospace, Menlo, Consolas, "Liberation Mono", monospace; font-size: 12px; color: var(--muted); }
.actions { margin-left: auto; display: flex; gap: 8px; }
.actions:empty { display: none; }
button { font: inherit; font-size: 13px; border-radius: 7px; padding: 5px 12px; cursor: pointer; border: 1px solid var(--line); background: #fff; color: var(--text); }
button:hover { background: #f1f5f9; }
button:disabled { opacity: .55; cursor: progress; }
button.primary { background: var(--ok); border-color: var(--ok); color: #fff; }
button.primary:hover { background: #15803d; }
button.danger { color: var(--bad); border-color: #fecaca; }
button.danger:hover { background: var(--bad-soft); }

.desc { margin: 6px 0 0; color: var(--muted); }
.card-body { display: grid; grid-template-columns: 280px minmax(0, 1fr); gap: 18px; margin-top: 12px; }
@media (max-width: 800px) { .card-body { grid-template-columns: 1fr; } }
.facts { margin: 0; display: grid; grid-template-columns: auto 1fr; gap: 6px 12px; align-content: start; font-size: 13px; }
.facts dt { color: var(--muted); }
.facts dd { margin: 0; min-width: 0; overflow-wrap: anywhere; }
.facts code { background: #f1f5f9; border-radius: 4px; padding: 0 4px; font-size: 11.5px; }
.reason { color: var(--tone); font-weight: 600; }
.fix { color: var(--text); }
.error { margin: 10px 0 0; padding: 8px 10px; border-radius: 8px; background: var(--bad-soft); color: #7f1d1d; font-size: 12px; overflow-wrap: anywhere; }
.error[hidden] { display: none; }
.tools { display: flex; flex-wrap: wrap; gap: 6px; margin-top: 10px; }
.tool { font-family: ui-monospace, Menlo, Consolas, "Liberation Mono", monospace; font-size: 11px; padding: 2px 7px; border-radius: 6px; background: #f1f5f9; border: 1px solid var(--line); }
.tool input { width: 11px; height: 11px; margin: 0 5px 0 0; vertical-align: -1px; cursor: pointer; }
.muted { color: var(--muted); }

.chart { background: #fbfcfe; border: 1px solid var(--line); border-radius: 8px; padding: 6px; overflow: hidden; }
.chart svg { display: block; width: 100%; height: auto; margin: 0 auto; }
.chart g.graph > text { display: none; }
.chart g.node.state > path, .chart g.node.state > polygon { transition: fill .25s, stroke .25s; }
.chart g.node.state.current > path, .chart g.node.state.current > polygon { fill: var(--tone); stroke: var(--tone); stroke-width: 2; }
.chart g.node.state.current text { fill: #fff; }
.chart g.cluster.active > path, .chart g.cluster.active > polygon { stroke: var(--tone); stroke-width: 2; fill: var(--tone-soft); }
.chart g.cluster.active text { fill: var(--tone); }

.feed { background: var(--panel); border: 1px solid var(--line); border-radius: var(--radius); padding: 12px 14px; position: sticky; top: 16px; max-height: calc(100vh - 32px); overflow: auto; }
.feed h2 { margin: 0 0 8px; font-size: 13px; text-transform: uppercase; letter-spacing: .6px; color: var(--muted); }
.feed ol { list-style: none; margin: 0; padding: 0; }
.feed li { display: grid; grid-template-columns: 62px 1fr; gap: 2px 8px; padding: 6px 0; border-top: 1px solid #f1f5f9; font-size: 12px; }
.feed li:first-child { border-top: 0; }
.feed time { color: var(--muted); font-variant-numeric: tabular-nums; }
.feed .who { font-weight: 600; }
.feed .what { grid-column: 2; color: #334155; overflow-wrap: anywhere; }
.feed li[data-kind="config-error"] .what { color: var(--bad); }
.feed li[data-kind="action"] .what { color: var(--busy); }
.feed li[data-state="connected"] .what { color: var(--ok); }
.feed li[data-state="failed"] .what { color: var(--bad); }
.feed li[data-state="pending_approval"] .what { color: var(--wait); }

.switch { position: relative; display: inline-flex; align-items: center; gap: 6px; cursor: pointer; font-size: 12px; color: var(--muted); }
.switch input { position: absolute; opacity: 0; width: 1px; height: 1px; }
.switch .slider { position: relative; width: 30px; height: 17px; border-radius: 999px; background: #cbd5e1; transition: background .2s; flex: none; }
.switch .slider::after { content: ""; position: absolute; top: 2px; left: 2px; width: 13px; height: 13px; border-radius: 50%; background: #fff; transition: transform .2s; }
.switch input:checked + .slider { background: var(--ok); }
.switch input:checked + .slider::after { transform: translateX(13px); }
.switch input:focus-visible + .slider { outline: 2px solid var(--busy); outline-offset: 2px; }
.switch input:disabled + .slider { opacity: .5; cursor: not-allowed; }
.switch-text { max-width: 360px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }

.log { margin-top: 12px; border: 1px solid var(--line); border-radius: 8px; background: #0f172a; color: #e2e8f0; }
.log-head { display: flex; justify-content: space-between; padding: 4px 10px; font-size: 11px; text-transform: uppercase; letter-spacing: .5px; color: #94a3b8; border-bottom: 1px solid #1e293b; }
.log-head a { color: #7dd3fc; text-transform: none; letter-spacing: 0; }
.log-lines { list-style: none; margin: 0; padding: 4px 10px 6px; max-height: 132px; overflow: auto; cursor: pointer; font-family: ui-monospace, Menlo, Consolas, "Liberation Mono", monospace; font-size: 11.5px; }
.log-lines li { display: grid; grid-template-columns: 58px 96px 1fr; gap: 8px; }
.log-lines time, .log-lines .src { color: #64748b; }
.log-lines .text { white-space: pre-wrap; overflow-wrap: anywhere; }
.log-lines li[data-source="supervisor"] .text { color: #7dd3fc; }
.log-lines li[data-level="error"] .text, .log-lines li[data-level="warning"] .text { color: #fca5a5; }
.log-lines li.muted { display: block; color: #64748b; }
`;

/** The daemon's and the cluster's pages: workspace/replica sections with tables (added to {@link DASHBOARD_CSS}). */
export const TABLE_PAGE_CSS = `
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
.ws code.fix { display: inline-block; margin-top: 4px; font-size: 11.5px; background: #f1f5f9; border-radius: 4px; padding: 1px 5px; overflow-wrap: anywhere; }
`;
