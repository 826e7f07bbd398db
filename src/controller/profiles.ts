/**
 * Profiles (docs/manage.md): named sets of servers and tools in the
 * settings files, `profiles: { research: { servers: […], tools: […] } }`.
 * The profile in use only narrows: a server it leaves out is switched off
 * (state `disabled`, `why` naming the profile and its file), and a server it
 * keeps registers only the tools its `tools` patterns keep.
 */
import type { ServerConfig } from '../../machines/types.js';
import type { ProfileDefinition, ScopedSettings } from '../gating/compute.js';
import { sanitiseNamePart } from '../registry/naming.js';
import { globMatch, matchesAny } from '../util/glob.js';
import { getOwn } from '../util/own.js';

/** A profile as found in the settings: its definition and the file it came from. */
export interface FoundProfile {
  name: string;
  definition: ProfileDefinition;
  file: string;
}

/** Every profile name the settings define, sorted. */
export function profileNames(settings: readonly ScopedSettings[]): string[] {
  return [...new Set(settings.flatMap((s) => Object.keys(s.settings.profiles ?? {})))].sort();
}

/** Profile `name`: of the files defining it, the one read last (the highest scope) wins whole. */
export function findProfile(settings: readonly ScopedSettings[], name: string): FoundProfile | undefined {
  let found: FoundProfile | undefined;
  for (const s of settings) {
    const definition = getOwn(s.settings.profiles ?? {}, name);
    if (definition) found = { name, definition, file: s.source };
  }
  return found;
}

/** What a profile does to one server: off, or which raw tool names (patterns) it keeps. */
export interface Narrowed {
  /** The profile leaves the server out. */
  off: boolean;
  /** The server's `includeTools` under the profile; `undefined` when the profile keeps every tool. */
  includeTools?: string[];
}

/**
 * The raw-name patterns of `tools` (registered names, `mcp__<server>__<tool>`,
 * `*` anywhere) that apply to `server`: `mcp__*__<tool>` and a bare
 * `<tool>` apply to every server, `mcp__<server>__<tool>` to that one.
 */
export function rawPatterns(server: string, tools: readonly string[]): string[] {
  const prefix = `mcp__${sanitiseNamePart(server)}__`;
  const out: string[] = [];
  for (const t of tools) {
    if (t.startsWith('mcp__*__')) out.push(t.slice('mcp__*__'.length));
    else if (t.startsWith(prefix)) out.push(t.slice(prefix.length));
    else if (!t.startsWith('mcp__')) out.push(t);
  }
  return out;
}

/** How `profile` narrows server `name` of config `config`. */
export function narrow(profile: ProfileDefinition, name: string, config: ServerConfig): Narrowed {
  if (profile.servers !== undefined && !matchesAny(profile.servers, name)) return { off: true };
  if (profile.tools === undefined) return { off: false };
  const patterns = rawPatterns(name, profile.tools);
  // Both must keep a tool: the entry's own exact list, narrowed by the profile's patterns.
  const includeTools = config.includeTools ? config.includeTools.filter((t) => patterns.some((p) => globMatch(p, t))) : patterns;
  return { off: false, includeTools };
}
