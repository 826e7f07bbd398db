/**
 * The published entry point: `npm run build` compiles with tsc into dist/,
 * then bundles the library (dist/src/index.js, our code and xstate) into
 * dist/lib/. A host that imports the package loads a handful of files instead
 * of ~80 modules: ~35 ms less import time and 3–10 MB less RSS (issue 16,
 * measured by `npm run bench`). Runtime dependencies other than xstate stay
 * external, so they dedupe with the host's copies; the lazily loaded parts
 * (HTTP transports, OAuth, parsers, the gateway) stay separate chunks.
 */
import { readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';

const pkg = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8'));
const inlined = new Set(['xstate']);
const external = Object.keys(pkg.dependencies).filter((d) => !inlined.has(d));

export default {
  input: { index: 'dist/src/index.js' },
  platform: 'node',
  external: (id) =>
    id.startsWith('node:') || builtinModules.includes(id) || external.some((d) => id === d || id.startsWith(`${d}/`)),
  resolve: { conditionNames: ['import', 'module', 'node', 'default'] },
  output: { dir: 'dist/lib', format: 'esm', comments: false, chunkFileNames: '[name]-[hash].js' },
  logLevel: 'warn',
};
