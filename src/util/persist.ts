/**
 * The persistence kit every file store uses: where our files live (the XDG
 * rule), how they are written (atomically, owner-only), and the shape check
 * for what is read back. One home, so a store cannot get one of them wrong.
 */
import { chmodSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, dirname, isAbsolute, join } from 'node:path';
import { createHash, randomBytes } from 'node:crypto';

/** The XDG base directories we use, with the fallback under `$HOME` each has. */
const XDG = {
  config: { variable: 'XDG_CONFIG_HOME', fallback: ['.config'] },
  cache: { variable: 'XDG_CACHE_HOME', fallback: ['.cache'] },
  state: { variable: 'XDG_STATE_HOME', fallback: ['.local', 'state'] },
} as const;

/**
 * `$XDG_<KIND>_HOME/mcp-reconciler` when that variable is an absolute path
 * (the XDG rule: a relative one is ignored), else the kind's default under
 * `$HOME` (`~/.config`, `~/.cache`, `~/.local/state`).
 */
export function appDir(kind: keyof typeof XDG, env: NodeJS.ProcessEnv = process.env): string {
  const { variable, fallback } = XDG[kind];
  const xdg = env[variable];
  const base = xdg && isAbsolute(xdg) ? xdg : join(env.HOME || homedir(), ...fallback);
  return join(base, 'mcp-reconciler');
}

/** A file-name-safe key for the workspace `root` (pass its real path, so every path to it shares one key). */
export function workspaceKey(root: string): string {
  return createHash('sha256').update(root).digest('hex').slice(0, 32);
}

/** A plain JSON object (not an array, not null). */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function tempPathFor(file: string): string {
  return join(dirname(file), `.${basename(file)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
}

/** Options of {@link writeFileAtomic}. */
export interface AtomicWriteOptions {
  /** Create the parent directory (mode 0700) first. */
  mkdir?: boolean;
  /** fsync the file before the rename (for stores whose loss costs the user a decision). */
  durable?: boolean;
  /** The file's mode; default 0600 (owner only). */
  mode?: number;
}

/**
 * Replace `file` with `content` atomically: a temp file beside it, created
 * exclusively with mode 0600 (chmod'ed again, whatever the umask or a
 * leftover), then renamed over `file`. On failure the temp file is removed
 * and the error rethrown; readers never see a half-written file.
 */
export async function writeFileAtomic(file: string, content: string, options: AtomicWriteOptions = {}): Promise<void> {
  if (options.mkdir) await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  const tmp = tempPathFor(file);
  try {
    const mode = options.mode ?? 0o600;
    const fh = await open(tmp, 'wx', mode);
    try {
      await fh.chmod(mode);
      await fh.writeFile(content, 'utf8');
      if (options.durable) await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, file);
  } catch (err) {
    await rm(tmp, { force: true }).catch(() => undefined);
    throw err;
  }
}

/** {@link writeFileAtomic}, synchronously: for the process journal, which is written from exit paths. */
export function writeFileAtomicSync(file: string, content: string, options: Pick<AtomicWriteOptions, 'mkdir'> = {}): void {
  if (options.mkdir) mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const tmp = tempPathFor(file);
  try {
    writeFileSync(tmp, content, { mode: 0o600, flag: 'wx' });
    chmodSync(tmp, 0o600);
    renameSync(tmp, file);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}
