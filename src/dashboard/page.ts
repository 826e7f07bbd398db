/**
 * The dashboard's one HTML page: inline CSS and JS, the server-machine chart
 * inlined once (in a `<template>` the script clones per server), no external
 * requests, so it works offline and under a strict CSP.
 */
import { serverMachine } from '../../machines/server.machine.js';
import { graphOf } from '../viz/graph.js';
import { toSvg } from '../viz/svg.js';
import { CLIENT_JS } from './client.js';
import { htmlDocument, liveHeader } from './html-page.js';
import { DASHBOARD_CSS } from './styles.js';

let chart: Promise<string> | undefined;

/**
 * The server machine drawn for the dashboard: outline detail (state names;
 * transitions in tooltips), so one fits in a server's card.
 * Rendered once per process; the XML prolog and comments are stripped so it
 * can sit inside HTML.
 */
export function chartSvg(): Promise<string> {
  chart ??= toSvg(graphOf(serverMachine), { detail: 'outline', rankdir: 'LR' }).then((svg) =>
    svg
      .replace(/<\?xml[^>]*\?>/, '')
      .replace(/<!DOCTYPE[^>]*>/, '')
      .replace(/<!--[\s\S]*?-->/g, '')
      .trim(),
  );
  chart.catch(() => {
    chart = undefined;
  });
  return chart;
}

/** The page, with `svg` inlined and `nonce` on its style and script (the CSP allows only those). */
export function dashboardPage({ svg, nonce }: { svg: string; nonce: string }): string {
  return htmlDocument({
    title: 'mcp-reconciler · dashboard',
    nonce,
    css: DASHBOARD_CSS,
    body: `${liveHeader('live dashboard', 'root', 'workspace root')}
<section class="summary" id="summary" aria-label="summary"></section>
<div class="notice" id="notice" hidden></div>
<main class="layout">
  <section class="servers" id="servers" aria-label="servers"><p class="empty" id="empty">No MCP servers configured yet.</p></section>
  <aside class="feed" aria-label="live feed">
    <h2>Live feed</h2>
    <ol id="feed"></ol>
  </aside>
</main>
<template id="chart">${svg}</template>
<script nonce="${nonce}">${CLIENT_JS}</script>`,
  });
}
