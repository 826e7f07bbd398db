/**
 * Rewriting a host's config file safely: read-modify-write under a lock (two
 * concurrent `add`s both land), the previous version kept as `FILE.bak`, the
 * new one written to a temporary file and renamed over (a reader never sees
 * half a file), private (0600) when it holds secrets.
 */
import { chmod, mkdir, readFile, realpath, stat } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { acquireFileLock } from '../../util/file-lock.js';
import { writeFileAtomic } from '../../util/persist.js';
import { ErrorCode, McpReconcilerError, describeError } from '../../errors.js';

/** What {@link rewriteFile}'s edit function decides. */
export type Rewrite<T> = { text: string; result: T } | { text?: undefined; result: T };

/** What {@link rewriteFile} did. */
export interface Rewritten<T> {
  /** The file written (symlinks followed). */
  file: string;
  /** `FILE.bak`, when there was a previous version to keep. */
  backup?: string;
  /** The file did not exist before. */
  created: boolean;
  /** Whether anything was written. */
  written: boolean;
  result: T;
}

function errCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

function writeError(file: string, err: unknown): McpReconcilerError {
  if (err instanceof McpReconcilerError && err.code !== ErrorCode.ApprovalStore) return err;
  return new McpReconcilerError(ErrorCode.ConfigWrite, `cannot write ${file}: ${describeError(err)}`, {
    hint: `check that ${dirname(file)} exists and is writable by you; if another mcp-reconciler is not running, delete a leftover ${basename(file)}.mcp-reconciler.lock there`,
    details: { file },
    cause: err,
  });
}

/** The real file behind `path` (a dotfile manager's symlink stays a symlink), or `path` when it does not exist. */
async function target(path: string): Promise<string> {
  try {
    return await realpath(path);
  } catch (err) {
    if (errCode(err) === 'ENOENT') return path;
    throw err;
  }
}

function writeAtomically(file: string, text: string, mode: number): Promise<void> {
  // The mode may be someone's 0644 being kept, so it is set whatever the umask.
  return writeFileAtomic(file, text, { durable: true, mode });
}

/**
 * Apply `edit` to the text of `path` (empty when it does not exist) while
 * holding `path`'s lock, and write the result atomically. `edit` returns the
 * new text, or no text to leave the file alone. A file that existed is
 * copied to `FILE.bak` (0600: it may hold secrets) first and keeps its mode,
 * narrowed to 0600 when `private` is set; a new one is 0644, or 0600 when
 * `private`. Errors that are not `edit`'s own are `config_write`.
 */
export async function rewriteFile<T>(path: string, edit: (text: string, exists: boolean) => Rewrite<T> | Promise<Rewrite<T>>, options: { private?: boolean } = {}): Promise<Rewritten<T>> {
  let file = path;
  let release: (() => Promise<void>) | undefined;
  try {
    file = await target(path);
    await mkdir(dirname(file), { recursive: true });
    // Not `FILE.lock`: Claude Code keeps a lock directory of that name next to ~/.claude.json.
    release = await acquireFileLock(`${file}.mcp-reconciler.lock`);
  } catch (err) {
    throw writeError(file, err);
  }
  try {
    let text = '';
    let exists = true;
    let mode = 0o644;
    try {
      text = await readFile(file, 'utf8');
      mode = (await stat(file)).mode & 0o777;
    } catch (err) {
      if (errCode(err) !== 'ENOENT') throw writeError(file, err);
      exists = false;
    }
    const out = await edit(text, exists);
    if (out.text === undefined || (exists && out.text === text)) return { file, created: false, written: false, result: out.result };
    if (options.private) mode &= 0o600;
    let backup: string | undefined;
    try {
      if (exists) {
        backup = `${file}.bak`;
        await writeAtomically(backup, text, 0o600);
      }
      await writeAtomically(file, out.text, mode);
      if (options.private) await chmod(file, mode);
    } catch (err) {
      throw writeError(file, err);
    }
    return { file, ...(backup ? { backup } : {}), created: !exists, written: true, result: out.result };
  } finally {
    await release();
  }
}
