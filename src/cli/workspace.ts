import { assemble, type AssembledConfig } from '../config/assemble.js';
import { loadSource, parseSourceText, type LoadedSource } from '../config/load.js';
import type { ConfigSource } from '../config/sources.js';
import type { CliIo, GlobalOptions } from './command.js';

/** Whether a `--config` value is inline JSON rather than a file path. */
export function isInlineConfig(value: string): boolean {
  return value.trimStart().startsWith('{');
}

/**
 * The sources a CLI run reads: the preset's files (its user-scope files
 * replaced by `--user-config` when given), then each `--config` file in cli
 * scope, in order (later ones win).
 */
export function cliSources(g: GlobalOptions, env: NodeJS.ProcessEnv): ConfigSource[] {
  let list = g.preset.sources({ root: g.root, home: g.home, env });
  if (g.userConfig !== undefined) {
    // It stands in for the preset's user file, so it is read in the preset's format.
    list = [{ scope: 'user', path: g.userConfig, root: g.root, ...(g.preset.format ? { format: g.preset.format } : {}) }, ...list.filter((s) => s.scope !== 'user')];
  }
  // `--config` files are read as `--config-format` says, else as the preset's host reads its own files.
  const format = g.format ?? g.preset.format;
  for (const file of g.configFiles) {
    list.push({ scope: 'cli', path: isInlineConfig(file) ? 'inline' : file, root: g.root, ...(format !== undefined ? { format } : {}) });
  }
  return list;
}

/** Every source loaded and the merged result. */
export interface LoadedWorkspace {
  sources: ConfigSource[];
  loaded: LoadedSource[];
  assembled: AssembledConfig;
}

/** Load every CLI source (inline `--config` JSON parsed in place) and assemble them. */
export async function loadWorkspace(g: GlobalOptions, io: CliIo): Promise<LoadedWorkspace> {
  const sources = cliSources(g, io.env);
  const inline = g.configFiles.filter(isInlineConfig);
  let nextInline = 0;
  const loaded = await Promise.all(
    sources.map((s) => (s.path === 'inline' ? Promise.resolve(parseSourceText(inline[nextInline++]!, s, io.env, { home: g.home })) : loadSource(s, io.env, { home: g.home }))),
  );
  return { sources, loaded, assembled: assemble(loaded) };
}
