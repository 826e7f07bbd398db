import type { AssembledConfig } from '../config/assemble.js';
import type { LoadedSource } from '../config/load.js';
import { ConfigReader, configSources, isInlineConfig } from '../config/reader.js';
import type { ConfigSource } from '../config/sources.js';
import type { CliIo, GlobalOptions } from './command.js';
import { cliInputResolver } from './inputs.js';

/**
 * The sources a CLI run reads: the preset's files (its user-scope files
 * replaced by `--user-config` when given), then each `--config` file in cli
 * scope, in order (later ones win). Inline `--config` JSON keeps the path
 * `inline`.
 */
export function cliSources(g: GlobalOptions, env: NodeJS.ProcessEnv): ConfigSource[] {
  return configSources({
    root: g.root,
    home: g.home,
    env,
    preset: g.preset,
    ...(g.userConfig !== undefined ? { userConfigPath: g.userConfig } : {}),
    configFiles: g.configFiles,
    // `--config` files are read as `--config-format` says, else as the preset's host reads its own files.
    ...((format) => (format !== undefined ? { configFormat: format } : {}))(g.format ?? g.preset.format),
    inline: true,
  });
}

/** Every source loaded and the merged result. */
export interface LoadedWorkspace {
  sources: ConfigSource[];
  loaded: LoadedSource[];
  assembled: AssembledConfig;
}

/** Load every CLI source (inline `--config` JSON parsed in place) and assemble them, as the controller does. */
export async function loadWorkspace(g: GlobalOptions, io: CliIo): Promise<LoadedWorkspace> {
  const sources = cliSources(g, io.env);
  // `${input:…}` answers: remembered ones, else asked once on a terminal (inputs.ts).
  const resolveInput = cliInputResolver(g, io, { prompt: true });
  const reader = new ConfigReader({ sources, env: io.env, home: g.home, inline: g.configFiles.filter(isInlineConfig), resolveInput });
  const { loaded, assembled } = await reader.read();
  return { sources, loaded, assembled };
}
