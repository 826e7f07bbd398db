/**
 * Where the browser tests find Chromium. They use the system's browser (never
 * a downloaded one): `$CHROMIUM_PATH`, then the usual install locations, then
 * `chromium` on PATH.
 */
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

const KNOWN = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome', '/snap/bin/chromium'];

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The Chromium executable to drive, or `undefined` when this machine has none. */
export function findChromium(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.CHROMIUM_PATH) return executable(env.CHROMIUM_PATH) ? env.CHROMIUM_PATH : undefined;
  for (const p of KNOWN) if (executable(p)) return p;
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    for (const name of ['chromium', 'chromium-browser']) {
      const p = join(dir, name);
      if (dir && executable(p)) return p;
    }
  }
  return undefined;
}

/**
 * Whether a browser test may skip on this machine: only outside CI. On a
 * developer's machine without Chromium the suite still passes, with a loud
 * line saying how to run the skipped test; CI (`CI=true`, whose .ci/run
 * installs Chromium) always runs it, so a missing browser fails there.
 */
export function browserTestSkipReason(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (findChromium(env)) return undefined;
  if (env.CI && env.CI !== 'false' && env.CI !== '0') return undefined;
  return 'no Chromium on this machine: install it (Debian/Ubuntu: `sudo apt-get install chromium`) or point CHROMIUM_PATH at one, then run `npx vitest run test/dashboard`; CI always runs this test';
}
