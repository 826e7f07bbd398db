/**
 * The HTML document every dashboard page is (the live dashboard, the daemon's
 * and the cluster's, a server's log): no external requests (an empty
 * favicon), so it works offline, and `nonce` on the inline style and script,
 * the only ones the CSP allows (http.ts).
 */
import { DASHBOARD_CSS, TABLE_PAGE_CSS } from './styles.js';

/** One page. `title`, `css` and `body` go in as they are: the caller escapes what a server or client sent. */
export function htmlDocument({ title, nonce, css, body }: { title: string; nonce: string; css: string; body: string }): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<link rel="icon" href="data:,">
<style nonce="${nonce}">${css}</style>
</head>
<body>
${body}
</body>
</html>
`;
}

/**
 * The top bar of a live page: the brand with `sub`, an empty `.root` element
 * with id `rootId` the script fills (what the page is of), and the indicator
 * of the SSE stream (`#live`, `#live-text`) that `liveEvents` of
 * page-script.ts keeps.
 */
export function liveHeader(sub: string, rootId: string, rootTitle?: string): string {
  return `<header class="top">
  <div class="brand"><span class="mark" aria-hidden="true"></span><span class="name">mcp-reconciler</span><span class="sub">${sub}</span></div>
  <div class="root" id="${rootId}"${rootTitle !== undefined ? ` title="${rootTitle}"` : ''}></div>
  <div class="live" id="live" data-live="connecting" role="status"><span class="dot"></span><span id="live-text">connecting…</span></div>
</header>`;
}

/** What a polled page (polled.ts) shows besides its script. */
export interface PolledPageLayout {
  /** After `mcp-reconciler · ` in the title. */
  title: string;
  /** The top bar's {@link liveHeader} arguments. */
  sub: string;
  rootId: string;
  rootTitle?: string;
  /** A `#meta` line under the top bar (facts of the source the script fills). */
  meta?: boolean;
  /** The id of the `<main>` list the script fills. */
  listId: string;
  script: string;
}

/**
 * The page of a polled dashboard (the daemon's, the cluster's): top bar,
 * summary tiles, the `#down` banner for a source that cannot be read, and
 * the list the script draws from each reading.
 */
export function polledPage(nonce: string, p: PolledPageLayout): string {
  return htmlDocument({
    title: `mcp-reconciler · ${p.title}`,
    nonce,
    css: DASHBOARD_CSS + TABLE_PAGE_CSS,
    body: `${liveHeader(p.sub, p.rootId, p.rootTitle)}
${p.meta ? '<div class="meta" id="meta"></div>\n' : ''}<section class="summary" id="summary" aria-label="summary"></section>
<div class="down" id="down" role="alert" hidden></div>
<main class="workspaces" id="${p.listId}" aria-label="${p.listId}"></main>
<script nonce="${nonce}">${p.script}</script>`,
  });
}
