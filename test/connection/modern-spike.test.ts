/**
 * The v2-client spike (src/connection/modern.ts) against the v2 fixtures:
 * what the SDK's own negotiation does with a new-revision-only server, a
 * dual server and today's v1 fixture, over stdio and streamable HTTP.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { openModern, type ModernConnection } from '../../src/connection/modern.js';
import { startV2HttpFixture, type V2HttpFixture } from '../fixtures/v2-http-fixture.js';
import { fixturePath } from '../helpers/fixtures.js';
import { waitFor } from '../helpers/processes.js';
import { processesMatching } from '../controller/support.js';

const fixtures: V2HttpFixture[] = [];
const open: ModernConnection[] = [];

async function v2Http(legacy: 'serve' | 'reject'): Promise<V2HttpFixture> {
  const f = await startV2HttpFixture({ legacy });
  fixtures.push(f);
  return f;
}

async function tracked(c: Promise<ModernConnection>): Promise<ModernConnection> {
  const conn = await c;
  open.push(conn);
  return conn;
}

function stdio(fixture: string, env: Record<string, string> = {}) {
  return { command: process.execPath, args: [fixturePath(fixture)], env: { PATH: process.env.PATH ?? '', ...env } };
}

afterAll(async () => {
  await Promise.all(open.map((c) => c.close()));
  await Promise.all(fixtures.map((f) => f.close()));
  // The SDK's stdio probe runs on a sibling child it spawns itself: it must be gone too.
  for (const name of ['v2-stdio-server', 'basic-server']) {
    await waitFor(() => processesMatching(fixturePath(name)).length === 0, `no ${name} process left`, 10_000);
  }
});

describe('the v2 client (spike)', () => {
  it('over HTTP reaches a new-revision-only server: discover, list, call', async () => {
    const f = await v2Http('reject');
    const conn = await tracked(openModern({ url: f.url }));
    expect(conn).toMatchObject({ era: 'modern', protocolVersion: '2026-07-28' });
    expect((await conn.listToolNames()).sort()).toEqual(['add', 'echo']);
    expect((await conn.callTool('add', { a: 4, b: 5 })).structuredContent).toEqual({ sum: 9 });
    expect(f.methods[0]).toBe('server/discover');
    expect(f.methods).not.toContain('initialize');
  });

  it('over stdio reaches a new-revision-only server: discover, list, call', async () => {
    const conn = await tracked(openModern(stdio('v2-stdio-server', { V2_LEGACY: 'reject' })));
    expect(conn).toMatchObject({ era: 'modern', protocolVersion: '2026-07-28' });
    expect((await conn.listToolNames()).sort()).toEqual(['add', 'echo']);
    expect((await conn.callTool('echo', { text: 'new wire' })).content).toEqual([{ type: 'text', text: 'echo: new wire' }]);
  });

  it('prefers the new revision on a dual server, and falls back to initialize on a v1 server', async () => {
    const dual = await tracked(openModern({ url: (await v2Http('serve')).url }));
    expect(dual.era).toBe('modern');
    const old = await tracked(openModern(stdio('basic-server')));
    expect(old.era).toBe('legacy');
    expect(old.protocolVersion).toBe('2025-11-25');
    expect(await old.listToolNames()).toContain('echo');
  });
});
