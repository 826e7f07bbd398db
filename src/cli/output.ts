import type { CliIo } from './command.js';

/**
 * Characters a terminal acts on instead of printing: C0 controls (ESC starts
 * CSI/OSC sequences that recolour, retitle, clear or rewrite the screen; BEL;
 * CR overwrites a line), DEL, C1 controls (U+009B is a one-character CSI), and
 * the bidi overrides that make text display in another order than it runs.
 */
const TERMINAL_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
/** The same plus newline and tab, for one-line places such as a table cell. */
const TERMINAL_CONTROL_OR_BREAK = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

const unicodeEscape = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/**
 * `text` with every terminal control character shown as a `\u001b`-style
 * escape, so names, tool descriptions and server stderr from config files and
 * servers cannot drive the user's terminal. Newlines and tabs are kept unless
 * `oneLine` is set. Idempotent, and inside JSON text it changes no value
 * (`\u009b` is how JSON spells that character too).
 */
export function terminalSafe(text: string, oneLine = false): string {
  return text.replace(oneLine ? TERMINAL_CONTROL_OR_BREAK : TERMINAL_CONTROL, unicodeEscape);
}

/** Where {@link terminalSafeIo} keeps a stream's unfiltered `write`. */
const RAW = Symbol('mcp-reconciler.rawWrite');

type Writable = CliIo['stdout'];

/**
 * `io` with stdout and stderr passed through {@link terminalSafe}: the one
 * place every CLI printer's text goes through. `--json` output stays valid
 * JSON with the same values. {@link writeRaw} bypasses it for the CLI's own
 * escape sequences (the `watch` screen clear).
 */
export function terminalSafeIo(io: CliIo): CliIo {
  const wrap = (stream: Writable): Writable => {
    if ((stream as { [RAW]?: unknown })[RAW]) return stream; // already wrapped
    return Object.assign({ write: (chunk: string) => stream.write(terminalSafe(chunk)) }, { [RAW]: (chunk: string) => stream.write(chunk) });
  };
  return { ...io, stdout: wrap(io.stdout), stderr: wrap(io.stderr) };
}

/** Write `chunk` unfiltered, bypassing {@link terminalSafeIo}: only for escape sequences the CLI itself composes. */
export function writeRaw(stream: Writable, chunk: string): void {
  const raw = (stream as { [RAW]?: (chunk: string) => unknown })[RAW];
  if (raw) raw(chunk);
  else stream.write(chunk);
}

/**
 * Left-aligned columns separated by two spaces; the last column is not padded.
 * Cells are made {@link terminalSafe} on one line first, so widths are those
 * of what is printed.
 */
export function table(rows: readonly (readonly string[])[]): string {
  const safe = rows.map((row) => row.map((cell) => terminalSafe(cell, true)));
  const widths: number[] = [];
  for (const row of safe) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return safe
    .map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ').trimEnd())
    .join('\n');
}

/** `a, b` or `-` for an empty list. */
export function joinList(list: readonly string[] | undefined, empty = '-'): string {
  return list && list.length > 0 ? list.join(', ') : empty;
}
