import { SCOPES, type DesiredServer, type Scope, type ServerConfig } from '../../machines/types.js';
import { approvalHash, configHash, fingerprint } from './identity.js';
import type { LoadedSource, ScopedSettings } from './load.js';
import type { ConfigIssue } from './sources.js';
import { setOwn } from '../util/own.js';

/** The merged result of all sources: the desired map, each source's gating settings and every issue. */
export interface AssembledConfig {
  desired: Record<string, DesiredServer>;
  /**
   * The gating settings of every source that sets any, lowest precedence
   * first. They are deliberately not merged here: how they combine depends
   * on whether the folder is trusted, which only the caller knows. Pass them
   * to `computeGating` (or `mergeGatingSettings`) together with the trust.
   */
  scopedSettings: ScopedSettings[];
  issues: ConfigIssue[];
}

/** Entries added from code, already validated by the caller. */
export interface ExtraServers {
  runtime?: Record<string, ServerConfig>;
  sdk?: Record<string, ServerConfig>;
}

function entry(name: string, scope: Scope, source: string, config: ServerConfig): DesiredServer {
  return { name, scope, source, config, fingerprint: fingerprint(config), hash: approvalHash(config), configHash: configHash(config) };
}

/**
 * Merge loaded sources into the desired map (SPEC §2.1). Sources are ordered
 * by scope (`SCOPES`, lowest first; within one scope, later sources win); a
 * higher one replaces a lower one's entry of the same name whole, never field
 * by field. `runtime` then `sdk` entries come last. Gating settings are
 * collected per source in the same order, unmerged (see
 * {@link AssembledConfig.scopedSettings}). A fatal source contributes only
 * its issues. Pure.
 */
export function assemble(sources: readonly LoadedSource[], extra: ExtraServers = {}): AssembledConfig {
  const rank = (s: LoadedSource) => SCOPES.indexOf(s.source.scope);
  // Array.prototype.sort is stable, so same-scope sources keep their order.
  const ordered = [...sources].sort((a, b) => rank(a) - rank(b));
  const desired: Record<string, DesiredServer> = {};
  const scopedSettings: ScopedSettings[] = [];
  const issues: ConfigIssue[] = [];
  for (const loaded of ordered) {
    issues.push(...loaded.issues);
    if (loaded.fatal) continue;
    for (const [name, config] of Object.entries(loaded.servers)) {
      // setOwn: a server may be called `__proto__` (plain assignment would drop it).
      setOwn(desired, name, entry(name, loaded.source.scope, loaded.source.path, config));
    }
    const { allowed, excluded, profiles, permissions, pinToolDefinitions, pinnedTools, logLevel, claudeCode } = loaded.settings;
    if (allowed !== undefined || excluded !== undefined || profiles !== undefined || permissions !== undefined || pinToolDefinitions !== undefined || pinnedTools !== undefined || logLevel !== undefined || claudeCode !== undefined) {
      scopedSettings.push({
        scope: loaded.source.scope,
        source: loaded.source.path,
        settings: {
          ...(allowed === undefined ? {} : { allowed: [...allowed] }),
          ...(excluded === undefined ? {} : { excluded: [...excluded] }),
          ...(profiles === undefined ? {} : { profiles }),
          ...(permissions === undefined ? {} : { permissions }),
          ...(pinToolDefinitions === undefined ? {} : { pinToolDefinitions }),
          ...(pinnedTools === undefined ? {} : { pinnedTools: [...pinnedTools] }),
          ...(logLevel === undefined ? {} : { logLevel }),
          ...(claudeCode === undefined ? {} : { claudeCode }),
        },
      });
    }
  }
  for (const scope of ['runtime', 'sdk'] as const) {
    for (const [name, config] of Object.entries(extra[scope] ?? {})) setOwn(desired, name, entry(name, scope, scope, config));
  }
  return { desired, scopedSettings, issues };
}
