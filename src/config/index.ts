/** Config layer: sources, parse, validate, expand, merge (SPEC §2.1, §2.2, §8.3). */
export { DEFAULT_SERVERS_KEYS, formatIssue, type ConfigIssue, type ConfigSource, type ServersKey } from './sources.js';
export { expandServerConfig, expandString, type ExpandContext, type UnsetRule, type UnsetVariable, type VariableSyntax } from './expand.js';
export { formatForPath, formats, FORMAT_NAMES, isFormatName, type ConfigFormat, type FormatName } from './formats.js';
export { parseServerConfig, validateServerEntry, type EntryProblem, type EntryResult } from './schema.js';
export {
  inputEnvName,
  loadSource,
  parseSourceText,
  type InputResolver,
  type InputSpec,
  type LoadedSource,
  type LoadOptions,
  type PendingInput,
  type ScopedSettings,
  type SourceSettings,
} from './load.js';
export { assemble, type AssembledConfig, type ExtraServers } from './assemble.js';
export { appDataHome, configHome, presets, resolvePreset, type Preset, type PresetContext } from './presets.js';
