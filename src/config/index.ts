/** Config layer: sources, parse, validate, expand, merge (SPEC §2.1, §2.2, §8.3). */
export { DEFAULT_SERVERS_KEYS, formatIssue, type ConfigIssue, type ConfigSource, type ServersKey } from './sources.js';
export { expandServerConfig, expandString, type ExpandContext, type UnsetVariable } from './expand.js';
export { parseServerConfig, validateServerEntry, type EntryProblem, type EntryResult } from './schema.js';
export { loadSource, parseSourceText, type LoadedSource, type SourceSettings } from './load.js';
export { assemble, type AssembledConfig, type ExtraServers } from './assemble.js';
export { configHome, presets, resolvePreset, type Preset, type PresetContext } from './presets.js';
