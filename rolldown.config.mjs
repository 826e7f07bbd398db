/**
 * The published entry points: `npm run build` compiles with tsc into dist/,
 * then bundles our code and xstate into dist/lib/index.js (the library,
 * from dist/src/index.js) and dist/cli/main.js (the `mcp-reconciler` bin,
 * from dist/src/cli/main.js). Two separate bundles, so that importing the
 * library loads none of the CLI's chunks; the CLI never imports the
 * library's. A host that imports the package loads a handful of files instead
 * of ~80 modules: ~35 ms less import time and 3–10 MB less RSS (docs/performance.md,
 * measured by `npm run bench`); the CLI and its gateway start the same way.
 * xstate, the SDK v2 packages and (in the library) zod are bundled too: as
 * published, the SDK's files and zod's are two-byte strings in V8 (a few
 * non-Latin-1 characters in comments), zod loads all its locales and the
 * SDK's Node shims load Ajv; bundled, ASCII and tree-shaken, importing the
 * package takes ~4.8 MB less heap and ~14 MB less RSS (docs/performance.md,
 * "The SDK inside the bundle"). A host that uses the SDK itself as well carries its
 * own copy beside ours. The SDK's shims are ours (src/util/sdk-shims.ts, Ajv
 * loaded at the first schema to check). Other runtime dependencies stay
 * external (SDK v1 among them, loaded by the gateway's 2025 lane only); the
 * lazily loaded parts (OAuth, parsers, the gateway, the dashboard) stay
 * separate chunks.
 */
import { readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';

const pkg = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8'));
const sdk = ['@modelcontextprotocol/client', '@modelcontextprotocol/server', '@modelcontextprotocol/node'];
// The CLI leaves zod to node_modules: `serve` and the daemon load SDK v1 (the 2025 lane), which
// imports zod from there, and two copies of zod cost the gateway ~6 % more CPU per call.
const inlinedInLibrary = new Set(['xstate', 'zod', ...sdk]);
const inlinedInCli = new Set(['xstate', ...sdk]);
const shims = new URL('./dist/src/util/sdk-shims.js', import.meta.url).pathname;

/**
 * The bundle's own zod without its eval-compiled object parsers. zod compiles
 * a parser per object schema at its first parse, which pays off only for a
 * schema parsed many times; a start parses each of the SDK's schemas a few
 * times per server (docs/performance.md, "zod's compiled parsers"). zod's own
 * switch, `z.config({ jitless: true })`, is process-wide (it lives on
 * `globalThis`) and would reach a host's zod too: this reaches only the copy
 * inside the library bundle. A zod whose code no longer matches fails the build.
 */
const ZOD_JIT = 'const jit = !core.globalConfig.jitless;';
function zodWithoutJit() {
  let patched = false;
  return {
    name: 'zod-without-jit',
    transform(code, id) {
      if (!/[\\/]node_modules[\\/]zod[\\/]v4[\\/]core[\\/]schemas\.js$/.test(id)) return null;
      if (!code.includes(ZOD_JIT)) throw new Error(`zod-without-jit: ${id} no longer contains "${ZOD_JIT}"; update the plugin in rolldown.config.mjs`);
      patched = true;
      return { code: code.replace(ZOD_JIT, 'const jit = false;'), map: null };
    },
    buildEnd(error) {
      if (!error && !patched) throw new Error("zod-without-jit: zod's core schemas were not in the bundle");
    },
  };
}

/** One self-contained bundle of `input` into `dir`, with the dependencies in `inlined` inside it. */
function bundle(input, dir, inlined) {
  const external = Object.keys(pkg.dependencies).filter((d) => !inlined.has(d));
  return {
    input,
    platform: 'node',
    plugins: inlined.has('zod') ? [zodWithoutJit()] : [],
    external: (id) =>
      id.startsWith('node:') || builtinModules.includes(id) || external.some((d) => id === d || id.startsWith(`${d}/`)),
    resolve: {
      conditionNames: ['import', 'module', 'node', 'default'],
      alias: { '@modelcontextprotocol/client/_shims': shims, '@modelcontextprotocol/server/_shims': shims },
    },
    // ASCII output: one non-Latin-1 character (an arrow in a message) makes V8 keep a file's whole
    // source as a two-byte string, twice the heap (~350 KB for the library).
    output: { dir, cleanDir: true, format: 'esm', comments: false, charset: 'ascii', chunkFileNames: '[name]-[hash].js' },
    logLevel: 'warn',
  };
}

export default [bundle({ index: 'dist/src/index.js' }, 'dist/lib', inlinedInLibrary), bundle({ main: 'dist/src/cli/main.js' }, 'dist/cli', inlinedInCli)];
