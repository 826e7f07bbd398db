/**
 * Whether a file we read back may be believed. Whoever can write a file we
 * act on can act in the user's name: approve servers (the approvals file),
 * choose what a server runs (remembered inputs), put words in a tool's
 * description (the listing cache), send tokens to another endpoint (the OAuth
 * store) or name PIDs for us to kill (the process records). So one rule for
 * all of them: a regular file that another user owns, or that group or
 * others may write, is not trusted. Where there are no POSIX owners
 * (Windows) every file passes.
 *
 * The verdict is taken on the open file descriptor, so it judges the very
 * file that is read (the end of any symlink), not a path that could be
 * swapped between the check and the read.
 */
import { openSync, readFileSync, closeSync, fstatSync, type Stats } from 'node:fs';
import { open } from 'node:fs/promises';
import { shellQuote } from '../format/shell.js';

/** Why a file is not trusted, and the command that makes it trusted if its content is the user's own. */
export interface Untrusted {
  reason: 'owner' | 'writable';
  /** How it stands, to follow "<file> is": `writable by group and others (mode 0666)`, `owned by uid 1001, not by you (uid 1000)`. */
  what: string;
  /** A shell command to paste: `chmod 600 <file>`, or `chown <uid> <file> && chmod 600 <file>`. */
  fix: string;
  uid: number;
  /** Permission bits (`mode & 0o777`). */
  mode: number;
}

function myUid(): number | undefined {
  return typeof process.getuid === 'function' && process.platform !== 'win32' ? process.getuid() : undefined;
}

/**
 * Why the file `path` with these stats must not be trusted, or undefined
 * when it may be. Only regular files are judged: anything else fails on its
 * own when read as a file.
 */
export function untrustedFile(path: string, st: Stats): Untrusted | undefined {
  const me = myUid();
  if (me === undefined || !st.isFile()) return undefined;
  const q = shellQuote(path);
  const mode = st.mode & 0o777;
  if (st.uid !== me) {
    return { reason: 'owner', what: `owned by uid ${st.uid}, not by you (uid ${me})`, fix: `chown ${me} ${q} && chmod 600 ${q}`, uid: st.uid, mode };
  }
  const writable = [st.mode & 0o020 ? 'group' : '', st.mode & 0o002 ? 'others' : ''].filter(Boolean);
  if (writable.length === 0) return undefined;
  const octal = mode.toString(8).padStart(4, '0');
  return { reason: 'writable', what: `writable by ${writable.join(' and ')} (mode ${octal})`, fix: `chmod 600 ${q}`, uid: st.uid, mode };
}

/** What {@link readTrusted} found: the text, no file, or a file that is not trusted (left unread). */
export type TrustedRead = { text: string } | { missing: true } | { untrusted: Untrusted };

/**
 * The text of `path` when it is trusted. A missing file (ENOENT) is
 * `{ missing: true }`; any other failure to open or read is thrown.
 */
export async function readTrusted(path: string): Promise<TrustedRead> {
  let fh;
  try {
    fh = await open(path, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { missing: true };
    throw err;
  }
  try {
    const untrusted = untrustedFile(path, await fh.stat());
    if (untrusted) return { untrusted };
    return { text: await fh.readFile('utf8') };
  } finally {
    await fh.close();
  }
}

/** {@link readTrusted}, synchronously (for callers that must not yield, such as exit hooks). */
export function readTrustedSync(path: string): TrustedRead {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { missing: true };
    throw err;
  }
  try {
    const untrusted = untrustedFile(path, fstatSync(fd));
    if (untrusted) return { untrusted };
    return { text: readFileSync(fd, 'utf8') };
  } finally {
    closeSync(fd);
  }
}
