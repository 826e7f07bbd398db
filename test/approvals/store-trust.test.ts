/**
 * The approvals file is a trust boundary (SPEC §4): one that
 * someone else could write (group/other-writable, or owned by another user)
 * is refused like a corrupt one, with a hint that says how to fix it; and a
 * symlinked approvals file stays a symlink when decisions are written
 * through it.
 */
import { chmod, chown, lstat, mkdir, readdir, readFile, readlink, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { approvalStates, promptableServers } from '../../src/approvals/promptable.js';
import { FileApprovalStore } from '../../src/approvals/store.js';
import type { ConfigIssue } from '../../src/config/sources.js';
import { hasCode } from '../../src/errors.js';
import { desiredOf, entry } from '../gating/entries.js';
import { basic, Harness, row, waitState } from '../reload/support.js';
import { modeOf, rec, storeDirs } from './support.js';

const paths = storeDirs('mcpr-store-trust-', 'config', 'approvals.json');
beforeEach(async () => {
  await mkdir(join(paths.dir, 'config'), { recursive: true, mode: 0o700 });
});

const isRoot = process.getuid?.() === 0;
const posix = process.platform !== 'win32';

/** Write a well-formed store holding an approval of `foo` for `root`, with `mode`. */
async function storeFileWith(path: string, mode: number): Promise<{ content: string; foo: ReturnType<typeof entry> }> {
  const foo = entry('foo', 'project');
  const content = `${JSON.stringify({ version: 1, roots: { [paths.root]: { foo: rec(foo.hash) } } }, null, 2)}\n`;
  await writeFile(path, content);
  await chmod(path, mode); // explicit: the umask must not decide the test
  return { content, foo };
}

/** The store refuses the file: no decisions, a clear error with `hint`, and `set` leaves the file alone. */
async function expectRefused(store: FileApprovalStore, path: string, content: string, message: RegExp, hint: RegExp): Promise<void> {
  const foo = entry('foo', 'project');
  const { decisions, error } = await store.load(paths.root);
  expect(decisions).toEqual({});
  expect(hasCode(error, 'approval_store')).toBe(true);
  expect(error!.message).toContain(store.path);
  expect(error!.message).toMatch(message);
  expect(error!.hint).toMatch(hint);
  // Fails closed exactly like a corrupt file: every gated server is pending (and promptable).
  expect(approvalStates(desiredOf(foo), decisions)).toEqual({ foo: 'pending' });
  expect(promptableServers(desiredOf(foo), decisions)).toEqual(['foo']);

  const err = await store.set(paths.root, 'bar', rec('h')).then(() => undefined, (e: unknown) => e);
  expect(hasCode(err, 'approval_store')).toBe(true);
  expect((err as Error).message).toMatch(message);
  expect((err as { hint?: string }).hint).toMatch(hint);
  expect(await readFile(path, 'utf8')).toBe(content);
}

describe.runIf(posix)('an approvals file someone else could write is not trusted', () => {
  it.each([
    ['0660', /writable by group \(mode 0660\)/],
    ['0620', /writable by group \(mode 0620\)/],
    ['0602', /writable by others \(mode 0602\)/],
    ['0666', /writable by group and others \(mode 0666\)/],
  ])('mode %s: refused with a `chmod 600` hint; every gated server pending; nothing crashes', async (mode, message) => {
    const { content } = await storeFileWith(paths.file, Number.parseInt(mode, 8));
    await expectRefused(new FileApprovalStore(paths.file), paths.file, content, message, new RegExp(`chmod 600 ${paths.file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
    // Once fixed as the hint says, its decisions count again.
    await chmod(paths.file, 0o600);
    expect((await new FileApprovalStore(paths.file).load(paths.root)).decisions).toEqual({ foo: rec(entry('foo', 'project').hash) });
  });

  it('a 0644 file (readable, not writable, by others) is still trusted', async () => {
    await storeFileWith(paths.file, 0o644);
    const { decisions, error } = await new FileApprovalStore(paths.file).load(paths.root);
    expect(error).toBeUndefined();
    expect(Object.keys(decisions)).toEqual(['foo']);
  });

  it.runIf(isRoot)('a file owned by another user is refused with a `chown`/`chmod 600` hint', async () => {
    const { content } = await storeFileWith(paths.file, 0o600);
    await chown(paths.file, 65534, 65534);
    await expectRefused(new FileApprovalStore(paths.file), paths.file, content, /owned by uid 65534, not by you \(uid 0\)/, /chown 0 .*&& chmod 600/);
  });

  it('the check applies to the file a symlink points at', async () => {
    const real = join(paths.dir, 'elsewhere', 'approvals.json');
    await mkdir(join(paths.dir, 'elsewhere'));
    const { content } = await storeFileWith(real, 0o666);
    await symlink(real, paths.file);
    await expectRefused(new FileApprovalStore(paths.file), real, content, /writable by group and others/, /chmod 600/);
  });

  it('a path that needs quoting is quoted in the hint, so it can be pasted into a shell', async () => {
    const odd = join(paths.dir, "it's here", 'approvals.json');
    await mkdir(join(paths.dir, "it's here"));
    await storeFileWith(odd, 0o666);
    const { error } = await new FileApprovalStore(odd).load(paths.root);
    expect(error!.hint).toContain(`chmod 600 '${odd.replace("'", "'\\''")}'`);
  });
});

describe.runIf(posix)('writing through a symlinked approvals file keeps the link', () => {
  it('replaces the link’s target (mode 0600), leaves the link as it was, and no temp or lock file behind', async () => {
    const realDir = join(paths.dir, 'dotfiles');
    await mkdir(realDir);
    const real = join(realDir, 'approvals.json');
    await new FileApprovalStore(real).set(paths.root, 'old', rec('h0'));
    await symlink('../dotfiles/approvals.json', paths.file); // relative, as dotfile managers make them

    const store = new FileApprovalStore(paths.file);
    await store.set(paths.root, 'new', rec('h1'));

    expect((await lstat(paths.file)).isSymbolicLink()).toBe(true);
    expect(await readlink(paths.file)).toBe('../dotfiles/approvals.json');
    expect(JSON.parse(await readFile(real, 'utf8')).roots[paths.root]).toEqual({ old: rec('h0'), new: rec('h1') });
    expect(await modeOf(real)).toBe(0o600);
    expect((await store.load(paths.root)).decisions).toEqual({ old: rec('h0'), new: rec('h1') });
    expect(await readdir(realDir)).toEqual(['approvals.json']);
    expect(await readdir(join(paths.dir, 'config'))).toEqual(['approvals.json']);
  });

  it('follows a chain of links, and a dangling link gets its target created', async () => {
    const realDir = join(paths.dir, 'dotfiles');
    await mkdir(realDir);
    const real = join(realDir, 'approvals.json');
    const middle = join(paths.dir, 'middle.json');
    await symlink(real, middle); // dangling for now
    await symlink(middle, paths.file);

    await new FileApprovalStore(paths.file).set(paths.root, 'a', rec('h'));

    expect(await readlink(paths.file)).toBe(middle);
    expect(await readlink(middle)).toBe(real);
    expect((await lstat(real)).isFile()).toBe(true);
    expect(await modeOf(real)).toBe(0o600);
    expect((await new FileApprovalStore(paths.file).load(paths.root)).decisions).toEqual({ a: rec('h') });
  });
});

describe.runIf(posix)('a controller with an untrusted approvals file', () => {
  const h = new Harness();
  afterAll(() => h.cleanup());

  it('keeps an approved project server pending, reports what to do, and honours the decision once fixed', async () => {
    const ws = h.workspace();
    ws.project({ p: basic('1') });
    // Approve before start: writes the store and starts nothing.
    await h.create(ws, { isTrustedFolder: () => true }).approve('p');
    expect(await modeOf(ws.approvalsFile)).toBe(0o600);
    await chmod(ws.approvalsFile, 0o666);

    const c = h.create(ws, { isTrustedFolder: () => true });
    const errors: ConfigIssue[][] = [];
    c.on('config-error', ({ issues }) => errors.push(issues));
    await c.start();

    expect(row(c, 'p')).toMatchObject({ state: 'pending_approval' });
    expect(row(c, 'p')?.pid).toBeUndefined();
    expect(c.pids()).toEqual([]);
    const text = errors.flat().map((i) => i.message).join('\n');
    expect(text).toContain(ws.approvalsFile);
    expect(text).toMatch(/writable by group and others/);
    expect(text).toContain(`chmod 600 ${ws.approvalsFile}`);

    await chmod(ws.approvalsFile, 0o600);
    await c.reload();
    await waitState(c, 'p', 'connected');
  });
});
