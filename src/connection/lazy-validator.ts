/**
 * The JSON Schema validator every SDK `Client` is built with. The SDK's
 * default builds an Ajv instance (with its formats) in each Client's
 * constructor: ~0.5 ms of CPU and ~23 KB of heap per connection, although
 * the Client only uses it in `listTools()`, which this package never calls
 * (listings go through `client.request`, results are checked by
 * registry/output-contract.ts). Built on first use instead, per Client, so
 * schemas compiled by one server's client never meet another's.
 */
import type { JsonSchemaType, JsonSchemaValidator, jsonSchemaValidator } from '@modelcontextprotocol/client';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/client/validators/ajv';

/** {@link AjvJsonSchemaValidator}, created the first time a schema is asked for. */
export class LazyJsonSchemaValidator implements jsonSchemaValidator {
  private inner: AjvJsonSchemaValidator | undefined;

  /** Whether the Ajv instance was built (tests). */
  get built(): boolean {
    return this.inner !== undefined;
  }

  getValidator<T>(schema: JsonSchemaType): JsonSchemaValidator<T> {
    this.inner ??= new AjvJsonSchemaValidator();
    return this.inner.getValidator<T>(schema);
  }
}
