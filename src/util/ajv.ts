/**
 * The SDK's Ajv-backed JSON Schema validator, loaded the first time a schema
 * is checked. Ajv is ~300 KB of source that most starts never need (a schema
 * is compiled at the first call of a tool with an `outputSchema`, or at an
 * elicitation), so the package does not load it at import
 * (docs/performance.md, "The SDK inside the bundle"). Loaded with `require`,
 * from the client package's CommonJS build, because the SDK asks for
 * validators synchronously.
 */
import { createRequire } from 'node:module';
import type { JsonSchemaType, JsonSchemaValidator, jsonSchemaValidator } from '@modelcontextprotocol/client';
import type { AjvJsonSchemaValidator } from '@modelcontextprotocol/client/validators/ajv';

let ctor: typeof AjvJsonSchemaValidator | undefined;

/** A new Ajv validator instance (each keeps its own compiled schemas); loads Ajv on the first call. */
export function newAjvValidator(): AjvJsonSchemaValidator {
  ctor ??= (createRequire(import.meta.url)('@modelcontextprotocol/client/validators/ajv') as typeof import('@modelcontextprotocol/client/validators/ajv'))
    .AjvJsonSchemaValidator;
  return new ctor();
}

/**
 * The JSON Schema validator every SDK `Client` is built with, and the SDK's
 * default in the package's bundles (`util/sdk-shims.ts`). The SDK's own
 * default builds an Ajv instance (with its formats) in each Client's
 * constructor: ~0.5 ms of CPU and ~23 KB of heap per connection, although
 * the Client only uses it in `listTools()`, which this package never calls
 * (listings go through `client.request`, results are checked by
 * registry/output-contract.ts). Built on first use instead, per Client, so
 * schemas compiled by one server's client never meet another's.
 */
export class LazyJsonSchemaValidator implements jsonSchemaValidator {
  private inner: AjvJsonSchemaValidator | undefined;

  /** Whether the Ajv instance was built (tests). */
  get built(): boolean {
    return this.inner !== undefined;
  }

  getValidator<T>(schema: JsonSchemaType): JsonSchemaValidator<T> {
    this.inner ??= newAjvValidator();
    return this.inner.getValidator<T>(schema);
  }
}
