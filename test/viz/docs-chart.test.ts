import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { serverMachine } from '../../machines/server.machine.js';
import { renderChart } from '../../src/viz/index.js';
import { repoRoot } from '../helpers/fixtures.js';

const REGENERATE = 'mcp-reconciler viz server --format svg --out docs/server-machine.svg';

describe('docs/server-machine.svg', () => {
  it('matches the server machine as it is now', async () => {
    const onDisk = await readFile(resolve(repoRoot, 'docs/server-machine.svg'), 'utf8').catch(() => '');
    const fresh = await renderChart(serverMachine, 'svg');
    // Compared as a boolean so a stale file fails with the fix, not a 100 KB diff.
    expect(onDisk === fresh, `docs/server-machine.svg is stale (the server machine changed): regenerate it with \`${REGENERATE}\` (from the repository root)`).toBe(true);
  });
});
