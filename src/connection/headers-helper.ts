/**
 * Claude Code's `headersHelper` (docs/presets.md): a shell command whose stdout, a
 * JSON object of string header values, is merged over the server's static
 * `headers` each time an http/sse server connects. The rule followed is
 * Claude Code's: run in a shell, in the workspace root, with
 * `CLAUDE_CODE_MCP_SERVER_NAME` / `CLAUDE_CODE_MCP_SERVER_URL` set, bounded
 * in time; dynamic headers win over static ones of the same name.
 *
 * Header values are credentials: no message here ever contains them, nor the
 * helper's stdout (which is where they are).
 */
import { spawn } from 'node:child_process';
import { ErrorCode, McpReconcilerError } from '../errors.js';
import { redactText } from '../config/redact.js';

/** How long a helper may run, in ms (Claude Code's bound). */
export const HEADERS_HELPER_TIMEOUT_MS = 10_000;
/** Most stdout read from a helper; headers are a few hundred bytes. */
export const HEADERS_HELPER_MAX_OUTPUT = 64 * 1024;

/** What {@link runHeadersHelper} needs. */
export interface HeadersHelperOptions {
  /** The server, for messages and `CLAUDE_CODE_MCP_SERVER_NAME`. */
  server: string;
  /** The server's URL, for `CLAUDE_CODE_MCP_SERVER_URL`. */
  url?: string;
  /** The command line, run by the shell. */
  command: string;
  /** Working directory: the workspace root. */
  cwd: string;
  /** The server's environment (the scrubbed parent env plus its own `env`). */
  env: Record<string, string>;
  /** Default {@link HEADERS_HELPER_TIMEOUT_MS}. */
  timeoutMs?: number;
  /** Kills the helper when aborted (the connect attempt was given up). */
  signal?: AbortSignal;
}

// RFC 9110 token characters.
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

function fail(opts: HeadersHelperOptions, what: string, hint: string): McpReconcilerError {
  // Not permanent: a helper that fetches a token can fail for a moment (network, expired login); retries apply.
  return new McpReconcilerError(ErrorCode.ConnectFailed, `Server "${opts.server}": headersHelper ${what}`, {
    hint,
    details: { server: opts.server, headersHelper: true },
  });
}

/** The first line of the helper's stderr, short and with credential shapes hidden. */
function stderrLine(stderr: string): string {
  const line = stderr.split('\n').map((l) => l.trim()).find((l) => l !== '');
  if (line === undefined) return '';
  const short = line.length > 200 ? `${line.slice(0, 200)}…` : line;
  return `; its stderr says: ${redactText(short)}`;
}

/**
 * Check a helper's stdout: a JSON object whose values are all strings that
 * can go in an HTTP header. Returns the headers, or what is wrong with them
 * (naming header names, never values).
 */
export function parseHelperOutput(stdout: string): { headers: Record<string, string> } | { error: string } {
  let value: unknown;
  try {
    value = JSON.parse(stdout);
  } catch {
    return { error: `printed ${Buffer.byteLength(stdout)} bytes that are not JSON` };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { error: `printed JSON ${value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value}, not an object of headers` };
  }
  const headers: Record<string, string> = {};
  for (const [name, v] of Object.entries(value as Record<string, unknown>)) {
    if (!HEADER_NAME.test(name)) return { error: `printed a header name that HTTP does not allow: ${JSON.stringify(name.slice(0, 60))}` };
    if (typeof v !== 'string') return { error: `printed header "${name}" as ${v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v}; every value must be a string` };
    if (/[\r\n\0]/.test(v)) return { error: `printed header "${name}" with a line break in its value, which HTTP does not allow` };
    Object.defineProperty(headers, name, { value: v, enumerable: true, writable: true, configurable: true });
  }
  return { headers };
}

function killTree(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    // The helper runs in its own process group (detached), so the shell's children go too.
    process.kill(process.platform === 'win32' ? pid : -pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/**
 * Run a `headersHelper` and return the headers it printed. Throws an
 * `McpReconcilerError` (`connect_failed`) saying what went wrong and what to
 * do: it could not start, timed out, exited non-zero, or printed something
 * that is not a JSON object of string headers. The helper is killed (with
 * its process group) on timeout, on `signal`, and when it prints too much.
 */
export function runHeadersHelper(opts: HeadersHelperOptions): Promise<Record<string, string>> {
  const timeoutMs = opts.timeoutMs ?? HEADERS_HELPER_TIMEOUT_MS;
  const hint = `Run the headersHelper command yourself in ${opts.cwd} and check that it prints one JSON object such as {"Authorization": "Bearer …"} and exits 0; then \`mcp-reconciler reconnect ${opts.server}\``;
  return new Promise((resolvePromise, reject) => {
    if (opts.signal?.aborted) return reject(fail(opts, 'was not run: the connect attempt was cancelled', hint));
    const env: Record<string, string> = { ...opts.env, CLAUDE_CODE_MCP_SERVER_NAME: opts.server };
    if (opts.url !== undefined) env.CLAUDE_CODE_MCP_SERVER_URL = opts.url;
    const child = spawn(opts.command, {
      shell: true,
      cwd: opts.cwd,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: process.platform !== 'win32',
      windowsHide: true,
    });
    let stdout = '';
    let stderr = '';
    let settled = false;
    let overflow = false;
    const finish = (err: McpReconcilerError | undefined, headers?: Record<string, string>): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      if (err) reject(err);
      else resolvePromise(headers!);
    };
    const timer = setTimeout(() => {
      killTree(child.pid);
      finish(fail(opts, `did not finish within ${timeoutMs} ms and was stopped`, hint));
    }, timeoutMs);
    const onAbort = (): void => {
      killTree(child.pid);
      finish(fail(opts, 'was stopped: the connect attempt was cancelled', hint));
    };
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      stdout += chunk;
      if (stdout.length > HEADERS_HELPER_MAX_OUTPUT && !overflow) {
        overflow = true;
        killTree(child.pid);
        finish(fail(opts, `printed more than ${HEADERS_HELPER_MAX_OUTPUT / 1024} KiB, so it was stopped; it must print only a JSON object of headers`, hint));
      }
    });
    child.stderr.on('data', (chunk: string) => {
      if (stderr.length < 4096) stderr += chunk;
    });
    child.on('error', (err) => finish(fail(opts, `could not be started: ${err.message}`, hint)));
    child.on('close', (code, signal) => {
      if (code !== 0) {
        return finish(fail(opts, `${signal ? `was killed by ${signal}` : `exited with code ${code}`}${stderrLine(stderr)}`, hint));
      }
      const parsed = parseHelperOutput(stdout);
      if ('error' in parsed) return finish(fail(opts, parsed.error, hint));
      finish(undefined, parsed.headers);
    });
  });
}
