/**
 * A server's whole log as one page: every record rendered on the server as
 * escaped text, with no script at all, so what a server writes to stderr
 * (markup, terminal escape sequences, bidi overrides) is shown, never acted on.
 */
import type { LogRecord } from '../controller/server-logs.js';
import { htmlDocument } from './html-page.js';

/**
 * Control characters shown as `\u001b`-style escapes: C0 (but tab), DEL, C1
 * and the bidi overrides, as the CLI's terminal output does (docs/manage.md).
 */
const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** `text` with every control character visible as an escape. */
export function visibleText(text: string): string {
  return text.replace(CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

const HTML_ESCAPES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** `text` as HTML text (also safe inside a quoted attribute). */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}

/** What a record's origin is called on the page and the CLI: `stderr`, `log:warning fixture`, `supervisor:error`. */
export function recordOrigin(r: LogRecord): string {
  if (r.source === 'mcp') return `log:${r.level ?? 'info'}${r.logger ? ` ${r.logger}` : ''}`;
  if (r.source === 'supervisor' && r.level && r.level !== 'info') return `supervisor:${r.level}`;
  return r.source;
}

const LOG_CSS = `
body { margin: 0; font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Liberation Sans", sans-serif; font-size: 14px; color: #0f172a; background: #f4f6fa; }
header { padding: 14px 24px; background: #0f172a; color: #e2e8f0; }
header h1 { margin: 0; font-size: 16px; }
header p { margin: 4px 0 0; color: #94a3b8; font-size: 12px; }
ol { list-style: none; margin: 16px 24px; padding: 0; background: #fff; border: 1px solid #e2e8f0; border-radius: 10px; font-family: ui-monospace, Menlo, Consolas, "Liberation Mono", monospace; font-size: 12px; }
li { display: grid; grid-template-columns: 200px 150px 1fr; gap: 12px; padding: 3px 12px; border-top: 1px solid #f1f5f9; }
li:first-child { border-top: 0; }
time, .src { color: #64748b; }
.text { white-space: pre-wrap; overflow-wrap: anywhere; }
li[data-source="supervisor"] .text { color: #2563eb; }
li[data-level="error"] .text, li[data-level="warning"] .text { color: #b91c1c; }
.empty { margin: 16px 24px; color: #64748b; }
`;

/** The page for `server`'s `records` (oldest first); `nonce` is on its one style element. */
export function logPage({ server, records, nonce }: { server: string; records: readonly LogRecord[]; nonce: string }): string {
  const rows = records
    .map(
      (r) =>
        `<li data-source="${escapeHtml(r.source)}"${r.level ? ` data-level="${escapeHtml(r.level)}"` : ''}><time datetime="${escapeHtml(r.time)}">${escapeHtml(r.time)}</time><span class="src">${escapeHtml(visibleText(recordOrigin(r)))}</span><span class="text">${escapeHtml(visibleText(r.text))}</span></li>`,
    )
    .join('\n');
  const name = escapeHtml(visibleText(server));
  return htmlDocument({
    title: `${name} · log · mcp-reconciler`,
    nonce,
    css: LOG_CSS,
    body: `<header><h1>Log of “${name}”</h1><p>${records.length} record${records.length === 1 ? '' : 's'}: stderr, MCP log messages and the supervisor's lines, oldest first</p></header>
${records.length > 0 ? `<ol id="log">\n${rows}\n</ol>` : '<p class="empty">No log lines yet.</p>'}`,
  });
}
