/**
 * The shim behind `serve --stdio --shared`: the MCP client's stdio on one
 * side, a session on the daemon's socket on the other, bytes passed through
 * as they came. Each line's envelope (id, method) is read from its bytes
 * (src/daemon/envelope.ts); a chunk of whole lines nobody needs to change is
 * written on in one piece, without decoding or encoding it again. The shim
 * keeps just enough to survive the daemon: the client's `initialize`, the
 * ids of requests in flight both ways, and the client's resource
 * subscriptions.
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
import { readEnvelope, readSplitEnvelope, type Envelope } from './envelope.js';

/** The JSON-RPC error code of a request cut off by the daemon's end (an implementation-defined server error). */
export const DAEMON_GONE_CODE = -32001;

/** Options of {@link runShim}. */
export interface ShimOptions {
  stdin: NodeJS.ReadableStream;
  /** Where the client's messages go (the caller handles a broken pipe: it ends the shim's process). */
  stdout: { write(chunk: Buffer): unknown };
  log(line: string): void;
  /** Connect (starting the daemon when absent) and greet; resolves to the session socket and the daemon's pid. */
  attach(): Promise<{ socket: Socket; pid: number }>;
  /** Attempts to reattach after the daemon went away before the shim gives up (default 10). */
  reattachAttempts?: number;
}

const NEWLINE = 0x0a;

/** A request of the daemon to the client the client has not answered. */
interface DaemonRequest {
  /** The id the daemon gave it (canonical JSON). */
  daemonId: string;
  method: string;
  /** Its daemon is gone: it was cancelled, and a late answer is dropped. */
  stale: boolean;
}

/** Lines longer than this that arrive in several chunks are not joined when their envelope shows at their ends. */
const JOIN_BELOW = 16 * 1024;

/** What {@link LineBuffer.push} gives: a line that began in earlier chunks (its pieces, the last ending in `\n`), then whole lines. */
interface Lines {
  split?: Buffer[];
  data?: Buffer;
}

/** Splits a byte stream into whole lines, keeping the pieces of a line cut between chunks (not joined: see {@link JOIN_BELOW}). */
class LineBuffer {
  private parts: Buffer[] = [];
  push(chunk: Buffer): Lines {
    let rest = chunk;
    let split: Buffer[] | undefined;
    if (this.parts.length > 0) {
      const first = chunk.indexOf(NEWLINE);
      if (first < 0) {
        this.parts.push(chunk);
        return {};
      }
      split = [...this.parts, chunk.subarray(0, first + 1)];
      this.parts = [];
      rest = chunk.subarray(first + 1);
    }
    const last = rest.lastIndexOf(NEWLINE);
    if (last + 1 < rest.length) this.parts.push(rest.subarray(last + 1));
    return { ...(split ? { split } : {}), ...(last >= 0 ? { data: rest.subarray(0, last + 1) } : {}) };
  }
}

/** One line, contiguous: its buffer, where it starts, where its newline is, and its envelope (undefined when malformed). */
interface WholeLine {
  buf: Buffer;
  start: number;
  end: number;
  env: Envelope | undefined;
}

/** What becomes of a line: passed on as it came, dropped, or replaced by other bytes. */
type LineAction = 'pass' | 'drop' | Buffer;

/**
 * The envelope of a line cut between chunks, and the line joined (only when
 * asked for: a long SDK-shaped message is passed on in its pieces).
 */
function splitLine(parts: Buffer[]): { env: Envelope | undefined; whole: () => WholeLine } {
  let joined: WholeLine | undefined;
  const whole = (): WholeLine => {
    if (!joined) {
      const buf = Buffer.concat(parts);
      joined = { buf, start: 0, end: buf.length - 1, env: readEnvelope(buf, 0, buf.length - 1) };
    }
    return joined;
  };
  const size = parts.reduce((n, p) => n + p.length, 0);
  if (size < JOIN_BELOW) return { env: whole().env, whole };
  const head = Buffer.concat(parts, Math.min(256, size));
  const tailParts: Buffer[] = [];
  for (let i = parts.length - 1, need = 512; i >= 0 && need > 0; i--) {
    const p = parts[i]!;
    tailParts.unshift(p.length > need ? p.subarray(p.length - need) : p);
    need -= p.length;
  }
  const tail = Buffer.concat(tailParts);
  const env = readSplitEnvelope(head, tail.subarray(0, tail.length - 1));
  return env ? { env, whole } : { env: whole().env, whole };
}

/** Calls `each(start, end)` for every line of `data` (whole lines: it ends in `\n`), `end` at its newline. */
function forEachLine(data: Buffer, each: (start: number, end: number) => void): void {
  let start = 0;
  while (start < data.length) {
    const nl = data.indexOf(NEWLINE, start);
    each(start, nl);
    start = nl + 1;
  }
}

function isBlank(data: Buffer, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    const c = data[i]!;
    if (c !== 0x20 && c !== 0x09 && c !== 0x0d) return false;
  }
  return true;
}

function jsonLine(message: unknown): string {
  return `${JSON.stringify(message)}\n`;
}

/** `params.uri` of a subscribe or unsubscribe line (rare: only these are parsed whole). */
function uriOf(line: Buffer): string | undefined {
  try {
    const uri = (JSON.parse(line.toString('utf8')) as { params?: { uri?: unknown } }).params?.uri;
    return typeof uri === 'string' ? uri : undefined;
  } catch {
    return undefined;
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
  /** How many daemons this session has had before the current one. */
  let generation = -1;
  /** The client's initialize request (its line), replayed to a fresh daemon. */
  let initLine: Buffer | undefined;
  /** Whether a daemon has been sent that initialize (only then does a new one need it replayed). */
  let initDelivered = false;
  /** Requests of the client the daemon has not answered: id → method. */
  const inflight = new Map<string, string>();
  /** Client lines that arrived while no daemon was attached (each ends in `\n`), and the ids of the requests among them. */
  let queued: Buffer[] = [];
  const queuedIds = new Set<string>();
  /** The id of our replayed initialize while we wait for its answer. */
  let replaying: string | undefined;
  let replays = 0;
  /** Ids of the shim's own requests to the daemon (subscribing again) whose answers the client must not see. */
  const own = new Set<string>();
  /** Resources the client subscribed to (the daemon said yes), and subscribes awaiting the answer: id → URI. */
  const subscriptions = new Set<string>();
  const subscribing = new Map<string, string>();
  /** Requests of a daemon to the client, by the id the client saw. */
  const daemonRequests = new Map<string, DaemonRequest>();
  let ending = false;
  let finish!: (code: number) => void;
  const done = new Promise<number>((resolve) => (finish = resolve));

  const toClient = (text: string): void => {
    if (text) stdout.write(Buffer.from(text));
  };

  /** Send client bytes to the daemon, or queue them while none is attached (or one is being initialized again). */
  const toDaemon = (bytes: Buffer, requestId?: string): void => {
    if (socket && replaying === undefined) {
      socket.write(bytes);
      return;
    }
    queued.push(bytes);
    if (requestId !== undefined) queuedIds.add(requestId);
  };

  /** What to do with a line from the client (bookkeeping of requests, subscriptions, answers to the daemon). */
  const clientLine = (env: Envelope, whole: () => WholeLine): LineAction => {
    if (env.id === undefined) return 'pass';
    if (env.method !== undefined) {
      inflight.set(env.id, env.method);
      if (env.method === 'initialize') {
        const w = whole();
        initLine = Buffer.from(w.buf.subarray(w.start, w.end + 1));
        if (socket && replaying === undefined) initDelivered = true;
      } else if (env.method === 'resources/subscribe' || env.method === 'resources/unsubscribe') {
        const w = whole();
        const uri = uriOf(w.buf.subarray(w.start, w.end));
        if (uri !== undefined && env.method === 'resources/subscribe') subscribing.set(env.id, uri);
        else if (uri !== undefined) subscriptions.delete(uri);
      }
      return 'pass';
    }
    // The client's answer to a request of the daemon.
    const asked = daemonRequests.get(env.id);
    if (!asked) return 'pass';
    daemonRequests.delete(env.id);
    // A dead daemon's request: nobody is waiting for the answer.
    if (asked.stale) return 'drop';
    if (asked.daemonId === env.id) return 'pass';
    // A renumbered one goes back under the daemon's id.
    const w = whole();
    if (!w.env || w.env.id === undefined) return 'pass';
    return Buffer.concat([w.buf.subarray(w.start, w.env.idStart), Buffer.from(asked.daemonId), w.buf.subarray(w.env.idEnd, w.end + 1)]);
  };

  const fromClient = new LineBuffer();
  const onStdin = (chunk: Buffer | string): void => {
    const { split, data } = fromClient.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
    if (split) {
      const { env, whole } = splitLine(split);
      const action = env ? clientLine(env, whole) : 'pass';
      const requestId = env?.method !== undefined ? env.id : undefined;
      if (action === 'pass') for (const part of split) toDaemon(part, requestId);
      else if (action !== 'drop') toDaemon(action, requestId);
    }
    if (!data) return;
    // The lines before `from` have not been sent yet; a line that must change or go sends them first.
    let from = 0;
    let requestIds: string[] | undefined;
    const flush = (upTo: number): void => {
      if (upTo > from) {
        const bytes = data.subarray(from, upTo);
        if (socket && replaying === undefined) socket.write(bytes);
        else {
          queued.push(bytes);
          for (const id of requestIds ?? []) queuedIds.add(id);
        }
      }
      requestIds = undefined;
    };
    forEachLine(data, (start, end) => {
      const env = isBlank(data, start, end) ? undefined : readEnvelope(data, start, end);
      const action = isBlank(data, start, end) ? 'drop' : env ? clientLine(env, () => ({ buf: data, start, end, env })) : 'pass';
      if (env?.method !== undefined && env.id !== undefined) (requestIds ??= []).push(env.id);
      if (action === 'pass') return;
      flush(start);
      from = end + 1;
      if (action !== 'drop') toDaemon(action);
    });
    flush(data.length);
  };

  /** The replayed initialize was answered: the new daemon's session is as the client left it, but for what it must hear again. */
  const reattached = (s: Socket): void => {
    replaying = undefined;
    let out = jsonLine({ jsonrpc: '2.0', method: 'notifications/initialized' });
    for (const uri of subscriptions) {
      const id = JSON.stringify(`mcp-reconciler-shim-resubscribe-${++replays}`);
      own.add(id);
      out += jsonLine({ jsonrpc: '2.0', id: JSON.parse(id) as string, method: 'resources/subscribe', params: { uri } });
    }
    s.write(out);
    for (const bytes of queued) s.write(bytes);
    queued = [];
    queuedIds.clear();
    let tell = jsonLine({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    tell += jsonLine({ jsonrpc: '2.0', method: 'notifications/prompts/list_changed' });
    tell += jsonLine({ jsonrpc: '2.0', method: 'notifications/resources/list_changed' });
    // What changed while nobody watched is unknown: the client reads its subscribed resources again.
    for (const uri of subscriptions) tell += jsonLine({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri } });
    toClient(tell);
    log(
      `reattached to the daemon (pid ${daemonPid}); told the client to list its tools again` +
        (subscriptions.size > 0 ? ` and subscribed again to ${subscriptions.size} resource(s)` : ''),
    );
  };

  /** What to do with a line from the daemon (answers, our own requests' answers, its requests to the client). */
  const daemonLine = (s: Socket, env: Envelope, whole: () => WholeLine): LineAction => {
    if (env.id === undefined) return 'pass';
    if (env.method === undefined) {
      if (env.id === replaying) {
        // Our replayed initialize: the client initialized long ago and must not see it.
        reattached(s);
        return 'drop';
      }
      if (own.delete(env.id)) {
        if (env.hasError) {
          const w = whole();
          log(`subscribing again after the reattach failed: ${w.buf.toString('utf8', w.start, w.end)}`);
        }
        return 'drop';
      }
      inflight.delete(env.id);
      const uri = subscribing.get(env.id);
      if (uri !== undefined) {
        subscribing.delete(env.id);
        if (env.hasResult) subscriptions.add(uri);
      }
      return 'pass';
    }
    // A request of the daemon to the client (elicitation, sampling, roots, ping), renumbered: see above.
    const w = whole();
    if (!w.env || w.env.id === undefined) return 'pass';
    const seen = JSON.stringify(`mcp-reconciler-d${generation}:${env.id}`);
    daemonRequests.set(seen, { daemonId: env.id, method: env.method, stale: false });
    return Buffer.concat([w.buf.subarray(w.start, w.env.idStart), Buffer.from(seen), w.buf.subarray(w.env.idEnd, w.end + 1)]);
  };

  const onDaemonData = (s: Socket, lines: LineBuffer) => (chunk: Buffer): void => {
    const { split, data } = lines.push(chunk);
    if (split) {
      const { env, whole } = splitLine(split);
      const action = env ? daemonLine(s, env, whole) : 'pass';
      if (action === 'pass') for (const part of split) stdout.write(part);
      else if (action !== 'drop') stdout.write(action);
    }
    if (!data) return;
    let from = 0;
    const parts: Buffer[] = [];
    forEachLine(data, (start, end) => {
      const env = readEnvelope(data, start, end);
      const action = env ? daemonLine(s, env, () => ({ buf: data, start, end, env })) : 'pass';
      if (action === 'pass') return;
      if (start > from) parts.push(data.subarray(from, start));
      from = end + 1;
      if (action !== 'drop') parts.push(action);
    });
    if (from === 0) stdout.write(data);
    else {
      if (from < data.length) parts.push(data.subarray(from));
      if (parts.length > 0) stdout.write(parts.length === 1 ? parts[0]! : Buffer.concat(parts));
    }
  };

  const onDaemonGone = (gone: Socket): void => {
    if (socket !== gone) return;
    socket = undefined;
    if (ending) return;
    const pid = daemonPid;
    let out = '';
    // Requests still queued never reached the dead daemon: they go to the next one.
    for (const [id, method] of inflight) {
      if (queuedIds.has(id)) continue;
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
    s.on('data', onDaemonData(s, new LineBuffer()));
    s.on('error', () => s.destroy());
    s.once('close', () => onDaemonGone(s));
    s.resume();
    if (initLine !== undefined && initDelivered) {
      // A new daemon knows nothing of this session: initialize it the way the client did.
      const init = JSON.parse(initLine.toString('utf8')) as Record<string, unknown>;
      const id = `mcp-reconciler-shim-reattach-${++replays}`;
      replaying = JSON.stringify(id);
      init.id = id;
      s.write(jsonLine(init));
      return;
    }
    if (initLine !== undefined && queued.some((b) => b.includes(initLine!))) initDelivered = true;
    for (const bytes of queued) s.write(bytes);
    queued = [];
    queuedIds.clear();
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
