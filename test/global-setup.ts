/**
 * Removes the per-run temp root that vitest.config.ts points XDG_CACHE_HOME and
 * XDG_STATE_HOME at (and test/oauth-store-per-file.ts the OAuth store), so a
 * test run leaves nothing in the user's directories nor in /tmp.
 */
import { rmSync } from 'node:fs';

export default function setup(): () => void {
  return () => {
    const dir = process.env.MCPR_TEST_USER_DIRS;
    if (dir && dir.includes('mcpr-test-userdirs-')) rmSync(dir, { recursive: true, force: true });
  };
}
