import { chmod, mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { approvalStates, promptableServers } from '../../src/approvals/promptable.js';
import { FileApprovalStore, MemoryApprovalStore, canonicalRoot, defaultApprovalsPath, type ApprovalStore } from '../../src/approvals/store.js';
import { hasCode } from '../../src/errors.js';
import { desiredOf, entry } from '../gating/entries.js';
import { modeOf, rec, storeDirs } from './support.js';

const paths = storeDirs('mcpr-store-', 'config', 'mcp-reconciler', 'approvals.json');

describe('FileApprovalStore', () => {
  it('a missing file means no decisions and no error', async () => {
    expect(await new FileApprovalStore(paths.file).load(paths.root)).toEqual({ decisions: {} });
  });

  it('round-trips decisions per root, in the documented file shape', async () => {
    const store = new FileApprovalStore(paths.file);
    const other = join(paths.dir, 'other');
    await mkdir(other);
    await store.set(paths.root, 'a', rec('h1'));
    await store.set(paths.root, 'b', rec('h2', 'rejected'));
    await store.set(other, 'a', rec('h3'));
    await store.set(paths.root, 'a', rec('h4', 'rejected')); // overwrite one

    expect(await store.load(paths.root)).toEqual({ decisions: { a: rec('h4', 'rejected'), b: rec('h2', 'rejected') } });
    expect(await store.load(other)).toEqual({ decisions: { a: rec('h3') } });
    // a fresh instance (another process) sees the same
    expect((await new FileApprovalStore(paths.file).load(paths.root)).decisions.b).toEqual(rec('h2', 'rejected'));
    expect(JSON.parse(await readFile(paths.file, 'utf8'))).toEqual({
      version: 1,
      roots: { [paths.root]: { a: rec('h4', 'rejected'), b: rec('h2', 'rejected') }, [other]: { a: rec('h3') } },
    });
    expect(store.path).toBe(paths.file);
  });

  it('writes the file with mode 0600 in a directory created with 0700, leaving no temp or lock files', async () => {
    await new FileApprovalStore(paths.file).set(paths.root, 'a', rec('h'));
    expect(await modeOf(paths.file)).toBe(0o600);
    expect(await modeOf(join(paths.dir, 'config', 'mcp-reconciler'))).toBe(0o700);
    expect(await readdir(join(paths.dir, 'config', 'mcp-reconciler'))).toEqual(['approvals.json']);
  });

  it('narrows a pre-existing wider mode to 0600 and keeps its decisions', async () => {
    await mkdir(join(paths.dir, 'config', 'mcp-reconciler'), { recursive: true });
    await writeFile(paths.file, JSON.stringify({ version: 1, roots: { [paths.root]: { old: rec('h0') } } }));
    await chmod(paths.file, 0o644);
    await new FileApprovalStore(paths.file).set(paths.root, 'new', rec('h1'));
    expect(await modeOf(paths.file)).toBe(0o600);
    expect((await new FileApprovalStore(paths.file).load(paths.root)).decisions).toEqual({ old: rec('h0'), new: rec('h1') });
  });

  it('canonicalises the root: a decision written through a symlink is read through the real path', async () => {
    const link = join(paths.dir, 'link-to-ws');
    await symlink(paths.root, link);
    const store = new FileApprovalStore(paths.file);
    await store.set(link, 'a', rec('h'));
    expect((await store.load(paths.root)).decisions).toEqual({ a: rec('h') });
    expect((await store.load(link)).decisions).toEqual({ a: rec('h') });
    expect(Object.keys(JSON.parse(await readFile(paths.file, 'utf8')).roots)).toEqual([paths.root]);
  });

  it('is not blocked by a lock a dead process left behind', async () => {
    await mkdir(join(paths.dir, 'config', 'mcp-reconciler'), { recursive: true });
    await writeFile(`${paths.file}.lock`, JSON.stringify({ pid: process.pid, host: hostname(), at: Date.now() - 60_000, token: 'old' }));
    await new FileApprovalStore(paths.file, { timeoutMs: 2_000 }).set(paths.root, 'a', rec('h'));
    expect((await new FileApprovalStore(paths.file).load(paths.root)).decisions).toEqual({ a: rec('h') });
  });

  it('treats a blank file as empty', async () => {
    await mkdir(join(paths.dir, 'config', 'mcp-reconciler'), { recursive: true });
    await writeFile(paths.file, '\n');
    const store = new FileApprovalStore(paths.file);
    expect(await store.load(paths.root)).toEqual({ decisions: {} });
    await store.set(paths.root, 'a', rec('h'));
    expect((await store.load(paths.root)).decisions).toEqual({ a: rec('h') });
  });

  describe('corrupt or unreadable file: fails closed, never throws', () => {
    const corrupt: Array<[string, string]> = [
      ['invalid JSON', '{ "version": 1, roots: '],
      ['an array', '[]'],
      ['a newer version', JSON.stringify({ version: 2, roots: {} })],
      ['no version', JSON.stringify({ roots: {} })],
      ['roots not an object', JSON.stringify({ version: 1, roots: [] })],
      ['a root that is not an object', JSON.stringify({ version: 1, roots: { '/x': 'yes' } })],
      ['a bad decision', JSON.stringify({ version: 1, roots: { '/x': { a: { hash: 'h', decision: 'maybe', at: 'now' } } } })],
      ['a missing hash', JSON.stringify({ version: 1, roots: { '/x': { a: { decision: 'approved', at: 'now' } } } })],
    ];
    it.each(corrupt)('%s', async (_what, content) => {
      await mkdir(join(paths.dir, 'config', 'mcp-reconciler'), { recursive: true });
      await writeFile(paths.file, content);
      const store = new FileApprovalStore(paths.file);
      const foo = entry('foo', 'project');
      const bar = entry('bar', 'workspace');

      const { decisions, error } = await store.load(paths.root);
      expect(decisions).toEqual({});
      expect(hasCode(error, 'approval_store')).toBe(true);
      expect(error!.message).toContain(paths.file);
      expect(error!.hint).toMatch(/fix or delete/i);
      expect(promptableServers(desiredOf(foo, bar), decisions)).toEqual(['bar', 'foo']);
      expect(approvalStates(desiredOf(foo, bar), decisions)).toEqual({ foo: 'pending', bar: 'pending' });

      // set refuses rather than overwrite the decisions it cannot read
      const err = await store.set(paths.root, 'foo', rec(foo.hash)).then(() => undefined, (e: unknown) => e);
      expect(hasCode(err, 'approval_store')).toBe(true);
      expect((err as Error).message).toContain(paths.file);
      expect((err as { hint?: string }).hint).toMatch(/fix or delete/i);
      expect(await readFile(paths.file, 'utf8')).toBe(content);
      expect(await readdir(join(paths.dir, 'config', 'mcp-reconciler'))).toEqual(['approvals.json']);
    });

    it('a path that cannot be read as a file', async () => {
      await mkdir(paths.file, { recursive: true }); // a directory where the file should be
      const store = new FileApprovalStore(paths.file);
      const { decisions, error } = await store.load(paths.root);
      expect(decisions).toEqual({});
      expect(hasCode(error, 'approval_store')).toBe(true);
      expect(error!.message).toContain(paths.file);
      await expect(store.set(paths.root, 'a', rec('h'))).rejects.toMatchObject({ code: 'approval_store' });
    });
  });

  it('rejects malformed records without touching the file', async () => {
    const store = new FileApprovalStore(paths.file);
    await expect(store.set(paths.root, '', rec('h'))).rejects.toMatchObject({ code: 'approval_store' });
    await expect(store.set(paths.root, 'a', { hash: 'h', decision: 'maybe' as 'approved', at: 'now' })).rejects.toMatchObject({ code: 'approval_store' });
    await expect(store.set(paths.root, 'a', { hash: '', decision: 'approved', at: 'now' })).rejects.toMatchObject({ code: 'approval_store' });
    expect((await store.load(paths.root)).decisions).toEqual({});
  });
});

describe('MemoryApprovalStore', () => {
  it('round-trips per canonical root and hands out copies', async () => {
    const store = new MemoryApprovalStore();
    const link = join(paths.dir, 'link');
    await symlink(paths.root, link);
    await store.set(link, 'a', rec('h1'));
    await store.set(paths.root, 'b', rec('h2', 'rejected'));
    const loaded = await store.load(paths.root);
    expect(loaded).toEqual({ decisions: { a: rec('h1'), b: rec('h2', 'rejected') } });
    loaded.decisions.a!.decision = 'rejected';
    delete loaded.decisions.b;
    expect((await store.load(link)).decisions).toEqual({ a: rec('h1'), b: rec('h2', 'rejected') });
    expect((await store.load(paths.dir)).decisions).toEqual({});
    expect((store as ApprovalStore).path).toBeUndefined();
  });
});

describe('canonicalRoot', () => {
  it('resolves symlinks and relative paths, and falls back to the absolute path for a missing root', async () => {
    const link = join(paths.dir, 'l');
    await symlink(paths.root, link);
    expect(await canonicalRoot(link)).toBe(paths.root);
    expect(await canonicalRoot(join(link, '..', 'ws'))).toBe(paths.root);
    expect(await canonicalRoot(join(paths.dir, 'missing', '..', 'gone'))).toBe(join(paths.dir, 'gone'));
  });
});

describe('defaultApprovalsPath', () => {
  const cases: Array<[string, NodeJS.ProcessEnv, string]> = [
    ['XDG_CONFIG_HOME', { XDG_CONFIG_HOME: '/xdg', HOME: '/home/u' }, '/xdg/mcp-reconciler/approvals.json'],
    ['HOME without XDG', { HOME: '/home/u' }, '/home/u/.config/mcp-reconciler/approvals.json'],
    ['relative XDG is ignored', { XDG_CONFIG_HOME: 'rel', HOME: '/home/u' }, '/home/u/.config/mcp-reconciler/approvals.json'],
    ['empty XDG is ignored', { XDG_CONFIG_HOME: '', HOME: '/home/u' }, '/home/u/.config/mcp-reconciler/approvals.json'],
  ];
  it.each(cases)('%s', (_name, env, expected) => {
    expect(defaultApprovalsPath(env)).toBe(expected);
  });
});
