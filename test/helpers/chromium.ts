/**
 * Where the browser tests find Chromium, and how they start it. They use the
 * system's browser (never a downloaded one): `$CHROMIUM_PATH`, then the usual
 * install locations, then `chromium` on PATH.
 */
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';

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

/** Headless, and quiet: no sandbox (containers), no GPU, and nothing sent off the machine (updates, sync, QUIC probes). */
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic', '--no-first-run', '--disable-component-update', '--disable-sync'];

/** Launch this machine's Chromium headless; fails saying how to install one when there is none. */
export function launchChromium(): Promise<Browser> {
  const executablePath = findChromium();
  if (!executablePath) throw new Error('Chromium is required here (CI): install it with `apt-get install chromium` or set CHROMIUM_PATH');
  return chromium.launch({ executablePath, args: CHROMIUM_ARGS });
}
