/** Hot reload plumbing (SPEC §3.2): the file watcher, the reload coalescer, the semantic diff. */
export { watchConfigFiles, type ConfigWatcher, type ConfigWatcherOptions } from './config-watcher.js';
export { ReloadCoalescer } from './coalescer.js';
export { sameContent, type ConfigContent } from './semantic.js';
