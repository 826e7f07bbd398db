/**
 * The one rule for files read back (approvals, listing cache, OAuth tokens,
 * inputs, process records, request channel): a regular file another user
 * owns, or that group or others can write, is not trusted; the verdict says
 * how it stands and which command fixes it.
 */
import { chmodSync, chownSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readTrusted, readTrustedSync } from '../../src/util/file-trust.js';

const dir = mkdtempSync(join(tmpdir(), 'mcp-file-trust-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const isRoot = process.getuid?.() === 0;

function file(name: string, mode: number): string {
  const path = join(dir, name);
  writeFileSync(path, 'content', { mode: 0o600 });
  chmodSync(path, mode);
  return path;
}

describe.runIf(process.platform !== 'win32')('file trust', () => {
  it.each([0o600, 0o644, 0o640, 0o400])('mode %o is trusted and read', async (mode) => {
    const path = file(`ok-${mode.toString(8)}`, mode);
    expect(await readTrusted(path)).toEqual({ text: 'content' });
    expect(readTrustedSync(path)).toEqual({ text: 'content' });
  });

  it.each([
    [0o666, 'writable by group and others (mode 0666)'],
    [0o620, 'writable by group (mode 0620)'],
    [0o602, 'writable by others (mode 0602)'],
  ])('mode %o is not trusted, and not read', async (mode, what) => {
    const path = file(`bad-${mode.toString(8)}`, mode);
    const expected = { untrusted: { reason: 'writable', what, fix: `chmod 600 ${path}`, uid: process.getuid!(), mode } };
    expect(await readTrusted(path)).toEqual(expected);
    expect(readTrustedSync(path)).toEqual(expected);
  });

  it('judges the file a symlink leads to, and quotes odd paths in the fix', async () => {
    const target = file("it's 0666", 0o666);
    const link = join(dir, 'link');
    symlinkSync(target, link);
    const read = await readTrusted(link);
    expect(read).toMatchObject({ untrusted: { fix: `chmod 600 ${link}` } });
    const odd = await readTrusted(target);
    expect(odd).toMatchObject({ untrusted: { fix: `chmod 600 '${target.replace("'", "'\\''")}'` } });
  });

  it.runIf(isRoot)('a file owned by another user is not trusted, whatever its mode', async () => {
    const path = file('theirs', 0o600);
    chownSync(path, 65534, 65534);
    expect(await readTrusted(path)).toMatchObject({
      untrusted: { reason: 'owner', what: 'owned by uid 65534, not by you (uid 0)', fix: `chown 0 ${path} && chmod 600 ${path}` },
    });
  });

  it('a missing file is missing', async () => {
    expect(await readTrusted(join(dir, 'nope'))).toEqual({ missing: true });
    expect(readTrustedSync(join(dir, 'nope'))).toEqual({ missing: true });
  });
});
