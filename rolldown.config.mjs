/**
 * The published entry points: `npm run build` compiles with tsc into dist/,
 * then bundles our code and xstate into dist/lib/index.js (the library,
 * from dist/src/index.js) and dist/cli/main.js (the `mcp-reconciler` bin,
 * from dist/src/cli/main.js). Two separate bundles, so that importing the
 * library loads none of the CLI's chunks; the CLI never imports the
 * library's. A host that imports the package loads a handful of files instead
 * of ~80 modules: ~35 ms less import time and 3–10 MB less RSS (docs/performance.md,
 * measured by `npm run bench`); the CLI and its gateway start the same way.
 * Runtime dependencies other than xstate stay external, so they dedupe with
 * the host's copies; the lazily loaded parts (HTTP transports, OAuth,
 * parsers, the gateway, the dashboard) stay separate chunks.
 */
import { readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';

const pkg = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8'));
const inlined = new Set(['xstate']);
const external = Object.keys(pkg.dependencies).filter((d) => !inlined.has(d));

/** One self-contained bundle of `input` into `dir`. */
function bundle(input, dir) {
  return {
    input,
    platform: 'node',
    external: (id) =>
      id.startsWith('node:') || builtinModules.includes(id) || external.some((d) => id === d || id.startsWith(`${d}/`)),
    resolve: { conditionNames: ['import', 'module', 'node', 'default'] },
    // ASCII output: one non-Latin-1 character (an arrow in a message) makes V8 keep a file's whole
    // source as a two-byte string, twice the heap (~350 KB for the library).
    output: { dir, cleanDir: true, format: 'esm', comments: false, charset: 'ascii', chunkFileNames: '[name]-[hash].js' },
    logLevel: 'warn',
  };
}

export default [bundle({ index: 'dist/src/index.js' }, 'dist/lib'), bundle({ main: 'dist/src/cli/main.js' }, 'dist/cli')];
