/**
 * The `protocol` field of a server entry and the controller's `protocol`
 * default: validated, part of the fingerprint only; a pin speaks exactly
 * that revision (docs/protocol.md), and a server that does not speak it is
 * a permanent failure naming the fix.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { validateServerEntry } from '../../src/config/schema.js';
import { approvalHash, fingerprint } from '../../src/config/identity.js';
import { ProcessTracker } from '../../src/connection/processes.js';
import type { ProtocolChoice } from '../../machines/types.js';
import { desiredServer, stdioFixture, stdioFixtureConfig } from '../helpers/fixtures.js';
import { Harness, row, waitState } from '../controller/support.js';
import { connectionCollector, connectError, expectNoSurvivors } from './support.js';
import { startV2HttpFixture, type V2HttpFixture } from '../fixtures/v2-http-fixture.js';

const tracker = new ProcessTracker({ graceMs: 500 });
const { connect, closeAll } = connectionCollector();
const h = new Harness();
const options = { generation: 1, tracker, cwd: process.cwd(), timeoutMs: 20_000 };
const fixtures: V2HttpFixture[] = [];

/** The basic fixture over stdio with `protocol` set. */
function pinned(name: string, protocol: ProtocolChoice) {
  return desiredServer(name, { ...stdioFixtureConfig('basic-server'), protocol });
}

afterAll(async () => {
  await closeAll();
  await h.cleanup();
  await Promise.all(fixtures.map((f) => f.close()));
  await expectNoSurvivors([tracker]);
});

describe('the protocol field', () => {
  it('accepts the two revisions and auto, and names the choices otherwise', () => {
    for (const protocol of ['2025-11-25', '2026-07-28', 'auto'] as const) {
      const r = validateServerEntry({ command: 'srv', protocol });
      expect(r.ok && r.config.protocol).toBe(protocol);
    }
    const bad = validateServerEntry({ command: 'srv', protocol: 'latest' });
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.problems[0]).toMatchObject({ path: ['protocol'], message: 'must be "2025-11-25", "2026-07-28" or "auto"' });
  });

  it('a pin changes the fingerprint (a reconnect), not the approval hash; auto ≡ absent', () => {
    const plain = { command: 'srv' };
    expect(fingerprint({ ...plain, protocol: 'auto' })).toBe(fingerprint(plain));
    expect(fingerprint({ ...plain, protocol: '2025-11-25' })).not.toBe(fingerprint(plain));
    expect(fingerprint({ ...plain, protocol: '2026-07-28' })).not.toBe(fingerprint({ ...plain, protocol: '2025-11-25' }));
    expect(approvalHash({ ...plain, protocol: '2026-07-28' })).toBe(approvalHash(plain));
  });
});

describe('connecting with a pin', () => {
  it('a 2026-07-28 pin speaks the new wire to v2 servers, over stdio and streamable HTTP', async () => {
    const stdio = await connect(desiredServer('new-stdio', { ...stdioFixtureConfig('v2-stdio-server'), protocol: '2026-07-28' }), options);
    expect(stdio.protocol.era).toBe('modern');
    expect(stdio.protocolVersion).toBe('2026-07-28');
    expect(stdio.tools.map((t) => t.name).sort()).toEqual(['add', 'echo']);
    const f = await startV2HttpFixture({ legacy: 'serve' });
    fixtures.push(f);
    const web = await connect(desiredServer('new-web', { type: 'http', url: f.url, protocol: '2026-07-28' }), options);
    expect(web.protocol.era).toBe('modern');
    expect((await web.callTool('add', { a: 2, b: 2 })).structuredContent).toEqual({ sum: 4 });
    expect(f.methods[0]).toBe('server/discover');
    expect(f.methods).not.toContain('initialize');
  });

  it('a 2026-07-28 pin to a 2025-only server fails permanently, naming the fix', async () => {
    const err = await connectError(connect(pinned('pinned', '2026-07-28'), options));
    expect(err).toMatchObject({ code: 'connect_failed', permanent: true });
    expect(err.details.protocolRejected).toBe(true);
    expect(err.message).toContain('Server "pinned" rejected our protocol revision: it speaks no 2026-07-28');
    expect(err.hint).toMatch(/"protocol": "2025-11-25" in its config \(or "protocol": "auto", instead of "2026-07-28"\)/);
  });

  it("the controller's default applies to entries without a pin, and an entry's own pin wins", async () => {
    const err = await connectError(connect(stdioFixture('basic-server', { name: 'defaulted' }), { ...options, protocol: '2026-07-28' }));
    expect(err.permanent).toBe(true);
    expect(err.message).toContain('it speaks no 2026-07-28');
    const conn = await connect(pinned('own', '2025-11-25'), { ...options, protocol: '2026-07-28' });
    expect(conn.tools.length).toBeGreaterThan(0);
    expect(conn.protocol.era).toBe('legacy');
  });

  it('auto and 2025-11-25 speak the 2025 wire to a 2025-only server', async () => {
    for (const protocol of ['auto', '2025-11-25'] as const) {
      const conn = await connect(pinned(`p-${protocol}`, protocol), options);
      expect(conn.tools.length).toBeGreaterThan(0);
      expect(conn.protocol.era).toBe('legacy');
      expect(conn.protocolVersion).toBe('2025-11-25');
    }
  });

  it('a 2025-11-25 pin keeps a server that speaks both on the 2025 wire (no probe)', async () => {
    const f = await startV2HttpFixture({ legacy: 'serve' });
    fixtures.push(f);
    const conn = await connect(desiredServer('old-web', { type: 'http', url: f.url, protocol: '2025-11-25' }), options);
    expect(conn.protocol.era).toBe('legacy');
    expect(f.methods[0]).toBe('initialize');
    expect(f.methods).not.toContain('server/discover');
  });

  it('in the controller a 2026-07-28 pin to a 2025-only server goes straight to failed with the fix in its last error', async () => {
    const ws = h.workspace('mcp-pin-');
    const c = h.controller(ws, { backoff: { initialMs: 60_000, maxMs: 60_000, attempts: 5 } });
    await c.addRuntimeServer('pinned', { ...stdioFixtureConfig('basic-server'), protocol: '2026-07-28' });
    await c.addRuntimeServer('plain', stdioFixtureConfig('basic-server'));
    await c.start();
    await waitState(c, 'pinned', 'failed');
    await waitState(c, 'plain', 'connected');
    expect(row(c, 'pinned')).toMatchObject({ state: 'failed', attempt: 0 });
    expect(row(c, 'pinned').lastError).toMatch(/rejected our protocol revision.*fix: pin the revision it speaks with "protocol": "2025-11-25"/);
  }, 60_000);
});
