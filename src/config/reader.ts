import path from 'node:path';
import { assemble, type AssembledConfig, type ExtraServers } from './assemble.js';
import type { FormatName } from './formats.js';
import { loadSource, parseSourceText, type InputResolver, type LoadedSource } from './load.js';
import type { Preset } from './presets.js';
import type { ConfigSource } from './sources.js';
import { getOwn, setOwn } from '../util/own.js';

/** The `path` of a `--config` source given as inline JSON text rather than a file. */
export const INLINE_SOURCE_PATH = 'inline';

/** Whether `s` is a `--config` given as inline JSON text: it has no file. */
function isInlineSource(s: ConfigSource): boolean {
  return s.path === INLINE_SOURCE_PATH && s.scope === 'cli';
}

/** Whether a `--config` value is inline JSON rather than a file path. */
export function isInlineConfig(value: string): boolean {
  return value.trimStart().startsWith('{');
}

/** What decides the sources a workspace reads; see {@link configSources}. */
export interface SourceSelection {
  /** The workspace root; relative paths are resolved against it. */
  root: string;
  home: string;
  env: NodeJS.ProcessEnv;
  /** Whose files to read; needed unless `sources` gives the list outright. */
  preset?: Preset;
  /** An explicit list that replaces the preset's (cli sources are still appended). */
  sources?: readonly ConfigSource[];
  /** Stands in for the preset's user-scope file(s), read in the preset's format. */
  userConfigPath?: string;
  /** Extra files in `cli` scope, in order (later ones win). */
  configFiles?: readonly string[];
  /** The format of the `configFiles`; judged per file when absent. */
  configFormat?: FormatName;
  /** Take `configFiles` values that look like JSON objects as inline text (the CLI's `--config '{…}'`). */
  inline?: boolean;
}

/**
 * The sources a workspace reads, in precedence order: the preset's files (or
 * `sources`), its user-scope files replaced by `userConfigPath` when given,
 * then each of `configFiles` in cli scope. Every path is absolute; an inline
 * config keeps the path {@link INLINE_SOURCE_PATH}.
 */
export function configSources(o: SourceSelection): ConfigSource[] {
  let list: ConfigSource[];
  if (o.sources) {
    list = [...o.sources];
  } else if (!o.preset) {
    list = [];
  } else {
    list = o.preset.sources({ root: o.root, home: o.home, env: o.env });
    if (o.userConfigPath !== undefined) {
      const userConfigPath = o.userConfigPath;
      const user: ConfigSource = { scope: 'user', path: userConfigPath, root: o.root, ...(o.preset.format ? { format: o.preset.format } : {}) };
      // A local-scope source kept inside the user file (Claude Code's `projects[<root>]`) moves with it.
      const userPaths = new Set(list.filter((s) => s.scope === 'user').map((s) => s.path));
      const rest = list.filter((s) => s.scope !== 'user').map((s) => (s.scope === 'local' && userPaths.has(s.path) ? { ...s, path: userConfigPath } : s));
      list = [user, ...rest];
    }
  }
  for (const file of o.configFiles ?? []) {
    const inline = o.inline === true && isInlineConfig(file);
    list.push({ scope: 'cli', path: inline ? INLINE_SOURCE_PATH : file, root: o.root, ...(o.configFormat !== undefined ? { format: o.configFormat } : {}) });
  }
  return list.map((s) => (isInlineSource(s) ? s : { ...s, path: path.resolve(o.root, s.path) }));
}

/** Identifies a source: one file may hold several (Claude Code's user and local scopes). */
function sourceKey(s: ConfigSource): string {
  return JSON.stringify([s.path, s.scope, s.at ?? []]);
}

/** What one {@link ConfigReader.read} found. */
export interface ConfigRead {
  /** Each source as used: a file that does not parse, or an entry that turned invalid, keeps its last good content. */
  loaded: LoadedSource[];
  /** The merged desired map, per-source settings and issues. */
  assembled: AssembledConfig;
  /**
   * Every file this read depends on, for a watcher (docs/presets.md): each
   * source file, then the other files their servers were read from
   * (`envFile`, `{file:…}`, `.vscode/settings.json`), also when missing. A
   * file that does not parse keeps its last good servers, and so their paths.
   */
  watchPaths: string[];
}

/** The sources' own files first, then every other file they read, sorted, each once. */
function watchPathsOf(sources: readonly ConfigSource[], loaded: readonly LoadedSource[]): string[] {
  const own = [...new Set(sources.filter((s) => !isInlineSource(s)).map((s) => s.path))];
  const seen = new Set(own);
  const extra = [...new Set(loaded.flatMap((l) => l.extraWatchPaths ?? []))].filter((p) => !seen.has(p)).sort();
  return [...own, ...extra];
}

/** How a {@link ConfigReader} reads its sources. */
export interface ConfigReaderOptions {
  sources: readonly ConfigSource[];
  env: NodeJS.ProcessEnv;
  /** For `${userHome}` and `~/`; default `env.HOME`. */
  home?: string;
  resolveInput?: InputResolver;
  /** The texts of the inline sources ({@link INLINE_SOURCE_PATH}), in source order. */
  inline?: readonly string[];
}

/**
 * Reads a workspace's config sources and assembles them, the same way for
 * the controller and the CLI. It remembers each file's last good content
 * across reads (SPEC §3.2), so a long-lived reader (the controller's) keeps a
 * broken file's last good servers and settings in force; a first read is
 * exactly the files as they are.
 */
export class ConfigReader {
  private readonly lastGood = new Map<string, LoadedSource>();

  constructor(private readonly options: ConfigReaderOptions) {}

  /** The sources this reader reads. */
  get sources(): readonly ConfigSource[] {
    return this.options.sources;
  }

  /** Read every source now; `extra` adds the runtime- and sdk-scope servers. */
  async read(extra: ExtraServers = {}): Promise<ConfigRead> {
    const { env, home, resolveInput, inline = [] } = this.options;
    let nextInline = 0;
    const fresh = await Promise.all(
      this.options.sources.map((s) =>
        isInlineSource(s)
          ? Promise.resolve(parseSourceText(inline[nextInline++] ?? '', s, env, { ...(home !== undefined ? { home } : {}) }))
          : loadSource(s, env, { ...(home !== undefined ? { home } : {}), resolveInput }),
      ),
    );
    const loaded = fresh.map((f) => this.withLastGood(f));
    return { loaded, assembled: assemble(loaded, extra), watchPaths: watchPathsOf(this.options.sources, loaded) };
  }

  private withLastGood(fresh: LoadedSource): LoadedSource {
    const key = sourceKey(fresh.source);
    const prev = this.lastGood.get(key);
    if (fresh.fatal) {
      // A file that does not parse keeps its last good content in force (SPEC §3.2).
      return prev ? { ...prev, issues: fresh.issues } : fresh;
    }
    // An entry that became invalid keeps its last good config rather than disconnecting.
    const badNames = new Set(fresh.issues.map((i) => i.server).filter((n): n is string => n !== undefined));
    const servers = { ...fresh.servers };
    for (const name of badNames) {
      const keep = prev ? getOwn(prev.servers, name) : undefined;
      if (keep && !Object.hasOwn(servers, name)) setOwn(servers, name, keep);
    }
    // Likewise an invalid `mcp.allowed`/`mcp.excluded` keeps its last good list: reading a
    // typo as "absent" would un-exclude servers (fail open).
    const settings = { ...fresh.settings };
    for (const key of ['allowed', 'excluded'] as const) {
      const invalid = fresh.issues.some((i) => i.server === undefined && i.field === `mcp.${key}`);
      const keep = prev?.settings[key];
      if (invalid && settings[key] === undefined && keep !== undefined) settings[key] = keep;
    }
    const merged: LoadedSource = { ...fresh, servers, settings };
    this.lastGood.set(key, { ...merged, issues: [] });
    return merged;
  }
}
