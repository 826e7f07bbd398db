/** Shared bits of the approval-store tests: the directories a store works in, records, file modes. */
import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeEach } from 'vitest';
import type { ApprovalRecord } from '../../src/approvals/store.js';
import { tempDirEach } from '../helpers/temp-dir.js';

/** Where a store test works: a temp directory, the workspace root in it, and the approvals file's path. */
export interface StoreDirs {
  readonly dir: string;
  /** `<dir>/ws`, made empty. */
  readonly root: string;
  /** `<dir>/<file…>`; its folder is not made. */
  readonly file: string;
}

/** For each test: a fresh {@link StoreDirs} in `<prefix>…` (its real path), removed after the test. */
export function storeDirs(prefix: string, ...file: string[]): StoreDirs {
  const tmp = tempDirEach(prefix);
  beforeEach(async () => {
    await mkdir(join(tmp.path, 'ws'));
  });
  return {
    get dir() {
      return tmp.path;
    },
    get root() {
      return join(tmp.path, 'ws');
    },
    get file() {
      return join(tmp.path, ...file);
    },
  };
}

/** A decision record of `hash`, at a fixed time. */
export const rec = (hash: string, decision: ApprovalRecord['decision'] = 'approved'): ApprovalRecord => ({ hash, decision, at: '2025-01-01T00:00:00.000Z' });

/** The permission bits of `path`. */
export const modeOf = async (path: string): Promise<number> => (await stat(path)).mode & 0o777;
