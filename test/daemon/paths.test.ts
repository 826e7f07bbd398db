/**
 * Who may reach the daemon: its directory must be a real directory of this
 * user with mode 0700 (Node cannot check a unix socket peer's uid), checked
 * before the daemon listens and before a client connects; the socket of each
 * build has its own name.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildIdentity, checkPrivateDir, daemonDir, daemonPaths, ensurePrivateDir } from '../../src/daemon/paths.js';
import { connectDaemon } from '../../src/daemon/client.js';

describe('the daemon directory', () => {
  const base = mkdtempSync(join(tmpdir(), 'mcpr-daemon-paths-'));
  afterAll(() => rmSync(base, { recursive: true, force: true }));

  it('is created 0700 and accepted; group/other bits, a symlink or a file are refused with the fix', async () => {
    const dir = join(base, 'run', 'mcp-reconciler');
    ensurePrivateDir(dir);
    expect(() => checkPrivateDir(dir)).not.toThrow();

    const open = join(base, 'open');
    mkdirSync(open);
    chmodSync(open, 0o755);
    expect(() => checkPrivateDir(open)).toThrow(/has mode 755, not 700, so other users could reach the daemon's socket/);
    // A client refuses to connect through it, before touching any socket.
    await expect(connectDaemon(daemonPaths(open, 'x'))).rejects.toThrow(/mode 755/);

    const link = join(base, 'link');
    symlinkSync(dir, link);
    expect(() => checkPrivateDir(link)).toThrow(/is a symbolic link/);
    const file = join(base, 'file');
    writeFileSync(file, '');
    expect(() => checkPrivateDir(file)).toThrow(/is not a directory/);
  });

  it('is $XDG_RUNTIME_DIR/mcp-reconciler, else the state directory; each build has its own socket', () => {
    expect(daemonDir({ XDG_RUNTIME_DIR: '/run/user/1000', HOME: '/home/u' })).toBe('/run/user/1000/mcp-reconciler');
    expect(daemonDir({ HOME: '/home/u' })).toBe('/home/u/.local/state/mcp-reconciler/daemon');
    expect(daemonDir({ XDG_RUNTIME_DIR: 'relative', HOME: '/home/u' })).toBe('/home/u/.local/state/mcp-reconciler/daemon');
    const a = join(base, 'a.js');
    writeFileSync(a, 'one');
    const first = buildIdentity(a, '1.0.0');
    writeFileSync(a, 'two, longer');
    const second = buildIdentity(a, '1.0.0');
    expect(first.id).not.toBe(second.id);
    expect(daemonPaths('/d', first.id).socket).not.toBe(daemonPaths('/d', second.id).socket);
    expect(daemonPaths('/d', first.id).socket).toMatch(/^\/d\/daemon-1\.0\.0-[0-9a-f]{10}\.sock$/);
  });
});
