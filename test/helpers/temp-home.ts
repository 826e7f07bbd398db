/**
 * A throwaway HOME and workspace for tests that read or write hosts' config
 * files: the env a CLI child gets points every per-user path into `home`.
 */
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A temp HOME, a temp workspace (its real path: macOS's /tmp is a link), and an env naming that HOME. */
export interface TempHome {
  home: string;
  ws: string;
  env: NodeJS.ProcessEnv;
}

/** Make a {@link TempHome}; `prefix` names its folders (`<prefix>-home-…`, `<prefix>-ws-…`). */
export async function makeTempHome(prefix: string): Promise<TempHome> {
  const home = await mkdtemp(join(tmpdir(), `${prefix}-home-`));
  const ws = await realpath(await mkdtemp(join(tmpdir(), `${prefix}-ws-`)));
  return { home, ws, env: { HOME: home, XDG_CONFIG_HOME: join(home, '.config'), PATH: process.env.PATH } };
}

/** Remove what {@link makeTempHome} made. */
export async function removeTempHome(t: Pick<TempHome, 'home' | 'ws'>): Promise<void> {
  await rm(t.home, { recursive: true, force: true });
  await rm(t.ws, { recursive: true, force: true });
}
