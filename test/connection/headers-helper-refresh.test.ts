/**
 * A `headersHelper` that prints short-lived tokens: when the server stops
 * accepting the token mid-session (HTTP 401), the helper runs once more and
 * the request is sent again with its new output; the server stays connected
 * on the same generation.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MemoryTokenStore, type McpController } from '../../src/index.js';
import { bareController } from '../helpers/bare-controller.js';
import { startHttpFixture, type HttpFixture } from '../fixtures/http-fixture.js';

/** The helper: bumps a counter file and prints `Authorization: Bearer tok-<count>`. */
const HELPER = `
const fs = require('node:fs');
const n = (Number(fs.existsSync('runs') ? fs.readFileSync('runs', 'utf8') : '0') || 0) + 1;
fs.writeFileSync('runs', String(n));
process.stdout.write(JSON.stringify({ Authorization: 'Bearer tok-' + n }));
`;

describe('headersHelper with a token that expires mid-session', () => {
  let dir: string;
  let fixture: HttpFixture;
  let controller: McpController | undefined;
  /** Requests each token may still make; a token not listed, or at 0, gets 401. */
  const budget = new Map<string, number>();

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mcpr-helper-refresh-'));
    writeFileSync(join(dir, 'helper.cjs'), HELPER);
    budget.clear();
    budget.set('tok-1', Infinity);
    budget.set('tok-2', Infinity);
    fixture = await startHttpFixture({
      acceptsToken: (token) => {
        const left = token === undefined ? 0 : (budget.get(token) ?? 0);
        if (left <= 0) return false;
        budget.set(token!, left - 1);
        return true;
      },
    });
  });
  afterEach(async () => {
    await controller?.dispose();
    controller = undefined;
    await fixture.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const runs = (): number => Number(readFileSync(join(dir, 'runs'), 'utf8'));

  it('runs the helper again on a 401 and retries the call; the server stays connected', async () => {
    controller = bareController(dir, { listingCache: false, oauth: { tokenStore: new MemoryTokenStore() } });
    await controller.addRuntimeServer('remote', { type: 'http', url: fixture.url, headersHelper: `${JSON.stringify(process.execPath)} helper.cjs` });
    await controller.start();
    const before = controller.status().find((s) => s.name === 'remote')!;
    expect(before.state, before.lastError).toBe('connected');
    expect(runs()).toBe(1);
    expect((await controller.callTool('mcp__remote__echo', { text: 'first' })).isError).toBeFalsy();

    // The helper's first token expires now: both calls get 401, one helper run serves both.
    budget.set('tok-1', 0);
    const results = await Promise.all(['a', 'b'].map((text) => controller!.callTool('mcp__remote__echo', { text })));
    for (const r of results) expect(r.isError, JSON.stringify(r.content)).toBeFalsy();
    expect(runs()).toBe(2);

    const after = controller.status().find((s) => s.name === 'remote')!;
    expect(after.state).toBe('connected');
    expect(after.generation).toBe(before.generation);
  });
});
