/**
 * The request channel: how a one-shot command (`reconnect`, `approve
 * --session`) reaches a `watch` running for the same workspace, the way a
 * persisted approval reaches it through the approvals file.
 *
 * One small JSON file per workspace (keyed by the canonical root) next to the
 * approvals store, mode 0600 in a 0700 directory, always rewritten atomically
 * under a cross-process lock:
 *
 * - a running watch registers itself in `watchers` (pid, host, start time),
 *   watches the file and takes each new `pending` request once (`taken`),
 *   acts, and stores the answer (`done`);
 * - a sender refuses at once when no registered watch is alive, else appends
 *   a request and polls for the answer; when no watch took it within its
 *   pickup time it withdraws it, so nothing is replayed later;
 * - a watch never takes a request older than itself or past its pickup time,
 *   and anyone holding the lock prunes expired requests and dead watchers.
 */
import { randomUUID } from 'node:crypto';
import { lstat, mkdir, readFile, rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { withFileLock } from '../util/file-lock.js';
import { ErrorCode, McpReconcilerError, describeError } from '../errors.js';
import { untrustedFile } from '../util/file-trust.js';
import { watchConfigFiles, type ConfigWatcher } from '../watch/config-watcher.js';
import { workspaceKey, writeFileAtomic } from '../util/persist.js';

/** What a request asks the running watch to do. */
export type RequestVerb = 'reconnect' | 'approve-session' | 'approve-tools';

/** One request: a verb and the server it is about. */
export interface ChannelRequest {
  verb: RequestVerb;
  server: string;
}

/** The running watch's answer. `code` is an `ErrorCode` when `ok` is false. */
export interface RequestResult {
  ok: boolean;
  message: string;
  code?: string;
  hint?: string;
}

/** How {@link sendRequest} ended. */
export type SendOutcome =
  /** No live watch is registered for the workspace; nothing was written. */
  | { kind: 'no-watch' }
  /** Watches are registered but none took the request in time; it was withdrawn. */
  | { kind: 'not-picked-up'; watchers: number[] }
  /** A watch took the request but gave no answer in time. */
  | { kind: 'no-answer'; by: number }
  | { kind: 'answered'; by: number; result: RequestResult };

interface Party {
  pid: number;
  host: string;
}

interface StoredRequest extends ChannelRequest {
  id: string;
  from: Party;
  /** Epoch ms when written. */
  at: number;
  /** A watch takes it only until then. */
  pickupBy: number;
  /** Anyone may delete it after this, whatever its state. */
  expiresAt: number;
  state: 'pending' | 'taken' | 'done';
  takenBy?: Party;
  result?: RequestResult;
}

interface RegisteredWatch extends Party {
  id: string;
  startedAt: number;
}

interface ChannelFile {
  version: 1;
  root: string;
  watchers: RegisteredWatch[];
  requests: StoredRequest[];
}

/** Default wait for a running watch to take a request. */
export const DEFAULT_PICKUP_TIMEOUT_MS = 5_000;
/** Default wait for its answer once taken (it may still be starting its servers). */
export const DEFAULT_RESULT_TIMEOUT_MS = 30_000;
/** The file is tiny; anything bigger is not ours. */
const MAX_FILE_BYTES = 1024 * 1024;
const VERBS: ReadonlySet<string> = new Set<RequestVerb>(['reconnect', 'approve-session', 'approve-tools']);

/**
 * Where the channel file of workspace `root` (already canonical, see
 * `canonicalRoot`) lives for the approvals store at `approvalsPath`:
 * `<approvals file>.requests/<sha256(root)>.json`. A watch and a command that
 * use different approvals files do not reach each other.
 */
export function requestChannelPath(approvalsPath: string, root: string): string {
  return join(dirname(approvalsPath), `${basename(approvalsPath)}.requests`, `${workspaceKey(root)}.json`);
}

function self(): Party {
  return { pid: process.pid, host: hostname() };
}

function emptyFile(root: string): ChannelFile {
  return { version: 1, root, watchers: [], requests: [] };
}

/** Whether a watch registered on this host is still running; one on another host cannot be checked, so it counts. */
function alive(p: Party): boolean {
  if (p.host !== hostname()) return true;
  try {
    process.kill(p.pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but is not ours to signal.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function channelError(file: string, message: string, hint: string, cause?: unknown): McpReconcilerError {
  return new McpReconcilerError(ErrorCode.ApprovalStore, message, { hint, details: { file }, ...(cause === undefined ? {} : { cause }) });
}

function isParty(v: unknown): v is Party {
  const p = v as Party | null;
  return typeof p === 'object' && p !== null && Number.isInteger(p.pid) && typeof p.host === 'string';
}

function isResult(v: unknown): v is RequestResult {
  const r = v as RequestResult | null;
  return typeof r === 'object' && r !== null && typeof r.ok === 'boolean' && typeof r.message === 'string';
}

/** Keep only well-formed entries: the file is shared with other processes and must not crash us. */
function sanitise(doc: unknown, root: string): ChannelFile {
  const d = doc as Partial<ChannelFile> | null;
  if (typeof d !== 'object' || d === null || d.version !== 1 || d.root !== root) return emptyFile(root);
  const watchers = (Array.isArray(d.watchers) ? d.watchers : []).filter(
    (w): w is RegisteredWatch => isParty(w) && typeof w.id === 'string' && typeof w.startedAt === 'number',
  );
  const requests = (Array.isArray(d.requests) ? d.requests : []).filter(
    (r): r is StoredRequest =>
      typeof r === 'object' &&
      r !== null &&
      typeof r.id === 'string' &&
      VERBS.has(r.verb) &&
      typeof r.server === 'string' &&
      isParty(r.from) &&
      typeof r.at === 'number' &&
      typeof r.pickupBy === 'number' &&
      typeof r.expiresAt === 'number' &&
      (r.state === 'pending' || r.state === 'taken' || r.state === 'done') &&
      (r.takenBy === undefined || isParty(r.takenBy)) &&
      (r.result === undefined || isResult(r.result)),
  );
  return { version: 1, root, watchers, requests };
}

/**
 * The channel file, or an empty one when missing or unparsable (it holds no
 * decisions, so starting over loses nothing). Refuses a file that is not a
 * regular file of ours writable only by us: whoever can write it can approve
 * servers for a running session.
 */
async function readChannel(file: string, root: string): Promise<ChannelFile> {
  let st;
  try {
    st = await lstat(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return emptyFile(root);
    throw channelError(file, `Cannot read the request file ${file}: ${describeError(err)}`, `Make ${file} readable by you or delete it.`, err);
  }
  // lstat: a symlink is refused too, not followed.
  const untrusted = st.isFile() ? untrustedFile(file, st) : undefined;
  if (!st.isFile() || untrusted) {
    throw channelError(
      file,
      `Refusing the request file ${file}: it is ${untrusted ? untrusted.what : 'not a regular file'}, so someone else could send requests to your watch.`,
      `Delete ${file}; it is recreated with mode 0600.`,
    );
  }
  if (st.size > MAX_FILE_BYTES) return emptyFile(root);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return emptyFile(root);
    throw channelError(file, `Cannot read the request file ${file}: ${describeError(err)}`, `Make ${file} readable by you or delete it.`, err);
  }
  try {
    return sanitise(JSON.parse(text), root);
  } catch {
    return emptyFile(root);
  }
}

async function writeChannel(file: string, doc: ChannelFile): Promise<void> {
  if (doc.watchers.length === 0 && doc.requests.length === 0) {
    // Nothing left to say: leave no file behind.
    await rm(file, { force: true });
    return;
  }
  try {
    await writeFileAtomic(file, `${JSON.stringify(doc)}\n`);
  } catch (err) {
    throw channelError(file, `Cannot write the request file ${file}: ${describeError(err)}`, `Check that ${dirname(file)} is writable by you.`, err);
  }
}

/**
 * Read-modify-write under the lock. `fn` edits the document and returns a
 * value; the file is written only when something (including pruning) changed.
 */
async function update<T>(file: string, root: string, fn: (doc: ChannelFile) => { changed: boolean; value: T }): Promise<T> {
  try {
    await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  } catch (err) {
    throw channelError(file, `Cannot create ${dirname(file)}: ${describeError(err)}`, `Create it yourself (mode 0700) or use another --approvals file.`, err);
  }
  return withFileLock(
    `${file}.lock`,
    async () => {
      const doc = await readChannel(file, root);
      const now = Date.now();
      const before = doc.watchers.length + doc.requests.length;
      doc.watchers = doc.watchers.filter(alive);
      doc.requests = doc.requests.filter((r) => r.expiresAt > now);
      const pruned = doc.watchers.length + doc.requests.length !== before;
      const { changed, value } = fn(doc);
      if (changed || pruned) await writeChannel(file, doc);
      return value;
    },
    { timeoutMs: 5_000 },
  );
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Options of {@link sendRequest}. */
export interface SendOptions {
  /** From {@link requestChannelPath}. */
  file: string;
  /** The canonical workspace root. */
  root: string;
  request: ChannelRequest;
  /** How long a running watch has to take the request. Default {@link DEFAULT_PICKUP_TIMEOUT_MS}. */
  pickupTimeoutMs?: number;
  /** How long to wait for its answer once taken. Default {@link DEFAULT_RESULT_TIMEOUT_MS}. */
  resultTimeoutMs?: number;
  /** Poll interval while waiting. Default 50 ms. */
  pollMs?: number;
}

/**
 * Send one request to the watch running for `root` and wait (bounded) for its
 * answer. Never leaves a request behind that a later watch could replay: an
 * untaken request is withdrawn, an answered one removed.
 */
export async function sendRequest(opts: SendOptions): Promise<SendOutcome> {
  const { file, root, request } = opts;
  const pickupMs = opts.pickupTimeoutMs ?? DEFAULT_PICKUP_TIMEOUT_MS;
  const resultMs = opts.resultTimeoutMs ?? DEFAULT_RESULT_TIMEOUT_MS;
  const pollMs = opts.pollMs ?? 50;
  const id = randomUUID();
  const at = Date.now();
  const pickupBy = at + pickupMs;
  const expiresAt = pickupBy + resultMs;
  const watchers = await update(file, root, (doc) => {
    if (doc.watchers.length === 0) return { changed: false, value: [] as number[] };
    doc.requests.push({ id, verb: request.verb, server: request.server, from: self(), at, pickupBy, expiresAt, state: 'pending' });
    return { changed: true, value: doc.watchers.map((w) => w.pid) };
  });
  if (watchers.length === 0) return { kind: 'no-watch' };

  const remove = (): Promise<StoredRequest | undefined> =>
    update(file, root, (doc) => {
      const found = doc.requests.find((r) => r.id === id);
      doc.requests = doc.requests.filter((r) => r.id !== id);
      return { changed: found !== undefined, value: found };
    });
  const current = async (): Promise<StoredRequest | undefined> => (await readChannel(file, root)).requests.find((r) => r.id === id);

  // Phase 1: until a watch takes it (unlocked reads: the file is only ever replaced whole).
  let seen = await current();
  while (seen?.state === 'pending' && Date.now() < pickupBy) {
    await sleep(pollMs);
    seen = await current();
  }
  if (seen === undefined || seen.state === 'pending') {
    // Withdraw under the lock; a watch may have taken it in the meantime.
    const last = await update(file, root, (doc) => {
      const found = doc.requests.find((r) => r.id === id);
      if (found?.state === 'pending') doc.requests = doc.requests.filter((r) => r.id !== id);
      return { changed: found?.state === 'pending', value: found };
    });
    if (last === undefined || last.state === 'pending') return { kind: 'not-picked-up', watchers };
    seen = last;
  }
  // Phase 2: until it answers.
  const by = seen.takenBy?.pid ?? 0;
  while (seen?.state === 'taken' && Date.now() < expiresAt) {
    await sleep(pollMs);
    seen = await current();
  }
  const final = await remove();
  if (final?.state === 'done' && final.result) return { kind: 'answered', by: final.takenBy?.pid ?? by, result: final.result };
  return { kind: 'no-answer', by };
}

/** Options of {@link serveRequests}. */
export interface ServeOptions {
  /** From {@link requestChannelPath}. */
  file: string;
  /** The canonical workspace root. */
  root: string;
  /** Act on one request; a throw becomes a failed answer carrying the error's code and hint. */
  handle: (request: ChannelRequest) => Promise<RequestResult>;
  /** Channel problems (unreadable file, lock timeouts); the channel keeps running. */
  onError?: (err: Error) => void;
  /** Fallback poll in case a file event is missed. Default 1 000 ms. */
  pollMs?: number;
}

/** A running {@link serveRequests}. */
export interface RequestServer {
  /** Unregister and stop watching; a request taken but not finished is answered as failed. Idempotent. */
  close(): Promise<void>;
}

function resultOf(err: unknown): RequestResult {
  if (err instanceof McpReconcilerError) return { ok: false, message: err.message, code: err.code, ...(err.hint ? { hint: err.hint } : {}) };
  return { ok: false, message: describeError(err) };
}

/**
 * Register this process as the running watch of `root`, and take and act on
 * each request sent to it, one at a time, in order. Requests written before
 * this call are never taken (they were meant for an earlier watch).
 */
export async function serveRequests(opts: ServeOptions): Promise<RequestServer> {
  const { file, root } = opts;
  const me: RegisteredWatch = { ...self(), id: randomUUID(), startedAt: Date.now() };
  const report = (err: unknown): void => opts.onError?.(err instanceof Error ? err : new Error(String(err)));
  let closed = false;
  /** Taken by us and not answered yet: answered as failed if we stop first. */
  const unanswered = new Set<string>();
  let again = false;
  let running = false;

  const takeable = (r: StoredRequest, now: number): boolean => r.state === 'pending' && r.at >= me.startedAt && now <= r.pickupBy;

  const drainOnce = async (): Promise<void> => {
    // Cheap unlocked look first: the fallback poll must not take the lock every second.
    if (!(await readChannel(file, root)).requests.some((r) => takeable(r, Date.now()))) return;
    const taken = await update(file, root, (doc) => {
      const now = Date.now();
      // Checked under the lock: once close() has run, nothing more is taken.
      const mine = closed ? [] : doc.requests.filter((r) => takeable(r, now));
      for (const r of mine) {
        r.state = 'taken';
        r.takenBy = self();
        unanswered.add(r.id);
      }
      return { changed: mine.length > 0, value: mine.map((r) => ({ id: r.id, verb: r.verb, server: r.server })) };
    });
    for (const r of taken) {
      if (closed) break;
      let result: RequestResult;
      try {
        result = await opts.handle({ verb: r.verb, server: r.server });
      } catch (err) {
        result = resultOf(err);
      }
      if (closed) break; // close() has answered it already
      await answer(r.id, result);
      unanswered.delete(r.id);
    }
  };
  const answer = (id: string, result: RequestResult): Promise<void> =>
    update(file, root, (doc) => {
      const found = doc.requests.find((r) => r.id === id);
      if (found) {
        found.state = 'done';
        found.result = result;
      }
      return { changed: found !== undefined, value: undefined };
    });
  // One drain at a time; a change during a drain runs one more.
  const drain = (): void => {
    if (closed) return;
    if (running) {
      again = true;
      return;
    }
    running = true;
    void (async () => {
      do {
        again = false;
        await drainOnce().catch(report);
      } while (again && !closed);
      running = false;
    })();
  };

  await update(file, root, (doc) => {
    doc.watchers.push(me);
    return { changed: true, value: undefined };
  });
  let watcher: ConfigWatcher | undefined;
  try {
    watcher = watchConfigFiles({ files: [file], debounceMs: 20, onChange: drain, onError: report });
    await watcher.ready;
  } catch (err) {
    report(err);
  }
  const timer = setInterval(drain, opts.pollMs ?? 1_000);
  timer.unref();
  drain();

  let closing: Promise<void> | undefined;
  return {
    close() {
      closing ??= (async () => {
        closed = true;
        clearInterval(timer);
        await watcher?.close().catch(() => undefined);
        // Not waiting for a handler in progress: it may wait on servers that are being stopped.
        await update(file, root, (doc) => {
          doc.watchers = doc.watchers.filter((w) => w.id !== me.id);
          for (const r of doc.requests) {
            if (r.state === 'taken' && unanswered.has(r.id)) {
              r.state = 'done';
              r.result = { ok: false, message: 'the watch stopped before it finished this request', code: ErrorCode.NoWatch };
            }
          }
          return { changed: true, value: undefined };
        }).catch(report);
      })();
      return closing;
    },
  };
}
