/**
 * The SDK Client's JSON Schema validator is built on first use (docs/performance.md:
 * the default builds an Ajv instance per connection that nothing here uses).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openConnection } from '../../src/connection/connect.js';
import { LazyJsonSchemaValidator } from '../../src/util/ajv.js';
import { ProcessTracker } from '../../src/connection/processes.js';
import { stdioFixture } from '../helpers/fixtures.js';
import { expectNoSurvivors } from './support.js';

const tracker = new ProcessTracker({ graceMs: 500 });
const cwd = mkdtempSync(join(tmpdir(), 'mcp-lazy-validator-'));

afterAll(async () => {
  await expectNoSurvivors([tracker]);
  rmSync(cwd, { recursive: true, force: true });
});

describe('LazyJsonSchemaValidator', () => {
  it('builds Ajv on the first schema and validates like the SDK default', () => {
    const v = new LazyJsonSchemaValidator();
    expect(v.built).toBe(false);
    const check = v.getValidator<{ sum: number }>({ type: 'object', properties: { sum: { type: 'number' } }, required: ['sum'] });
    expect(v.built).toBe(true);
    expect(check({ sum: 5 })).toMatchObject({ valid: true, data: { sum: 5 } });
    const bad = check({ sum: 'five' });
    expect(bad.valid).toBe(false);
    expect(bad.errorMessage).toMatch(/sum/);
  });

  it('a connection lists, calls an outputSchema tool and closes without ever building it', async () => {
    const conn = await openConnection(stdioFixture('basic-server', { name: 'lazy' }), { generation: 1, tracker, cwd });
    try {
      expect(conn.tools.find((t) => t.name === 'add')?.outputSchema).toBeDefined();
      expect((await conn.callTool('add', { a: 2, b: 3 })).structuredContent).toEqual({ sum: 5 });
      // The SDK keeps its validator in a private field; this is the one place that looks at it.
      const validator = (conn as unknown as { client: { _jsonSchemaValidator: unknown } }).client._jsonSchemaValidator;
      expect(validator).toBeInstanceOf(LazyJsonSchemaValidator);
      expect((validator as LazyJsonSchemaValidator).built).toBe(false);
    } finally {
      await conn.close();
    }
  });
});
