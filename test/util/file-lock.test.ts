import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { acquireFileLock, withFileLock } from '../../src/util/file-lock.js';
import { hasCode } from '../../src/errors.js';

let dir: string;
let lockPath: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mcpr-lock-'));
  lockPath = join(dir, 'x.lock');
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const lockBody = (over: Record<string, unknown> = {}) => JSON.stringify({ pid: process.pid, host: hostname(), at: Date.now(), token: 'foreign', ...over });

/** The pid of a process that has exited and been reaped. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', () => resolve());
  });
  return child.pid!;
}

async function expectLockTimeout(p: Promise<unknown>): Promise<void> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(hasCode(err, 'approval_store')).toBe(true);
  expect((err as Error).message).toContain(lockPath);
}

describe('acquireFileLock', () => {
  it('excludes a second holder until released, and names the holder when it gives up', async () => {
    const release = await acquireFileLock(lockPath);
    const content = JSON.parse(await readFile(lockPath, 'utf8')) as { pid: number; at: number };
    expect(content.pid).toBe(process.pid);
    expect(typeof content.at).toBe('number');

    const err = await acquireFileLock(lockPath, { timeoutMs: 150 }).then(() => undefined, (e: unknown) => e);
    expect(hasCode(err, 'approval_store')).toBe(true);
    expect((err as Error).message).toContain(`pid ${process.pid}`);

    await release();
    expect(existsSync(lockPath)).toBe(false);
    const again = await acquireFileLock(lockPath, { timeoutMs: 1_000 });
    await again();
  });

  it('serialises read-modify-write sections within one process', async () => {
    const counter = join(dir, 'counter');
    await writeFile(counter, '0');
    await Promise.all(
      Array.from({ length: 20 }, () =>
        withFileLock(lockPath, async () => {
          const n = Number(await readFile(counter, 'utf8'));
          await new Promise((r) => setImmediate(r));
          await writeFile(counter, String(n + 1));
        }),
      ),
    );
    expect(await readFile(counter, 'utf8')).toBe('20');
    expect(existsSync(lockPath)).toBe(false);
  });

  it('releases the lock when the section throws', async () => {
    await expect(withFileLock(lockPath, async () => { throw new Error('boom'); })).rejects.toThrow('boom');
    expect(existsSync(lockPath)).toBe(false);
  });

  it('breaks a lock whose process is dead, without waiting for it to age', async () => {
    await writeFile(lockPath, lockBody({ pid: await deadPid() }));
    const release = await acquireFileLock(lockPath, { timeoutMs: 2_000, staleMs: 60_000 });
    expect(JSON.parse(await readFile(lockPath, 'utf8')).pid).toBe(process.pid);
    await release();
  });

  it('breaks a lock older than staleMs even when its process lives', async () => {
    await writeFile(lockPath, lockBody({ at: Date.now() - 60_000 }));
    const release = await acquireFileLock(lockPath, { timeoutMs: 2_000 });
    expect(JSON.parse(await readFile(lockPath, 'utf8')).token).not.toBe('foreign');
    await release();
  });

  it('keeps a fresh lock of a live process', async () => {
    await writeFile(lockPath, lockBody());
    await expectLockTimeout(acquireFileLock(lockPath, { timeoutMs: 150 }));
    expect(JSON.parse(await readFile(lockPath, 'utf8')).token).toBe('foreign');
  });

  it('does not judge a pid from another host', async () => {
    await writeFile(lockPath, lockBody({ pid: await deadPid(), host: `not-${hostname()}` }));
    await expectLockTimeout(acquireFileLock(lockPath, { timeoutMs: 150 }));
  });

  it('judges a half-written lock by its age', async () => {
    await writeFile(lockPath, '');
    await expectLockTimeout(acquireFileLock(lockPath, { timeoutMs: 150 }));
    const old = new Date(Date.now() - 60_000);
    await utimes(lockPath, old, old);
    const release = await acquireFileLock(lockPath, { timeoutMs: 2_000 });
    await release();
  });

  it('release leaves a lock that is no longer ours, and is idempotent', async () => {
    const release = await acquireFileLock(lockPath);
    await writeFile(lockPath, lockBody());
    await release();
    await release();
    expect(JSON.parse(await readFile(lockPath, 'utf8')).token).toBe('foreign');
  });

  it('fails with a clear error when the directory does not exist', async () => {
    const missing = join(dir, 'nope', 'x.lock');
    const err = await acquireFileLock(missing).then(() => undefined, (e: unknown) => e);
    expect(hasCode(err, 'approval_store')).toBe(true);
    expect((err as Error).message).toContain(missing);
  });
});
