/**
 * Remembered answers to VS Code `${input:id}` prompts and host variables
 * such as Claude Code's `${CLAUDE_PLUGIN_ROOT}` (docs/presets.md): a JSON file,
 * mode 0600, keyed by workspace root and then by the variable as written
 * in the braces (`input:api-key`, `CLAUDE_PLUGIN_ROOT`).
 *
 *     { "version": 1, "workspaces": { "/abs/root": { "input:api-key": "…" } } }
 *
 * Answers can be secrets (`password` inputs) and can become command paths,
 * so a file that someone else owns or can write is not used.
 */
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { withFileLock } from '../util/file-lock.js';
import { setOwn } from '../util/own.js';
import { appDir, isPlainObject, writeFileAtomic } from '../util/persist.js';
import { readTrusted } from '../util/file-trust.js';

/** `$XDG_CONFIG_HOME/mcp-reconciler/inputs.json`, else `~/.config/mcp-reconciler/inputs.json`. */
export function defaultInputsPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(appDir('config', env), 'inputs.json');
}

interface StoreFile {
  version: 1;
  workspaces: Record<string, Record<string, string>>;
}

/** The answers store; every method is safe to call concurrently within one process. */
export class InputStore {
  constructor(readonly path: string) {}

  /**
   * The file's answers, or why it cannot be used. A missing file is empty.
   * Never throws.
   */
  private async read(): Promise<{ doc: StoreFile; error?: string }> {
    const empty = (): StoreFile => ({ version: 1, workspaces: {} });
    let text: string;
    try {
      const read = await readTrusted(this.path);
      if ('missing' in read) return { doc: empty() };
      if ('untrusted' in read) {
        const { what, fix } = read.untrusted;
        return {
          doc: empty(),
          error: `${this.path} is ${what}, so its answers are not used (anyone who can write it could choose what your servers run): if it is yours, run \`${fix}\`, otherwise delete it`,
        };
      }
      text = read.text;
    } catch (err) {
      return { doc: empty(), error: `cannot read ${this.path}: ${(err as Error).message}` };
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return { doc: empty(), error: `${this.path} is not valid JSON, so no remembered answer is used: delete it to start over` };
    }
    if (!isPlainObject(parsed) || !isPlainObject(parsed.workspaces)) {
      return { doc: empty(), error: `${this.path} is not an inputs file ({"version": 1, "workspaces": {…}}): delete it to start over` };
    }
    const doc = empty();
    for (const [root, answers] of Object.entries(parsed.workspaces)) {
      if (!isPlainObject(answers)) continue;
      const kept: Record<string, string> = {};
      for (const [k, v] of Object.entries(answers)) if (typeof v === 'string') setOwn(kept, k, v);
      setOwn(doc.workspaces, root, kept);
    }
    return { doc };
  }

  /** The remembered answer to `variable` in workspace `root`; `error` says why the file was not used. */
  async get(root: string, variable: string): Promise<{ value?: string; error?: string }> {
    const { doc, error } = await this.read();
    const answers = Object.hasOwn(doc.workspaces, root) ? doc.workspaces[root]! : {};
    const value = Object.hasOwn(answers, variable) ? answers[variable] : undefined;
    return { ...(value !== undefined ? { value } : {}), ...(error !== undefined ? { error } : {}) };
  }

  /**
   * Remember `value` for `variable` in `root`. The file is rewritten
   * atomically under a lock, mode 0600, its directory created 0700. Throws
   * an `Error` saying what failed.
   */
  async set(root: string, variable: string, value: string): Promise<void> {
    const dir = dirname(this.path);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await withFileLock(`${this.path}.lock`, async () => {
      const { doc, error } = await this.read();
      if (error !== undefined) throw new Error(error);
      const answers = Object.hasOwn(doc.workspaces, root) ? doc.workspaces[root]! : {};
      setOwn(answers, variable, value);
      setOwn(doc.workspaces, root, answers);
      try {
        await writeFileAtomic(this.path, `${JSON.stringify(doc, null, 2)}\n`, { durable: true });
      } catch (err) {
        throw new Error(`cannot write ${this.path}: ${(err as Error).message}; check that ${dir} is writable by you`);
      }
    });
  }
}
