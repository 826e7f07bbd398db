import { SCOPES, type DesiredServer, type Scope, type ServerConfig } from '../../machines/types.js';
import { approvalHash } from '../approvals/hash.js';
import { fingerprint } from '../gating/fingerprint.js';
import type { LoadedSource, SourceSettings } from './load.js';
import type { ConfigIssue } from './sources.js';

/** The merged result of all sources: the desired map, the gating settings and every issue. */
export interface AssembledConfig {
  desired: Record<string, DesiredServer>;
  settings: SourceSettings;
  issues: ConfigIssue[];
}

/** Entries added from code, already validated by the caller. */
export interface ExtraServers {
  runtime?: Record<string, ServerConfig>;
  sdk?: Record<string, ServerConfig>;
}

function entry(name: string, scope: Scope, source: string, config: ServerConfig): DesiredServer {
  return { name, scope, source, config, fingerprint: fingerprint(config), hash: approvalHash(config) };
}

/**
 * Merge loaded sources into the desired map (SPEC §2.1). Sources are ordered
 * by scope (`SCOPES`, lowest first; within one scope, later sources win); a
 * higher one replaces a lower one's entry of the same name whole, never field
 * by field. `runtime` then `sdk` entries come last. For each settings key the
 * highest-precedence source that sets it wins, so `allowed: []` (deny all)
 * survives. A fatal source contributes only its issues. Pure.
 */
export function assemble(sources: readonly LoadedSource[], extra: ExtraServers = {}): AssembledConfig {
  const rank = (s: LoadedSource) => SCOPES.indexOf(s.source.scope);
  // Array.prototype.sort is stable, so same-scope sources keep their order.
  const ordered = [...sources].sort((a, b) => rank(a) - rank(b));
  const desired: Record<string, DesiredServer> = {};
  const settings: SourceSettings = {};
  const issues: ConfigIssue[] = [];
  for (const loaded of ordered) {
    issues.push(...loaded.issues);
    if (loaded.fatal) continue;
    for (const [name, config] of Object.entries(loaded.servers)) {
      desired[name] = entry(name, loaded.source.scope, loaded.source.path, config);
    }
    if (loaded.settings.allowed !== undefined) settings.allowed = [...loaded.settings.allowed];
    if (loaded.settings.excluded !== undefined) settings.excluded = [...loaded.settings.excluded];
  }
  for (const scope of ['runtime', 'sdk'] as const) {
    for (const [name, config] of Object.entries(extra[scope] ?? {})) desired[name] = entry(name, scope, scope, config);
  }
  return { desired, settings, issues };
}
