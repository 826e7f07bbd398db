/**
 * Module hooks for node20-hook.mjs (they run on the loader thread). Only the
 * conformance bundle's bare `fs` / `node:fs` imports are redirected; the shim's
 * own `node:fs` import, and everyone else's, resolve normally.
 */
const SHIM_URL = new URL('./fs-globsync-shim.mjs', import.meta.url).href;
const BUNDLE = /\/@modelcontextprotocol\/conformance(-next)?\/dist\//;

export async function resolve(specifier, context, nextResolve) {
  if ((specifier === 'fs' || specifier === 'node:fs') && context.parentURL && BUNDLE.test(context.parentURL)) {
    return { url: SHIM_URL, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}
