/**
 * A temp directory that lives exactly as long as the tests that use it: made
 * (its real path: macOS's /tmp is a link) before them, removed after them,
 * even when one failed. Call it in a describe block (or at the top of a file)
 * before the hooks that use the directory: vitest runs after-hooks in reverse,
 * so the directory goes last, once the processes working in it are gone.
 */
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';

/** The directory's path, readable inside tests and hooks. */
export interface TempDir {
  readonly path: string;
}

type Hook = (fn: () => Promise<void>) => void;

function tempDir(prefix: string, before: Hook, after: Hook): TempDir {
  let path: string | undefined;
  before(async () => {
    path = await realpath(await mkdtemp(join(tmpdir(), prefix)));
  });
  after(async () => {
    if (path) await rm(path, { recursive: true, force: true });
    path = undefined;
  });
  return {
    get path(): string {
      if (path === undefined) throw new Error(`temp dir ${prefix}… read outside the tests it was made for`);
      return path;
    },
  };
}

/** A fresh temp directory `<prefix>…` for each test. */
export function tempDirEach(prefix: string): TempDir {
  return tempDir(prefix, beforeEach, afterEach);
}

/** One temp directory `<prefix>…` shared by the tests of the enclosing block. */
export function tempDirAll(prefix: string): TempDir {
  return tempDir(prefix, beforeAll, afterAll);
}
