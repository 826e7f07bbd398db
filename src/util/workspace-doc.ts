/**
 * A workspace's own JSON document kept beside the listing cache (the tool
 * usage counts, the accepted tool definitions): one 0600 file per workspace,
 * in a folder of its kind next to the cache directory (not inside it: that
 * holds listings only), read only when trusted, written atomically.
 */
import { join } from 'node:path';
import { readTrustedSync } from './file-trust.js';
import { isPlainObject, workspaceKey, writeFileAtomic } from './persist.js';

export class WorkspaceDoc {
  /** `<cacheDir>/../<folder>/<workspace key>.json`. */
  readonly path: string;

  constructor(cacheDir: string, folder: string, root: string) {
    this.path = join(cacheDir, '..', folder, `${workspaceKey(root)}.json`);
  }

  /** The document of `root` in `folder` beside the listing cache directory `cacheDir`; none for `false` (in memory only). */
  static beside(cacheDir: string | false, folder: string, root: string): WorkspaceDoc | undefined {
    return cacheDir === false ? undefined : new WorkspaceDoc(cacheDir, folder, root);
  }

  /** The document's member `key` when it is an object (`{}` otherwise: no file yet, or an unusable one). */
  member(key: string): Record<string, unknown> {
    const value = this.read()?.[key];
    return isPlainObject(value) ? value : {};
  }

  /**
   * The document, or `undefined` when there is none yet, it does not parse,
   * or someone else could have written it (its content decides what a model
   * is shown: file-trust.ts).
   */
  read(): Record<string, unknown> | undefined {
    try {
      const read = readTrustedSync(this.path);
      if (!('text' in read)) return undefined;
      const doc: unknown = JSON.parse(read.text);
      return isPlainObject(doc) ? doc : undefined;
    } catch {
      return undefined;
    }
  }

  /** Write `{ version: 1, ...body }` without blocking the event loop (a busy gateway keeps answering); a failure goes to `onError`. */
  async write(body: Record<string, unknown>, onError: (err: unknown) => void): Promise<void> {
    try {
      await writeFileAtomic(this.path, JSON.stringify({ version: 1, ...body }), { mkdir: true });
    } catch (err) {
      onError(err);
    }
  }
}
