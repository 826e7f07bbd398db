/**
 * Per-server logs: what a server wrote to stderr, the MCP log messages it
 * sent (`notifications/message`) and the supervisor's lines about it
 * (connects, losses, retries, failures), in one stream per server, so "why
 * does it fail?" has one place to look. One JSON record per line in a 0600
 * file under the state directory; a file that reaches the cap is rotated to
 * `.1`, so a server never takes more than twice the cap on disk.
 */
import { closeSync, fstatSync, mkdirSync, openSync, renameSync, writeSync } from 'node:fs';
import { open, stat, type FileHandle } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { appDir, workspaceKey } from '../util/persist.js';
import { LOG_LEVELS, type LogLevel } from '../../machines/types.js';

/** Where a record came from. */
export type LogSource = 'stderr' | 'mcp' | 'supervisor';

/** One line of a server's log. */
export interface LogRecord {
  /** ISO time it was received. */
  time: string;
  server: string;
  source: LogSource;
  /** MCP log level (`info`, `error`, …) for `mcp` records; `error` / `info` for supervisor lines. */
  level?: string;
  /** The MCP message's `logger`, when it names one. */
  logger?: string;
  /** The text, as the server sent it (escape sequences included: printers neutralise them). */
  text: string;
}

/** Largest log file per server before it is rotated (1 MiB; with the rotated file, 2 MiB per server at most). */
export const DEFAULT_LOG_MAX_BYTES = 1024 * 1024;

/** Longest stderr line kept as one record; a longer run without a newline is split. */
const MAX_LINE_CHARS = 16 * 1024;

/**
 * The log folder of the workspace `root`:
 * `$XDG_STATE_HOME/mcp-reconciler/logs/<hash of root>`, or
 * `~/.local/state/…` when that is unset or relative. Pass the canonical
 * (real) root, as for the process records next to it.
 */
export function defaultLogDir(root: string, env: NodeJS.ProcessEnv = process.env): string {
  return join(appDir('state', env), 'logs', workspaceKey(root));
}

/** A server's log file in `dir`. Names are user data: anything but `A-Z a-z 0-9 _ -` is %-encoded (so no `..`, `/`). */
export function logFile(dir: string, server: string): string {
  return join(dir, logFileName(server));
}

/** The file name part of {@link logFile}: it never contains a separator. */
function logFileName(server: string): string {
  // Most names need no encoding: skip the per-byte pass (one per server at every start).
  if (/^[A-Za-z0-9_-]+$/.test(server)) return `${server}.log`;
  const safe = [...Buffer.from(server, 'utf8')].map((b) => (/[A-Za-z0-9_-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`)).join('');
  return `${safe}.log`;
}

/**
 * How long a server's log file stays open after its last write. A start
 * writes a few lines per server within a second or two; opening and closing
 * the file for each of them cost ~95 ms of host CPU at 50 servers
 * (docs/performance.md). Closed when idle so a quiet server holds no
 * descriptor.
 */
const IDLE_CLOSE_MS = 2_000;

/**
 * One server's file: the records of an event-loop turn are appended in one
 * write, and the file is rotated at the cap. Appends are synchronous: a turn's
 * records are a few hundred bytes into the page cache of the local state
 * folder, which costs less than a round trip through the thread pool
 * (docs/performance.md, "Log appends without the thread pool"); the process
 * records beside the logs are written the same way.
 */
class LogSink {
  private pending: string[] = [];
  private pendingBytes = 0;
  private dropped = 0;
  private size: number | undefined;
  private scheduled = false;
  /** The open file, between writes that come close together. */
  private fd: number | undefined;
  private idle: NodeJS.Timeout | undefined;

  constructor(
    private readonly file: string,
    private readonly maxBytes: number,
    private readonly ensureDir: () => void,
    private readonly onError: (err: unknown) => void,
  ) {}

  append(line: string): void {
    const bytes = Buffer.byteLength(line);
    this.pending.push(line);
    this.pendingBytes += bytes;
    // A server writing more in one turn than the cap: keep the newest cap's worth.
    while (this.pendingBytes > this.maxBytes && this.pending.length > 1) {
      const old = this.pending.shift()!;
      this.pendingBytes -= Buffer.byteLength(old);
      this.dropped++;
    }
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  /** Flush, then close the file (the next append opens it again). */
  close(): void {
    this.flush();
    clearTimeout(this.idle);
    this.idle = undefined;
    this.closeFile();
  }

  /** Write everything appended so far. */
  flush(): void {
    this.scheduled = false;
    if (this.pending.length === 0) return;
    const chunk = this.pending.join('');
    this.pending = [];
    this.pendingBytes = 0;
    clearTimeout(this.idle);
    try {
      this.ensureDir();
      this.write(chunk);
    } catch (err) {
      this.closeFile();
      this.onError(err);
      return;
    }
    this.idle = setTimeout(() => this.closeFile(), IDLE_CLOSE_MS);
    this.idle.unref();
  }

  private closeFile(): void {
    const fd = this.fd;
    this.fd = undefined;
    if (fd === undefined) return;
    try {
      closeSync(fd);
    } catch {
      // already closed: nothing to release
    }
  }

  private write(chunk: string): void {
    let bytes = Buffer.byteLength(chunk);
    this.fd ??= openSync(this.file, 'a', 0o600);
    this.size ??= fstatSync(this.fd).size;
    if (this.size + bytes > this.maxBytes && this.size > 0) {
      this.closeFile();
      renameSync(this.file, `${this.file}.1`);
      this.size = 0;
      this.fd = openSync(this.file, 'a', 0o600);
    }
    let data = chunk;
    if (bytes > this.maxBytes) {
      // Keep whole records from the end.
      const tail = Buffer.from(chunk).subarray(bytes - this.maxBytes).toString('utf8');
      data = tail.slice(tail.indexOf('\n') + 1);
      bytes = Buffer.byteLength(data);
    }
    let written = writeSync(this.fd, data);
    if (written < bytes) {
      // A short write (a full disk fails with the next one): the rest, from where it stopped.
      const rest = Buffer.from(data);
      while (written < bytes) written += writeSync(this.fd, rest, written);
    }
    this.size += bytes;
  }

  /** How many records were dropped since the last call (more than the cap came in one turn). */
  takeDropped(): number {
    const n = this.dropped;
    this.dropped = 0;
    return n;
  }
}

/** Options of a {@link ServerLogWriter}. */
export interface ServerLogWriterOptions {
  /** Cap of each server's log file, in bytes; default {@link DEFAULT_LOG_MAX_BYTES}. */
  maxBytes?: number;
  /** Writing failed (disk full, no permission): logs are best effort, a server never waits for them. */
  onError?: (err: unknown) => void;
}

/** Writes every server's log of one workspace into `dir`. */
export class ServerLogWriter {
  private readonly sinks = new Map<string, LogSink>();
  /** Undecoded bytes and the unfinished line of each server's stderr. */
  private readonly partial = new Map<string, { decoder: StringDecoder; line: string }>();
  private readonly maxBytes: number;
  private dirReady = false;
  private errorReported = false;

  constructor(
    readonly dir: string,
    private readonly options: ServerLogWriterOptions = {},
  ) {
    this.maxBytes = Math.max(4096, options.maxBytes ?? DEFAULT_LOG_MAX_BYTES);
    // Normalised once: `join` per server re-normalises the whole folder path, and a
    // start opens one sink per server (docs/performance.md).
    const folder = join(dir, '.');
    this.prefix = folder.endsWith(sep) ? folder : folder + sep;
  }

  /** `dir`, normalised, with one trailing separator. */
  private readonly prefix: string;

  private sink(server: string): LogSink {
    let sink = this.sinks.get(server);
    if (!sink) {
      sink = new LogSink(
        this.prefix + logFileName(server),
        this.maxBytes,
        () => {
          if (this.dirReady) return;
          mkdirSync(this.dir, { recursive: true, mode: 0o700 });
          this.dirReady = true;
        },
        (err) => {
          this.dirReady = false;
          // Once per writer: a full disk would otherwise report every line.
          if (!this.errorReported) this.options.onError?.(err);
          this.errorReported = true;
        },
      );
      this.sinks.set(server, sink);
    }
    return sink;
  }

  private record(r: Omit<LogRecord, 'time'>): void {
    const sink = this.sink(r.server);
    const dropped = sink.takeDropped();
    const time = new Date().toISOString();
    if (dropped > 0) sink.append(`${JSON.stringify({ time, server: r.server, source: 'supervisor', level: 'warning', text: `${dropped} log lines dropped: the server wrote more than the log's cap (${this.maxBytes} bytes) at once` })}\n`);
    sink.append(`${JSON.stringify({ time, ...r })}\n`);
  }

  /** A chunk of `server`'s stderr; complete lines become records, the rest waits for its newline. */
  stderr(server: string, chunk: Buffer): void {
    let p = this.partial.get(server);
    if (!p) this.partial.set(server, (p = { decoder: new StringDecoder('utf8'), line: '' }));
    p.line += p.decoder.write(chunk);
    let nl: number;
    while ((nl = p.line.indexOf('\n')) >= 0 || p.line.length > MAX_LINE_CHARS) {
      const end = nl >= 0 && nl <= MAX_LINE_CHARS ? nl : MAX_LINE_CHARS;
      const text = p.line.slice(0, end).replace(/\r$/, '');
      p.line = p.line.slice(end + (end === nl ? 1 : 0));
      this.record({ server, source: 'stderr', text });
    }
  }

  /** Whatever `server` wrote to stderr without a final newline (its process ended). */
  endStderr(server: string): void {
    const p = this.partial.get(server);
    if (!p) return;
    this.partial.delete(server);
    const rest = p.line + p.decoder.end();
    if (rest !== '') this.record({ server, source: 'stderr', text: rest });
  }

  /** An MCP `notifications/message` from `server`. */
  message(server: string, params: { level: string; logger?: string; data?: unknown }): void {
    const text = typeof params.data === 'string' ? params.data : JSON.stringify(params.data) ?? '';
    this.record({ server, source: 'mcp', level: params.level, ...(params.logger !== undefined ? { logger: params.logger } : {}), text });
  }

  /** A line of the supervisor's about `server`. */
  supervisor(server: string, text: string, level: 'info' | 'warning' | 'error' = 'info'): void {
    this.record({ server, source: 'supervisor', level, text });
  }

  /** Resolves once everything recorded so far is written. */
  async flush(): Promise<void> {
    for (const server of [...this.partial.keys()]) this.endStderr(server);
    for (const sink of this.sinks.values()) sink.flush();
  }

  /** {@link flush}, then close every open log file (a later record opens its file again). */
  async close(): Promise<void> {
    await this.flush();
    for (const sink of this.sinks.values()) sink.close();
  }
}

/** Options of {@link readServerLog}. */
export interface ReadLogOptions {
  /** Only records at or after this time (a `Date`, or epoch milliseconds). */
  since?: Date | number;
  /** Keep waiting for new records (across rotations) until `signal` aborts. */
  follow?: boolean;
  signal?: AbortSignal;
  /** How often a followed log is checked for growth; default 200 ms. */
  pollMs?: number;
  /**
   * Only records at this MCP log level or more severe. Stderr lines carry no
   * level and are always kept (a crash trace is on stderr).
   */
  level?: LogLevel;
}

/** Whether record `r` is at `level` or more severe; a record without a level (stderr) always is. */
export function atLevel(r: LogRecord, level: LogLevel): boolean {
  if (r.level === undefined) return true;
  const rank = (LOG_LEVELS as readonly string[]).indexOf(r.level);
  return rank < 0 || rank >= LOG_LEVELS.indexOf(level);
}

function parseLine(line: string): LogRecord | undefined {
  try {
    const r = JSON.parse(line) as LogRecord;
    return typeof r.time === 'string' && typeof r.text === 'string' ? r : undefined;
  } catch {
    return undefined;
  }
}

async function openIfExists(path: string): Promise<FileHandle | undefined> {
  try {
    return await open(path, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** Read `fh` from `offset` to its current end; whole lines only. */
async function readFrom(fh: FileHandle, offset: number): Promise<{ lines: string[]; offset: number }> {
  const { size } = await fh.stat();
  if (size <= offset) return { lines: [], offset };
  const buf = Buffer.alloc(size - offset);
  const { bytesRead } = await fh.read(buf, 0, buf.length, offset);
  const text = buf.subarray(0, bytesRead).toString('utf8');
  const last = text.lastIndexOf('\n');
  if (last < 0) return { lines: [], offset };
  return { lines: text.slice(0, last).split('\n'), offset: offset + Buffer.byteLength(text.slice(0, last + 1)) };
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * The records of `server`'s log in `dir`, oldest first: the rotated file,
 * then the current one. With `follow`, keeps yielding new records as they
 * are written (a rotation is followed) until `signal` aborts. A missing log
 * yields nothing (and, followed, waits for it to appear).
 */
export async function* readServerLog(dir: string, server: string, options: ReadLogOptions = {}): AsyncGenerator<LogRecord> {
  const file = logFile(dir, server);
  const since = options.since === undefined ? undefined : new Date(options.since).toISOString();
  const level = options.level;
  const keep = (r: LogRecord | undefined): r is LogRecord => r !== undefined && (since === undefined || r.time >= since) && (level === undefined || atLevel(r, level));
  const rotated = await openIfExists(`${file}.1`);
  if (rotated) {
    try {
      for (const line of (await readFrom(rotated, 0)).lines) {
        const r = parseLine(line);
        if (keep(r)) yield r;
      }
    } finally {
      await rotated.close();
    }
  }
  let fh = await openIfExists(file);
  let offset = 0;
  try {
    for (;;) {
      if (fh) {
        const read = await readFrom(fh, offset);
        offset = read.offset;
        for (const line of read.lines) {
          const r = parseLine(line);
          if (keep(r)) yield r;
        }
      }
      if (!options.follow || options.signal?.aborted) return;
      await sleep(options.pollMs ?? 200, options.signal);
      if (options.signal?.aborted) return;
      // Rotated (or created) since: finish the old file through its handle, then start the new one.
      const now = await stat(file).catch(() => undefined);
      const ino = fh ? (await fh.stat()).ino : undefined;
      if (now && now.ino !== ino) {
        if (fh) {
          for (const line of (await readFrom(fh, offset)).lines) {
            const r = parseLine(line);
            if (keep(r)) yield r;
          }
          await fh.close();
        }
        fh = await openIfExists(file);
        offset = 0;
      }
    }
  } finally {
    await fh?.close();
  }
}
