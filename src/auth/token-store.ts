/**
 * Where OAuth credentials live between runs: one record per MCP server URL
 * (client registration, tokens, the loopback redirect URI they were
 * registered with, cached discovery). The default store is one JSON file,
 * mode 0600 in a 0700 directory, rewritten atomically under a cross-process
 * lock, so `mcp-reconciler auth` in one terminal and a running `watch` in
 * another never lose each other's writes. Nothing here is ever logged.
 * A file another user owns, or that group or others can write, is neither
 * read nor written (`needs_auth`, with the `chmod 600` to run): whoever can
 * write it could swap in their tokens or the endpoints ours are sent to.
 */
import { mkdir } from 'node:fs/promises';
import { dirname, isAbsolute, join } from 'node:path';
import type { OAuthDiscoveryState } from '@modelcontextprotocol/client';
import type { OAuthClientInformationMixed, OAuthTokens } from '@modelcontextprotocol/client';
import { withFileLock } from '../util/file-lock.js';
import { ErrorCode, McpReconcilerError, describeError } from '../errors.js';
import { appDir, writeFileAtomic } from '../util/persist.js';
import { readTrusted, type Untrusted } from '../util/file-trust.js';

/** What is stored for one server URL. Every field is optional: a flow fills them in as it goes. */
export interface StoredCredentials {
  /** The registration (dynamic, CIMD or pre-registered and bound to an issuer). */
  clientInformation?: OAuthClientInformationMixed;
  /** The tokens as the SDK handed them over (`issuer` included). */
  tokens?: OAuthTokens;
  /** Epoch ms when `tokens` were saved; with `expires_in` it tells when they expire. */
  tokensSavedAt?: number;
  /** The loopback redirect URI the client was registered with; reused so the registration stays valid. */
  redirectUri?: string;
  /** The pre-registered `clientId` of the config these credentials belong to (absent for dynamic registration). */
  configClientId?: string;
  /** Cached discovery, so a refresh needs no discovery round trips. */
  discovery?: OAuthDiscoveryState;
  /** The authorization server pre-registered credentials (`configClientId`) were first used with: they go to its origin only. */
  authorizationServer?: string;
}

/**
 * A store of OAuth credentials keyed by server URL. Pass your own to
 * `createMcpController({ oauth: { tokenStore } })` to keep tokens in a
 * keychain; implementations must never log what they hold.
 */
export interface TokenStore {
  /** The file behind the store, when there is one (watched for changes made by other processes). */
  readonly path?: string;
  get(key: string): Promise<StoredCredentials | undefined>;
  /** Replace the record of `key` with `update(current)`; `undefined` deletes it. */
  update(key: string, update: (current: StoredCredentials | undefined) => StoredCredentials | undefined): Promise<void>;
  /** Every key that has a record (for `logout --all` and status). */
  keys(): Promise<string[]>;
  /**
   * Run `fn` while no other holder of this store's refresh lock for `key`
   * runs, across processes where the store is shared between them. A
   * refresh runs under it, so a rotated refresh token is spent once. `fn`
   * may call {@link update}. Without it, refreshes are serialised within
   * this process only.
   */
  lock?<T>(key: string, fn: () => Promise<T>): Promise<T>;
}

/** How long a refresh may hold the lock before another process breaks it, and how long others wait for it. */
const REFRESH_LOCK = { timeoutMs: 30_000, staleMs: 30_000 };

const chains = new WeakMap<object, Map<string, Promise<unknown>>>();

/** Run `fn` after every earlier call for the same `owner` and `key` in this process has settled. */
export function serializeInProcess<T>(owner: object, key: string, fn: () => Promise<T>): Promise<T> {
  let byKey = chains.get(owner);
  if (!byKey) chains.set(owner, (byKey = new Map()));
  const previous = byKey.get(key) ?? Promise.resolve();
  const run = previous.then(fn, fn);
  const tail = run.catch(() => undefined);
  byKey.set(key, tail);
  void tail.then(() => {
    if (byKey.get(key) === tail) byKey.delete(key);
  });
  return run;
}

/**
 * `$MCP_RECONCILER_OAUTH_STORE` when set, else
 * `$XDG_CONFIG_HOME/mcp-reconciler/oauth.json`, or `~/.config/…` when that is
 * unset or relative. The CLI and a running watch find the same file this way.
 */
export function defaultTokenStorePath(env: NodeJS.ProcessEnv = process.env): string {
  const own = env.MCP_RECONCILER_OAUTH_STORE;
  if (own && isAbsolute(own)) return own;
  return join(appDir('config', env), 'oauth.json');
}

/**
 * The key credentials are stored under: the server URL without query,
 * fragment or credentials, so `?session=…` in a config does not fork them.
 */
export function credentialKey(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return url;
  }
}

interface StoreFile {
  version: 1;
  servers: Record<string, StoredCredentials>;
}

function emptyFile(): StoreFile {
  return { version: 1, servers: {} };
}

/** The JSON file store (the default). */
export class FileTokenStore implements TokenStore {
  constructor(readonly path: string) {}

  async get(key: string): Promise<StoredCredentials | undefined> {
    const file = await this.read();
    return Object.hasOwn(file.servers, key) ? file.servers[key] : undefined;
  }

  async keys(): Promise<string[]> {
    return Object.keys((await this.read()).servers);
  }

  async update(key: string, update: (current: StoredCredentials | undefined) => StoredCredentials | undefined): Promise<void> {
    await mkdir(dirname(this.path), { recursive: true, mode: 0o700 });
    await withFileLock(`${this.path}.lock`, async () => {
      const file = await this.read();
      const next = update(Object.hasOwn(file.servers, key) ? file.servers[key] : undefined);
      if (next === undefined) delete file.servers[key];
      else file.servers[key] = next;
      await this.write(file);
    });
  }

  /**
   * A lock file of its own (`<file>.refresh.lock`), not the one {@link update}
   * takes: `fn` saves the refreshed tokens through `update` while holding it.
   */
  async lock<T>(key: string, fn: () => Promise<T>): Promise<T> {
    // In-process first, so controllers of one process queue instead of polling the file.
    return serializeInProcess(this, key, async () => {
      await mkdir(dirname(this.path), { recursive: true, mode: 0o700 });
      return withFileLock(`${this.path}.refresh.lock`, fn, REFRESH_LOCK);
    });
  }

  private async read(): Promise<StoreFile> {
    let text: string;
    try {
      const read = await readTrusted(this.path);
      if ('missing' in read) return emptyFile();
      if ('untrusted' in read) throw this.untrusted(read.untrusted);
      text = read.text;
    } catch (err) {
      if (err instanceof McpReconcilerError) throw err;
      throw this.error(`could not be read: ${describeError(err)}`, err);
    }
    try {
      const doc = JSON.parse(text) as Partial<StoreFile>;
      if (doc && typeof doc === 'object' && doc.servers && typeof doc.servers === 'object') return { version: 1, servers: { ...doc.servers } };
    } catch (err) {
      throw this.error('is not valid JSON', err);
    }
    throw this.error('does not look like an mcp-reconciler token store');
  }

  private async write(file: StoreFile): Promise<void> {
    await writeFileAtomic(this.path, `${JSON.stringify(file, null, 2)}\n`, { durable: true });
  }

  /**
   * Refusal of a file someone else could write: they could swap in their own
   * tokens, or the endpoints our refresh tokens and client secrets are sent
   * to. `needs_auth`, so a server using it rests there with this reason.
   */
  private untrusted(u: Untrusted): McpReconcilerError {
    return new McpReconcilerError(
      ErrorCode.NeedsAuth,
      // The fix is in the message too: a server's status shows its last error, not the hint.
      `The OAuth token file ${this.path} is ${u.what}; someone else could replace your sign-ins (tokens, client registrations, the endpoints tokens are sent to), so it is not used: if it is yours, run \`${u.fix}\`, otherwise delete it and sign in again.`,
      {
        hint: `If its tokens are yours, run \`${u.fix}\`; otherwise delete it and sign in again with \`mcp-reconciler auth SERVER\`.`,
        details: { file: this.path, reason: 'insecure', uid: u.uid, mode: u.mode },
      },
    );
  }

  private error(what: string, cause?: unknown): McpReconcilerError {
    return new McpReconcilerError(ErrorCode.ConfigInvalid, `the OAuth token store ${this.path} ${what}`, {
      hint: `move it aside (tokens are lost; run \`mcp-reconciler auth SERVER\` again) or pass another file with --token-store`,
      details: { file: this.path },
      ...(cause !== undefined ? { cause } : {}),
    });
  }
}

/** A store that lives as long as the process: for tests and hosts that keep tokens elsewhere. */
export class MemoryTokenStore implements TokenStore {
  private readonly records = new Map<string, StoredCredentials>();

  async get(key: string): Promise<StoredCredentials | undefined> {
    const rec = this.records.get(key);
    return rec ? structuredClone(rec) : undefined;
  }

  async keys(): Promise<string[]> {
    return [...this.records.keys()];
  }

  async update(key: string, update: (current: StoredCredentials | undefined) => StoredCredentials | undefined): Promise<void> {
    const current = this.records.get(key);
    const next = update(current ? structuredClone(current) : undefined);
    if (next === undefined) this.records.delete(key);
    else this.records.set(key, structuredClone(next));
  }

  lock<T>(key: string, fn: () => Promise<T>): Promise<T> {
    return serializeInProcess(this, key, fn);
  }
}
