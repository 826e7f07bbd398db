/**
 * What the SDK v2 packages import as `@modelcontextprotocol/client/_shims` and
 * `@modelcontextprotocol/server/_shims`, in the package's bundles
 * (rolldown.config.mjs aliases both here). The SDK's own Node shims load Ajv
 * at import for their default validator; this one loads it when a schema is
 * first checked (docs/performance.md, "The SDK inside the bundle"). No source
 * file imports it: under the tests the SDK runs with its own shims.
 */
import process from 'node:process';

/** In Node a `fetch` TypeError is a network error, never CORS (as the SDK's Node shim has it). */
export const CORS_IS_POSSIBLE = false;

export { LazyJsonSchemaValidator as DefaultJsonSchemaValidator } from './ajv.js';
export { process };
