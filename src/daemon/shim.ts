/**
 * The shim behind `serve --stdio --shared`: the MCP client's stdio on one
 * side, a session on the daemon's socket on the other, bytes passed through
 * line by line. It keeps just enough to survive the daemon: the client's
 * `initialize` request and the ids of the client's requests in flight.
 *
 * When the daemon goes away (killed, crashed) while the client is still
 * there, every request in flight gets a JSON-RPC error saying so, the shim
 * connects to a fresh daemon (starting one), replays the `initialize` and
 * `notifications/initialized` itself (swallowing the answer), and tells the
 * client its tools and prompts changed, so it lists them again
 * (docs/daemon.md, "Faults").
 */
import type { Socket } from 'node:net';
import { describeError, McpReconcilerError } from '../errors.js';

/** The JSON-RPC error code of a request cut off by the daemon's end (an implementation-defined server error). */
export const DAEMON_GONE_CODE = -32001;

/** Options of {@link runShim}. */
export interface ShimOptions {
  stdin: NodeJS.ReadableStream;
  /** Where the client's messages go (the caller handles a broken pipe: it ends the shim's process). */
  stdout: { write(text: string): unknown };
  log(line: string): void;
  /** Connect (starting the daemon when absent) and greet; resolves to the session socket and the daemon's pid. */
  attach(): Promise<{ socket: Socket; pid: number }>;
  /** Attempts to reattach after the daemon went away before the shim gives up (default 10). */
  reattachAttempts?: number;
}

interface Peek {
  id?: unknown;
  method?: unknown;
}

function peek(line: string): Peek | undefined {
  try {
    const v = JSON.parse(line) as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Peek) : undefined;
  } catch {
    return undefined;
  }
}

/** Splits a byte stream into lines (without their `\n`). */
class Lines {
  private rest = '';
  push(chunk: Buffer | string): string[] {
    const text = this.rest + (typeof chunk === 'string' ? chunk : chunk.toString('utf8'));
    const lines = text.split('\n');
    this.rest = lines.pop()!;
    return lines.filter((l) => l.trim() !== '');
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Run the shim until the client closes stdin (resolves 0) or the daemon
 * cannot be reached again (resolves 1, with the reason logged).
 */
export function runShim(options: ShimOptions): Promise<number> {
  const { stdin, stdout, log } = options;
  const attempts = options.reattachAttempts ?? 10;
  let socket: Socket | undefined;
  let daemonPid = 0;
  /** The client's initialize request, replayed to a fresh daemon. */
  let initLine: string | undefined;
  /** Whether a daemon has been sent that initialize (only then does a new one need it replayed). */
  let initDelivered = false;
  /** Requests of the client the daemon has not answered: JSON of the id → method. */
  const inflight = new Map<string, string>();
  /** Client lines that arrived while no daemon was attached. */
  let queued: string[] = [];
  /** The id of our replayed initialize while we wait for its answer. */
  let replaying: string | undefined;
  let replays = 0;
  let ending = false;
  let finish!: (code: number) => void;
  const done = new Promise<number>((resolve) => (finish = resolve));

  const toClient = (text: string): void => {
    if (text) stdout.write(text);
  };

  const fromClient = new Lines();
  const onStdin = (chunk: Buffer | string): void => {
    let out = '';
    for (const line of fromClient.push(chunk)) {
      const m = peek(line);
      if (m && typeof m.method === 'string' && m.id !== undefined && m.id !== null) {
        inflight.set(JSON.stringify(m.id), m.method);
        if (m.method === 'initialize') initLine = line;
      }
      if (socket && replaying === undefined) {
        out += `${line}\n`;
        if (line === initLine) initDelivered = true;
      } else queued.push(line);
    }
    if (out && socket) socket.write(out);
  };

  const onDaemonData = (lines: Lines) => (chunk: Buffer): void => {
    let out = '';
    for (const line of lines.push(chunk)) {
      const m = peek(line);
      const isResponse = m !== undefined && m.method === undefined && m.id !== undefined && m.id !== null;
      if (isResponse && replaying !== undefined && m.id === replaying) {
        // Our replayed initialize: the client initialized long ago and must not see it.
        replaying = undefined;
        socket?.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n${queued.map((l) => `${l}\n`).join('')}`);
        queued = [];
        out += `${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' })}\n`;
        out += `${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/prompts/list_changed' })}\n`;
        log(`reattached to the daemon (pid ${daemonPid}); told the client to list its tools again`);
        continue;
      }
      if (isResponse) inflight.delete(JSON.stringify(m.id));
      out += `${line}\n`;
    }
    toClient(out);
  };

  const onDaemonGone = (gone: Socket): void => {
    if (socket !== gone) return;
    socket = undefined;
    if (ending) return;
    const pid = daemonPid;
    // Requests still queued never reached the dead daemon: they go to the next one.
    const unsent = new Set(queued.map((l) => peek(l)?.id).filter((id) => id !== undefined && id !== null).map((id) => JSON.stringify(id)));
    let out = '';
    for (const [id, method] of inflight) {
      if (unsent.has(id)) continue;
      inflight.delete(id);
      out += `${JSON.stringify({
        jsonrpc: '2.0',
        id: JSON.parse(id) as unknown,
        error: {
          code: DAEMON_GONE_CODE,
          message:
            `the mcp-reconciler daemon (pid ${pid}) ended while this ${method} request was in flight (it was killed or crashed); ` +
            'the request may or may not have reached its server. The session is reattaching to a new daemon: send it again.',
        },
      })}\n`;
    }
    replaying = undefined;
    toClient(out);
    log(`the daemon (pid ${pid}) went away; reattaching`);
    void connect(true);
  };

  const connect = async (again: boolean): Promise<void> => {
    let lastError: unknown;
    for (let attempt = 0; attempt < (again ? attempts : 3); attempt++) {
      if (ending) return;
      if (attempt > 0) await sleep(Math.min(100 * 2 ** attempt, 2_000));
      try {
        const attached = await options.attach();
        if (ending) {
          attached.socket.destroy();
          return;
        }
        wire(attached.socket, attached.pid);
        return;
      } catch (err) {
        lastError = err;
        // A refusal (another build, a bad request) will not change by trying again.
        if (err instanceof McpReconcilerError && err.code !== 'connect_failed') break;
      }
    }
    log(`error: ${describeError(lastError)}`);
    if (lastError instanceof McpReconcilerError && lastError.hint) log(`hint: ${lastError.hint}`);
    finishWith(lastError instanceof McpReconcilerError && lastError.code === 'usage' ? 2 : 1);
  };

  const wire = (s: Socket, pid: number): void => {
    socket = s;
    daemonPid = pid;
    s.setNoDelay?.(true);
    s.on('data', onDaemonData(new Lines()));
    s.on('error', () => s.destroy());
    s.once('close', () => onDaemonGone(s));
    s.resume();
    if (initLine !== undefined && initDelivered) {
      // A new daemon knows nothing of this session: initialize it the way the client did.
      const init = JSON.parse(initLine) as Record<string, unknown>;
      replaying = `mcp-reconciler-shim-reattach-${++replays}`;
      init.id = replaying;
      s.write(`${JSON.stringify(init)}\n`);
      return;
    }
    if (initLine !== undefined && queued.includes(initLine)) initDelivered = true;
    if (queued.length > 0) s.write(queued.map((l) => `${l}\n`).join(''));
    queued = [];
  };

  const finishWith = (code: number): void => {
    if (ending) return;
    ending = true;
    stdin.off('data', onStdin);
    const s = socket;
    socket = undefined;
    if (s) {
      s.end();
      // Half-closed: the daemon ends the session and closes; do not wait on a daemon that hangs.
      const timer = setTimeout(() => s.destroy(), 2_000);
      s.once('close', () => {
        clearTimeout(timer);
        finish(code);
      });
    } else finish(code);
  };

  stdin.on('data', onStdin);
  stdin.once('end', () => finishWith(0));
  stdin.once('close', () => finishWith(0));
  void connect(false);
  return done;
}
