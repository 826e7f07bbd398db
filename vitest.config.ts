import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';

// Controllers a test builds without its own HOME would otherwise write the
// listing cache, the process-group records and OAuth tokens into the real
// user's ~/.cache, ~/.local/state and ~/.config (the OAuth store: see
// test/oauth-store-per-file.ts). One temp root per run; test/global-setup.ts
// removes it at the end.
const userDirs = mkdtempSync(join(tmpdir(), 'mcpr-test-userdirs-'));
process.env.MCPR_TEST_USER_DIRS = userDirs;

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['dist/**', 'node_modules/**'],
    // Integration tests spawn real server processes; a busy 2-core CI box needs room.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: 2,
    env: {
      XDG_CACHE_HOME: join(userDirs, 'cache'),
      XDG_STATE_HOME: join(userDirs, 'state'),
    },
    globalSetup: ['test/global-setup.ts'],
    setupFiles: ['test/oauth-store-per-file.ts'],
  },
});
