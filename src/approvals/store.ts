import { lstat, mkdir, open, readlink, realpath, type FileHandle } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { ErrorCode, McpReconcilerError, describeError } from '../errors.js';
import { withFileLock, type FileLockOptions } from '../util/file-lock.js';
import { appDir, isPlainObject, writeFileAtomic } from '../util/persist.js';
import { untrustedFile } from '../util/file-trust.js';
import { getOwn, setOwn } from '../util/own.js';

/** One stored decision, bound to the config hash it was made for (SPEC §4). */
export interface ApprovalRecord {
  hash: string;
  decision: 'approved' | 'rejected';
  /** ISO time of the decision. */
  at: string;
}

/**
 * Where decisions live, keyed by (workspace root, server name). Roots are
 * canonicalised with {@link canonicalRoot} by the store itself, so a root
 * given through a symlink and its real path are the same root.
 */
export interface ApprovalStore {
  /**
   * The decisions for one root. Never throws: a store that cannot be read
   * yields no decisions (every gated server pending) plus an `approval_store` error.
   */
  load(root: string): Promise<{ decisions: Record<string, ApprovalRecord>; error?: McpReconcilerError }>;
  /** Persist one decision, leaving every other decision as it is. Rejects with an `approval_store` error. */
  set(root: string, server: string, record: ApprovalRecord): Promise<void>;
  /** optional: path of the backing file, so a watcher can ignore our own writes */
  readonly path?: string;
}

/** On-disk shape of the approvals file. */
interface StoreFile {
  version: 1;
  roots: Record<string, Record<string, ApprovalRecord>>;
}

/** `$XDG_CONFIG_HOME/mcp-reconciler/approvals.json`, or `~/.config/…` when that is unset or relative. */
export function defaultApprovalsPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(appDir('config', env), 'approvals.json');
}

/**
 * The key a workspace root is stored under: its real path (symlinks
 * resolved), so reads and writes always agree. A root that does not exist
 * (yet) falls back to its absolute path.
 */
export async function canonicalRoot(root: string): Promise<string> {
  const abs = resolve(root);
  try {
    return await realpath(abs);
  } catch {
    return abs;
  }
}

function checkRecord(server: string, record: ApprovalRecord): void {
  const problem =
    typeof server !== 'string' || server.length === 0
      ? 'the server name is empty'
      : recordProblem(record);
  if (problem) {
    throw new McpReconcilerError(ErrorCode.ApprovalStore, `Cannot store the decision for "${String(server)}": ${problem}.`, {
      hint: 'This is a bug in the caller; a decision needs a server name, a hash, approved/rejected and an ISO time.',
      details: { server },
    });
  }
}

function recordProblem(v: unknown): string | undefined {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return 'it is not an object';
  const r = v as Record<string, unknown>;
  if (typeof r.hash !== 'string' || r.hash.length === 0) return '"hash" is not a non-empty string';
  if (r.decision !== 'approved' && r.decision !== 'rejected') return '"decision" is neither "approved" nor "rejected"';
  if (typeof r.at !== 'string') return '"at" is not a string';
  return undefined;
}

/** What is wrong with a parsed approvals file, or undefined when it is well-formed. */
function fileProblem(doc: unknown): string | undefined {
  if (!isPlainObject(doc)) return 'the top level is not a JSON object';
  if (doc.version !== 1) {
    return typeof doc.version === 'number' && doc.version > 1
      ? `it has version ${doc.version}, written by a newer mcp-reconciler`
      : '"version" is not 1';
  }
  if (!isPlainObject(doc.roots)) return '"roots" is not an object';
  for (const [root, servers] of Object.entries(doc.roots)) {
    if (!isPlainObject(servers)) return `roots[${JSON.stringify(root)}] is not an object`;
    for (const [server, record] of Object.entries(servers)) {
      const problem = recordProblem(record);
      if (problem) return `roots[${JSON.stringify(root)}][${JSON.stringify(server)}]: ${problem}`;
    }
  }
  return undefined;
}

function errCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

/**
 * Why a file with these stats must not be trusted as the approvals store, or
 * undefined. Anyone who can write it could approve servers in the user's
 * name, so the shared rule of `untrustedFile` refuses it (SPEC §4 fails closed).
 */
function ownershipProblem(path: string, st: Stats): { message: string; hint: string } | undefined {
  const untrusted = untrustedFile(path, st);
  if (!untrusted) return undefined;
  return {
    message: `The approvals file ${path} is ${untrusted.what}; someone else could approve servers in your name, so it is not trusted.`,
    hint: `If its decisions are yours, run \`${untrusted.fix}\`, otherwise delete it; every project and workspace server stays pending approval until then.`,
  };
}

/**
 * The file a write must replace: `path` itself, or, when `path` is a symlink
 * (even a dangling one), the file at the end of its chain, so that replacing
 * the file keeps the link the user made. Absolute.
 */
async function writeTarget(path: string): Promise<string> {
  let current = resolve(path);
  // The same bound as the kernel's ELOOP, so a link cycle ends with an error.
  for (let hops = 0; hops < 40; hops++) {
    try {
      if (!(await lstat(current)).isSymbolicLink()) return current;
    } catch (err) {
      if (errCode(err) === 'ENOENT') return current;
      throw err;
    }
    current = resolve(dirname(current), await readlink(current));
  }
  throw Object.assign(new Error(`too many levels of symbolic links at ${path}`), { code: 'ELOOP' });
}

function copyDecisions(records: Readonly<Record<string, ApprovalRecord>> | undefined): Record<string, ApprovalRecord> {
  const out: Record<string, ApprovalRecord> = {};
  for (const [server, r] of Object.entries(records ?? {})) setOwn(out, server, { hash: r.hash, decision: r.decision, at: r.at });
  return out;
}

/**
 * The approvals store as one JSON file shared by every process of the user
 * (SPEC §4): `{ version: 1, roots: { <real root>: { <server>: record } } }`.
 * Writes hold a cross-process lock (`<file>.lock`), re-read the file inside
 * it, merge the one change and replace the file atomically (temp file in
 * the same directory, mode 0600, fsync, rename). The directory is created
 * with mode 0700 when missing. A missing file holds no decisions; an
 * unreadable or corrupt one fails closed on `load` and is never overwritten
 * by `set`.
 */
export class FileApprovalStore implements ApprovalStore {
  /** Absolute path of the approvals file. */
  readonly path: string;
  private readonly lockOptions: FileLockOptions;

  constructor(filePath: string, lockOptions: FileLockOptions = {}) {
    this.path = resolve(filePath);
    this.lockOptions = lockOptions;
  }

  async load(root: string): Promise<{ decisions: Record<string, ApprovalRecord>; error?: McpReconcilerError }> {
    try {
      const key = await canonicalRoot(root);
      const read = await this.read();
      if ('error' in read) return { decisions: {}, error: read.error };
      return { decisions: copyDecisions(getOwn(read.doc.roots, key)) };
    } catch (err) {
      // Fail closed on anything unforeseen, too: no decisions, never a throw.
      return { decisions: {}, error: this.storeError(`Cannot read the approvals file ${this.path}: ${describeError(err)}`, err) };
    }
  }

  async set(root: string, server: string, record: ApprovalRecord): Promise<void> {
    checkRecord(server, record);
    const key = await canonicalRoot(root);
    let target: string;
    try {
      target = await writeTarget(this.path);
    } catch (err) {
      throw this.storeError(`Cannot follow the approvals file ${this.path}: ${describeError(err)}`, err, `Point ${this.path} at a regular file, or delete the link.`);
    }
    for (const dir of new Set([dirname(this.path), dirname(target)])) {
      try {
        await mkdir(dir, { recursive: true, mode: 0o700 });
      } catch (err) {
        throw this.storeError(`Cannot create the directory ${dir} for the approvals file: ${describeError(err)}`, err, `Create ${dir} yourself or point the approvals option at a writable file.`);
      }
    }
    // Locked on the real file, so stores that reach it through different links still take turns.
    await withFileLock(
      `${target}.lock`,
      async () => {
        const read = await this.read();
        if ('error' in read) {
          // An untrusted file is refused for what it is; a corrupt one also holds decisions an overwrite would lose.
          const insecure = read.error.details.reason === 'insecure';
          throw new McpReconcilerError(
            ErrorCode.ApprovalStore,
            `Not saving the decision for "${server}": ${read.error.message}${insecure ? '' : ' Overwriting it would lose the decisions it holds.'}`,
            {
              hint: insecure ? `${read.error.hint ?? ''} Then decide again.`.trim() : `Fix or delete ${this.path}, then decide again.`,
              details: { file: this.path, server },
              cause: read.error,
            },
          );
        }
        const roots = read.doc.roots;
        const next: StoreFile = {
          version: 1,
          roots: { ...roots, [key]: { ...(getOwn(roots, key) ?? {}), [server]: { hash: record.hash, decision: record.decision, at: record.at } } },
        };
        await this.writeAtomic(target, `${JSON.stringify(next, null, 2)}\n`);
      },
      this.lockOptions,
    );
  }

  /**
   * The whole file, or why it cannot be used. A missing or blank file is an
   * empty store; one someone else could write is refused before it is read.
   */
  private async read(): Promise<{ doc: StoreFile } | { error: McpReconcilerError }> {
    let text: string;
    let fh: FileHandle | undefined;
    try {
      fh = await open(this.path, 'r');
      // Judge the very file that is read (the end of any symlink), not a path that could be swapped meanwhile.
      const st = await fh.stat();
      const problem = ownershipProblem(this.path, st);
      if (problem) {
        return {
          error: new McpReconcilerError(ErrorCode.ApprovalStore, problem.message, {
            hint: problem.hint,
            details: { file: this.path, reason: 'insecure', uid: st.uid, mode: st.mode & 0o777 },
          }),
        };
      }
      text = await fh.readFile('utf8');
    } catch (err) {
      if (errCode(err) === 'ENOENT') return { doc: { version: 1, roots: {} } };
      return {
        error: this.storeError(
          `Cannot read the approvals file ${this.path}: ${describeError(err)}.`,
          err,
          `Make ${this.path} readable by you (mode 0600) or delete it; until then every project and workspace server stays pending approval.`,
        ),
      };
    } finally {
      await fh?.close();
    }
    if (text.trim() === '') return { doc: { version: 1, roots: {} } };
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch (err) {
      return { error: this.storeError(`The approvals file ${this.path} is corrupt: it is not valid JSON (${describeError(err)}).`, err) };
    }
    const problem = fileProblem(doc);
    if (problem) return { error: this.storeError(`The approvals file ${this.path} is corrupt: ${problem}.`) };
    return { doc: doc as StoreFile };
  }

  /** Replace `target` (the approvals file, or the end of its symlink) atomically: temp file next to it, then rename. */
  private async writeAtomic(target: string, content: string): Promise<void> {
    const dir = dirname(target);
    try {
      await writeFileAtomic(target, content, { durable: true });
    } catch (err) {
      throw this.storeError(`Cannot write the approvals file ${this.path}: ${describeError(err)}`, err, `Check that ${dir} is writable by you.`);
    }
    // Make the rename itself durable; some filesystems cannot fsync a directory, which is fine.
    try {
      const dh = await open(dir, 'r');
      try {
        await dh.sync();
      } finally {
        await dh.close();
      }
    } catch {
      // best effort
    }
  }

  private storeError(message: string, cause?: unknown, hint?: string): McpReconcilerError {
    return new McpReconcilerError(ErrorCode.ApprovalStore, message, {
      hint: hint ?? `Fix or delete ${this.path}; until then every project and workspace server stays pending approval.`,
      details: { file: this.path },
      ...(cause === undefined ? {} : { cause }),
    });
  }
}

/** An approvals store that lives in memory only: for tests and hosts that persist nothing. */
export class MemoryApprovalStore implements ApprovalStore {
  private readonly roots = new Map<string, Record<string, ApprovalRecord>>();

  async load(root: string): Promise<{ decisions: Record<string, ApprovalRecord> }> {
    return { decisions: copyDecisions(this.roots.get(await canonicalRoot(root))) };
  }

  async set(root: string, server: string, record: ApprovalRecord): Promise<void> {
    checkRecord(server, record);
    const key = await canonicalRoot(root);
    this.roots.set(key, { ...(this.roots.get(key) ?? {}), [server]: { hash: record.hash, decision: record.decision, at: record.at } });
  }
}
