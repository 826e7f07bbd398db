/**
 * Elicitation on a terminal (docs/oauth.md): when a tool called from the CLI asks
 * the user something (`elicitation/create`), the question is asked on the
 * terminal, one field at a time, and the answer goes back to the server.
 * Questions go to stderr so stdout keeps only the tool's result. Without a
 * terminal the CLI does not declare elicitation at all (see `call`).
 */
import type { ElicitationAnswer, ElicitationHandler, ElicitationRequest } from '../connection/client-capabilities.js';
import { terminalSafe } from './output.js';
import type { CliIo } from './command.js';
import { LineReader, type Stdin } from './line-reader.js';
import { setOwn } from '../util/own.js';

type FormRequest = Extract<ElicitationRequest, { requestedSchema: unknown }>;
type Property = FormRequest['requestedSchema']['properties'][string];

/** A server's text on one line, controls escaped: a title must not draw a fake prompt. */
const oneLine = (text: string): string => terminalSafe(text, true);

/** Wrong answers to one field before the whole request is cancelled. */
const MAX_TRIES = 3;

/** What the user typed for one field: a value, nothing (use the default), or a reason to ask again. */
type Parsed = { value: unknown } | { skip: true } | { error: string };

function enumValues(p: Property): string[] | undefined {
  const e = (p as { enum?: unknown; oneOf?: unknown }).enum;
  if (Array.isArray(e) && e.every((v) => typeof v === 'string')) return e;
  const one = (p as { oneOf?: unknown }).oneOf;
  if (Array.isArray(one)) {
    const consts = one.map((o) => (o && typeof o === 'object' ? (o as { const?: unknown }).const : undefined));
    if (consts.every((v) => typeof v === 'string')) return consts as string[];
  }
  return undefined;
}

/** How a field is asked: its label, type hint and default. */
function describeField(name: string, p: Property, required: boolean): string {
  const title = (p as { title?: string }).title ?? name;
  const choices = enumValues(p);
  const type = (p as { type?: string }).type;
  const hint = choices ? choices.map((c, i) => `${i + 1}) ${c}`).join('  ') : type === 'boolean' ? 'y/n' : type === 'integer' ? 'a whole number' : type === 'number' ? 'a number' : '';
  const def = (p as { default?: unknown }).default;
  const shown = def === undefined ? '' : ` [${typeof def === 'boolean' ? (def ? 'y' : 'n') : String(def)}]`;
  return `${oneLine(title)}${required ? ' (required)' : ''}${hint ? ` — ${hint}` : ''}${shown}: `;
}

function parseField(text: string, p: Property, required: boolean): Parsed {
  const t = text.trim();
  if (t === '') {
    if ((p as { default?: unknown }).default !== undefined || !required) return { skip: true };
    return { error: 'this field is required' };
  }
  const choices = enumValues(p);
  if (choices) {
    const byNumber = /^\d+$/.test(t) ? choices[Number(t) - 1] : undefined;
    const picked = byNumber ?? choices.find((c) => c === t);
    return picked === undefined ? { error: `choose one of ${choices.map((c, i) => `${i + 1}) ${c}`).join(', ')}` } : { value: picked };
  }
  switch ((p as { type?: string }).type) {
    case 'boolean':
      if (/^(y|yes|true)$/i.test(t)) return { value: true };
      if (/^(n|no|false)$/i.test(t)) return { value: false };
      return { error: 'answer y or n' };
    case 'integer':
    case 'number': {
      const n = Number(t);
      if (!Number.isFinite(n)) return { error: 'not a number' };
      if ((p as { type?: string }).type === 'integer' && !Number.isInteger(n)) return { error: 'not a whole number' };
      return { value: n };
    }
    default:
      return { value: t };
  }
}

/**
 * An elicitation handler that asks on the terminal of `io` (stdin and stderr
 * must be a terminal: check `canPrompt` first). Requests are asked one at a
 * time. Ctrl-C or Ctrl-D cancels the request; the server's abort stops the
 * question. The controller fills defaults and checks the answer against the
 * requested schema before it is sent.
 */
export function terminalElicitation(io: CliIo): ElicitationHandler {
  const reader = new LineReader(io.stdin as Stdin);
  const say = (text: string): void => {
    io.stderr.write(text);
  };
  let chain: Promise<unknown> = Promise.resolve();

  const line = async (prompt: string, signal: AbortSignal): Promise<string | undefined> => {
    if (signal.aborted) return undefined;
    let onAbort: (() => void) | undefined;
    const aborted = new Promise<undefined>((resolve) => {
      onAbort = () => resolve(undefined);
      signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      return await Promise.race([reader.read(false, () => say(prompt)), aborted]);
    } finally {
      if (onAbort) signal.removeEventListener('abort', onAbort);
    }
  };

  /** "y" / "n" / "c" with `y` the default; undefined on Ctrl-C / Ctrl-D. */
  const confirm = async (prompt: string, signal: AbortSignal): Promise<ElicitationAnswer['action'] | undefined> => {
    for (let i = 0; i < MAX_TRIES; i++) {
      const a = await line(prompt, signal);
      if (a === undefined) return undefined;
      const t = a.trim().toLowerCase();
      if (t === '' || t === 'y' || t === 'yes') return 'accept';
      if (t === 'n' || t === 'no') return 'decline';
      if (t === 'c' || t === 'cancel') return 'cancel';
      say('answer y (yes), n (no, decline) or c (cancel)\n');
    }
    return 'cancel';
  };

  const ask = async (server: string, request: ElicitationRequest, signal: AbortSignal): Promise<ElicitationAnswer> => {
    const who = `MCP server "${oneLine(server)}"`;
    if (request.mode === 'url') {
      say(`\n${who} asks you to open a page: ${terminalSafe(request.message)}\n  ${oneLine(request.url)}\n`);
      const action = await confirm('Open it in your browser, then press Enter (n: decline, c: cancel) ', signal);
      if (action === undefined) say('\ncancelled\n');
      return { action: action ?? 'cancel' };
    }
    const form = request as FormRequest;
    say(`\n${who} asks: ${terminalSafe(form.message)}\n`);
    const required = new Set(form.requestedSchema.required ?? []);
    const content: Record<string, unknown> = {};
    for (const [name, p] of Object.entries(form.requestedSchema.properties)) {
      const description = (p as { description?: string }).description;
      if (description) say(`  ${terminalSafe(description)}\n`);
      let parsed: Parsed = { error: '' };
      for (let i = 0; i < MAX_TRIES && 'error' in parsed; i++) {
        const text = await line(`  ${describeField(name, p, required.has(name))}`, signal);
        if (text === undefined) {
          say('\ncancelled\n');
          return { action: 'cancel' };
        }
        parsed = parseField(text, p, required.has(name));
        if ('error' in parsed) say(`  ${parsed.error}\n`);
      }
      if ('error' in parsed) {
        say(`  no valid answer after ${MAX_TRIES} tries; the request is cancelled\n`);
        return { action: 'cancel' };
      }
      if ('value' in parsed) setOwn(content, name, parsed.value); // field names come from the server
    }
    const action = await confirm(`Send this to ${who}? [Y/n/c] `, signal);
    if (action === undefined) {
      say('\ncancelled\n');
      return { action: 'cancel' };
    }
    return action === 'accept' ? { action, content } : { action };
  };

  return (server, request, { signal }) => {
    // One question at a time: two servers asking at once must not interleave on the terminal.
    const next = chain.then(() => ask(server, request, signal));
    chain = next.catch(() => undefined);
    return next;
  };
}
