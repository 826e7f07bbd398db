/**
 * The shim behind `serve --stdio --shared`: the MCP client's stdio on one
 * side, a session on the daemon's socket on the other, lines passed through
 * as they came. It keeps just enough to survive the daemon: the client's
 * `initialize`, the ids of requests in flight both ways, and the client's
 * resource subscriptions. (Each line is parsed with `JSON.parse` to read its
 * id and method: measured against reading them from the bytes in
 * JavaScript, the native parse costs less per call, small or large.)
 *
 * When the daemon goes away (killed, crashed) while the client is still
 * there, every request of the client in flight gets a JSON-RPC error saying
 * so, and every request of the daemon the client has not answered
 * (elicitation, sampling) is cancelled (`notifications/cancelled`; a late
 * answer is dropped). The shim connects to a fresh daemon (starting one),
 * replays the `initialize` and `notifications/initialized` itself
 * (swallowing the answer), subscribes again to the resources the client
 * subscribed to, and tells the client its tools, prompts and resources
 * changed, so it lists and reads them again (docs/daemon.md, "Faults").
 * A new daemon numbers its requests from scratch, so their ids reach the
 * client prefixed with the daemon's generation: a late answer to the dead
 * daemon never lands on a new request. (Prefixed from the first daemon on:
 * the SDK's first request id is 0, and SDK clients ignore a
 * `notifications/cancelled` for request 0.)
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
  params?: { uri?: unknown };
  result?: unknown;
  error?: unknown;
}

function peek(line: string): Peek | undefined {
  try {
    const v = JSON.parse(line) as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Peek) : undefined;
  } catch {
    return undefined;
  }
}

/** The key a request is filed under: its id as JSON; undefined for a notification. */
function idKey(m: Peek | undefined): string | undefined {
  return m !== undefined && m.id !== undefined && m.id !== null ? JSON.stringify(m.id) : undefined;
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

/** A request of the daemon to the client the client has not answered. */
interface DaemonRequest {
  /** The id the daemon gave it. */
  daemonId: unknown;
  method: string;
  /** Its daemon is gone: it was cancelled, and a late answer is dropped. */
  stale: boolean;
}

function jsonLine(message: unknown): string {
  return `${JSON.stringify(message)}\n`;
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
  /** How many daemons this session has had before the current one. */
  let generation = -1;
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
  /** Ids (JSON) of the shim's own requests to the daemon (subscribing again) whose answers the client must not see. */
  const own = new Set<string>();
  /** Resources the client subscribed to (the daemon said yes), and subscribes awaiting the answer: id → URI. */
  const subscriptions = new Set<string>();
  const subscribing = new Map<string, string>();
  /** Requests of a daemon to the client, by the id (JSON) the client saw. */
  const daemonRequests = new Map<string, DaemonRequest>();
  let ending = false;
  let finish!: (code: number) => void;
  const done = new Promise<number>((resolve) => (finish = resolve));

  const toClient = (text: string): void => {
    if (text) stdout.write(text);
  };

  const fromClient = new Lines();
  const onStdin = (chunk: Buffer | string): void => {
    let out = '';
    for (let line of fromClient.push(chunk)) {
      const m = peek(line);
      const key = idKey(m);
      if (key !== undefined && typeof m!.method === 'string') {
        inflight.set(key, m!.method);
        if (m!.method === 'initialize') initLine = line;
        const uri = m!.params?.uri;
        if (typeof uri === 'string' && m!.method === 'resources/subscribe') subscribing.set(key, uri);
        else if (typeof uri === 'string' && m!.method === 'resources/unsubscribe') subscriptions.delete(uri);
      } else if (key !== undefined && m!.method === undefined) {
        // The client's answer to a request of the daemon.
        const asked = daemonRequests.get(key);
        if (asked) {
          daemonRequests.delete(key);
          // A dead daemon's request: nobody is waiting for the answer.
          if (asked.stale) continue;
          // A renumbered one goes back under the daemon's id.
          line = JSON.stringify({ ...m, id: asked.daemonId });
        }
      }
      if (socket && replaying === undefined) {
        out += `${line}\n`;
        if (line === initLine) initDelivered = true;
      } else queued.push(line);
    }
    if (out && socket) socket.write(out);
  };

  /** The replayed initialize was answered: the new daemon's session is as the client left it, but for what it must hear again. */
  const reattached = (): string => {
    replaying = undefined;
    let out = jsonLine({ jsonrpc: '2.0', method: 'notifications/initialized' });
    for (const uri of subscriptions) {
      const id = `mcp-reconciler-shim-resubscribe-${++replays}`;
      own.add(JSON.stringify(id));
      out += jsonLine({ jsonrpc: '2.0', id, method: 'resources/subscribe', params: { uri } });
    }
    socket?.write(`${out}${queued.map((l) => `${l}\n`).join('')}`);
    queued = [];
    let tell = jsonLine({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    tell += jsonLine({ jsonrpc: '2.0', method: 'notifications/prompts/list_changed' });
    tell += jsonLine({ jsonrpc: '2.0', method: 'notifications/resources/list_changed' });
    // What changed while nobody watched is unknown: the client reads its subscribed resources again.
    for (const uri of subscriptions) tell += jsonLine({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri } });
    log(
      `reattached to the daemon (pid ${daemonPid}); told the client to list its tools again` +
        (subscriptions.size > 0 ? ` and subscribed again to ${subscriptions.size} resource(s)` : ''),
    );
    return tell;
  };

  const onDaemonData = (lines: Lines) => (chunk: Buffer): void => {
    let out = '';
    for (const line of lines.push(chunk)) {
      const m = peek(line);
      const key = idKey(m);
      if (key !== undefined && m!.method === undefined) {
        if (key === replaying) {
          // Our replayed initialize: the client initialized long ago and must not see it.
          out += reattached();
          continue;
        }
        if (own.delete(key)) {
          if (m!.error !== undefined) log(`subscribing again after the reattach failed: ${line}`);
          continue;
        }
        inflight.delete(key);
        const uri = subscribing.get(key);
        if (uri !== undefined) {
          subscribing.delete(key);
          if (m!.result !== undefined) subscriptions.add(uri);
        }
      } else if (key !== undefined && typeof m!.method === 'string') {
        // A request of the daemon to the client (elicitation, sampling, roots, ping), renumbered: see above.
        const seen = `mcp-reconciler-d${generation}:${key}`;
        daemonRequests.set(JSON.stringify(seen), { daemonId: m!.id, method: m!.method, stale: false });
        out += `${JSON.stringify({ ...m, id: seen })}\n`;
        continue;
      }
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
    const unsent = new Set(queued.map((l) => idKey(peek(l))).filter((id) => id !== undefined));
    let out = '';
    for (const [id, method] of inflight) {
      if (unsent.has(id)) continue;
      inflight.delete(id);
      subscribing.delete(id);
      out += jsonLine({
        jsonrpc: '2.0',
        id: JSON.parse(id) as unknown,
        error: {
          code: DAEMON_GONE_CODE,
          message:
            `the mcp-reconciler daemon (pid ${pid}) ended while this ${method} request was in flight (it was killed or crashed); ` +
            'the request may or may not have reached its server. The session is reattaching to a new daemon: send it again.',
        },
      });
    }
    for (const [id, asked] of daemonRequests) {
      if (asked.stale) continue;
      asked.stale = true;
      out += jsonLine({
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: {
          requestId: JSON.parse(id) as unknown,
          reason: `the mcp-reconciler daemon (pid ${pid}) that sent this ${asked.method} request ended (it was killed or crashed); the call that asked has failed and can be sent again`,
        },
      });
    }
    own.clear();
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
    generation++;
    s.on('data', onDaemonData(new Lines()));
    s.on('error', () => s.destroy());
    s.once('close', () => onDaemonGone(s));
    s.resume();
    if (initLine !== undefined && initDelivered) {
      // A new daemon knows nothing of this session: initialize it the way the client did.
      const init = JSON.parse(initLine) as Record<string, unknown>;
      const id = `mcp-reconciler-shim-reattach-${++replays}`;
      replaying = JSON.stringify(id);
      init.id = id;
      s.write(jsonLine(init));
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
