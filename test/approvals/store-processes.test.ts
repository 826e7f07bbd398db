import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, realpath, rm, stat, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FileApprovalStore } from '../../src/approvals/store.js';
import { pidAlive } from '../helpers/processes.js';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const writer = join(repo, 'dist', 'test', 'approvals', 'store-writer.js');
const WORKERS = 4;
const PER_WORKER = 25;

/** The child runs compiled code: refuse to test a missing or stale build. */
function assertBuilt(): void {
  const pairs: Array<[string, string]> = [
    ['test/approvals/store-writer.ts', 'dist/test/approvals/store-writer.js'],
    ['src/approvals/store.ts', 'dist/src/approvals/store.js'],
    ['src/util/file-lock.ts', 'dist/src/util/file-lock.js'],
  ];
  for (const [src, out] of pairs) {
    const built = join(repo, out);
    if (!existsSync(built) || statSync(built).mtimeMs < statSync(join(repo, src)).mtimeMs) {
      throw new Error(`${out} is missing or older than ${src}: run \`npx tsc -p .\` (npm run build) before this test.`);
    }
  }
}

const children: ChildProcess[] = [];
let dir: string;
beforeAll(async () => {
  assertBuilt();
  dir = await realpath(await mkdtemp(join(tmpdir(), 'mcpr-store-procs-')));
});
afterEach(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});
afterAll(async () => {
  for (const child of children) expect(pidAlive(child.pid!)).toBe(false);
  await rm(dir, { recursive: true, force: true });
});

function run(args: string[]): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [writer, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  children.push(child);
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  return new Promise((resolvePromise, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolvePromise({ code, stderr }));
  });
}

describe('FileApprovalStore across processes', () => {
  it(`${WORKERS} processes writing ${PER_WORKER} decisions each at once lose none`, async () => {
    const root = join(dir, 'ws');
    await mkdir(root);
    const link = join(dir, 'ws-link');
    await symlink(root, link);
    const file = join(dir, 'cfg', 'approvals.json');

    // half the writers name the root through a symlink: all must land under one real root
    const results = await Promise.all(
      Array.from({ length: WORKERS }, (_, w) => run([file, w % 2 === 0 ? root : link, String(w), String(PER_WORKER)])),
    );
    for (const r of results) expect(r, r.stderr).toMatchObject({ code: 0 });

    const { decisions, error } = await new FileApprovalStore(file).load(root);
    expect(error).toBeUndefined();
    expect(Object.keys(decisions)).toHaveLength(WORKERS * PER_WORKER);
    for (let w = 0; w < WORKERS; w++) {
      for (let i = 0; i < PER_WORKER; i++) {
        expect(decisions[`w${w}-s${i}`]).toMatchObject({ hash: `h-${w}-${i}`, decision: i % 2 === 0 ? 'approved' : 'rejected' });
      }
    }
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(await readdir(dirname(file))).toEqual(['approvals.json']);
  });
});
