/**
 * What the CLI needs to reach its daemon: this build's identity and paths,
 * how to start the daemon detached, and the session request a shim sends
 * (docs/daemon.md).
 */
import { realpathSync } from 'node:fs';
import { dirname } from 'node:path';
import { buildIdentity, daemonDir, daemonPaths, type BuildIdentity, type DaemonPaths } from '../daemon/paths.js';
import type { SessionRequest } from '../daemon/protocol.js';
import { spawnDetachedDaemon, type SpawnedDaemon } from '../daemon/client.js';
import { findOwnPackage } from '../util/own-package.js';
import { resolvePreset } from '../config/presets.js';
import type { CliContext, GlobalOptions } from './command.js';
import { BIN } from './args.js';

/** The bin that is running (`dist/cli/main.js`): what a client starts the daemon with. */
export function entryScript(): string {
  const script = process.argv[1] ?? '';
  try {
    return realpathSync(script);
  } catch {
    return script;
  }
}

let build: BuildIdentity | undefined;

/** This build's identity (version and a stamp of the bin file). */
export function cliBuild(): BuildIdentity {
  const script = entryScript();
  build ??= buildIdentity(script, findOwnPackage(dirname(script))?.version ?? 'unknown');
  return build;
}

/** The paths of this build's daemon for the environment `env`. */
export function cliDaemonPaths(env: NodeJS.ProcessEnv): DaemonPaths {
  return daemonPaths(daemonDir(env), cliBuild().id);
}

/**
 * Start `mcp-reconciler daemon` detached (its own session: a terminal's
 * Ctrl-C or the client's exit does not reach it), with the environment
 * `env` (so its servers see what a plain `serve` started by this client
 * would have passed them) and its output appended to the daemon log.
 */
export function spawnDaemon(paths: DaemonPaths, env: NodeJS.ProcessEnv): SpawnedDaemon {
  return spawnDetachedDaemon(paths, entryScript(), env);
}

/** What a shim sends for its session: its options as parsed, without `--shared`. */
export function sessionRequest(ctx: CliContext): SessionRequest {
  const values: Record<string, unknown> = { ...ctx.values };
  delete values.shared;
  const { preset, ...rest } = ctx.global;
  return { values, cwd: ctx.io.cwd, env: { ...ctx.io.env }, global: { ...rest, preset: preset.name } };
}

/** The global options a session request carries, with its preset looked up again. */
export function globalOf(request: SessionRequest): GlobalOptions {
  const { preset, ...rest } = request.global;
  return { ...(rest as unknown as Omit<GlobalOptions, 'preset'>), preset: resolvePreset(preset) };
}
