/**
 * The controller remembers which programs speak only the 2025 revisions
 * (docs/protocol.md): an env edit of such a server opens with `initialize`,
 * no `server/discover` probe, even with the listing cache off; a modern
 * verdict is not carried over an edit, and a pinned connect teaches nothing.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { McpController } from '../../src/controller/controller.js';
import type { ServerConfig } from '../../machines/types.js';
import { startV2HttpFixture, type V2HttpFixture } from '../fixtures/v2-http-fixture.js';
import { stdioFixtureConfig } from '../helpers/fixtures.js';
import { waitFor } from '../helpers/processes.js';
import { Harness, row } from './support.js';

const h = new Harness();
const fixtures: V2HttpFixture[] = [];
afterAll(async () => {
  await h.cleanup();
  await Promise.all(fixtures.map((f) => f.close()));
});

/** Replace `name`'s config and wait until a newer generation than the current one is connected. */
async function edit(ctl: McpController, name: string, config: ServerConfig): Promise<void> {
  const before = ctl.status().find((s) => s.name === name)?.generation ?? 0;
  await ctl.addRuntimeServer(name, config);
  await waitFor(() => row(ctl, name).generation > before && row(ctl, name).state === 'connected', `"${name}" to connect a new generation (now ${row(ctl, name).state})`, 60_000);
}

function lines(file: string): string[] {
  return readFileSync(file, 'utf8').split('\n').filter(Boolean);
}

describe('a 2025-era program remembered across edits (listing cache off)', () => {
  it('opens with initialize after an env edit; a modern verdict or a pinned connect is not carried', async () => {
    const ws = h.workspace('mcp-era-mem-');
    const methods = join(ws.root, 'methods.log');
    writeFileSync(methods, '');
    const ctl = h.controller(ws, { listingCache: false });
    await ctl.start();
    const light = (version: string): ServerConfig => stdioFixtureConfig('light-server', { env: { METHODS_FILE: methods, TOOLS_VERSION: version } });
    await edit(ctl, 'light', light('1'));
    expect(lines(methods).filter((m) => m === 'server/discover')).toHaveLength(1);

    writeFileSync(methods, '');
    await edit(ctl, 'light', light('2'));
    expect(ctl.tools().map((t) => t.rawName)).toContain('v2_tool');
    expect(lines(methods)[0]).toBe('initialize');
    expect(lines(methods)).not.toContain('server/discover');

    // A modern server: an edit (other headers, same URL) probes again.
    const f = await startV2HttpFixture({ legacy: 'serve' });
    const g = await startV2HttpFixture({ legacy: 'serve' });
    fixtures.push(f, g);
    await edit(ctl, 'web', { type: 'http', url: f.url });
    await edit(ctl, 'web', { type: 'http', url: f.url, headers: { 'X-Edit': '1' } });
    expect(f.methods.filter((m) => m === 'server/discover')).toHaveLength(2);
    expect(f.methods).not.toContain('initialize');

    // A 2025 pin on a server that speaks both says nothing about what `auto` would find.
    await edit(ctl, 'both', { type: 'http', url: g.url, protocol: '2025-11-25' });
    expect(g.methods).toContain('initialize');
    expect(g.methods).not.toContain('server/discover');
    await edit(ctl, 'both', { type: 'http', url: g.url });
    expect(g.methods).toContain('server/discover');
  }, 120_000);
});
