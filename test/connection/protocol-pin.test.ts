/**
 * The `protocol` field of a server entry and the controller's `protocol`
 * default: validated, part of the fingerprint only, and honest about what
 * this build speaks (a `2026-07-28` pin fails before anything starts).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { validateServerEntry } from '../../src/config/schema.js';
import { approvalHash, fingerprint } from '../../src/config/identity.js';
import { ProcessTracker } from '../../src/connection/processes.js';
import type { ProtocolChoice } from '../../machines/types.js';
import { desiredServer, stdioFixture, stdioFixtureConfig } from '../helpers/fixtures.js';
import { Harness, row, waitState } from '../controller/support.js';
import { connectionCollector, connectError, expectNoSurvivors } from './support.js';

const tracker = new ProcessTracker({ graceMs: 500 });
const { connect, closeAll } = connectionCollector();
const h = new Harness();
const options = { generation: 1, tracker, cwd: process.cwd(), timeoutMs: 20_000 };

/** The basic fixture over stdio with `protocol` set. */
function pinned(name: string, protocol: ProtocolChoice) {
  return desiredServer(name, { ...stdioFixtureConfig('basic-server'), protocol });
}

afterAll(async () => {
  await closeAll();
  await h.cleanup();
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
  it('a 2026-07-28 pin fails permanently, before any process starts, saying it is not supported yet', async () => {
    const before = tracker.history().length;
    const err = await connectError(connect(pinned('pinned', '2026-07-28'), options));
    expect(err).toMatchObject({ code: 'connect_failed', permanent: true });
    expect(err.message).toContain('Server "pinned" is pinned to MCP protocol revision 2026-07-28 ("protocol": "2026-07-28" in its config)');
    expect(err.message).toContain('not supported yet by this build');
    expect(err.hint).toMatch(/Set "protocol" to "auto" or "2025-11-25"/);
    expect(tracker.history().length).toBe(before);
  });

  it("the controller's default applies to entries without a pin, and an entry's own pin wins", async () => {
    const err = await connectError(connect(stdioFixture('basic-server', { name: 'defaulted' }), { ...options, protocol: '2026-07-28' }));
    expect(err.permanent).toBe(true);
    expect(err.message).toContain(`the controller's default "protocol": "2026-07-28"`);
    const conn = await connect(pinned('own', '2025-11-25'), { ...options, protocol: '2026-07-28' });
    expect(conn.tools.length).toBeGreaterThan(0);
  });

  it('auto and 2025-11-25 speak the 2025 wire', async () => {
    for (const protocol of ['auto', '2025-11-25'] as const) {
      const conn = await connect(pinned(`p-${protocol}`, protocol), options);
      expect(conn.tools.length).toBeGreaterThan(0);
    }
  });

  it('in the controller a 2026-07-28 pin goes straight to failed with the fix in its last error', async () => {
    const ws = h.workspace('mcp-pin-');
    const c = h.controller(ws, { backoff: { initialMs: 60_000, maxMs: 60_000, attempts: 5 } });
    await c.addRuntimeServer('pinned', { ...stdioFixtureConfig('basic-server'), protocol: '2026-07-28' });
    await c.addRuntimeServer('plain', stdioFixtureConfig('basic-server'));
    await c.start();
    await waitState(c, 'pinned', 'failed');
    await waitState(c, 'plain', 'connected');
    expect(row(c, 'pinned').lastError).toMatch(/not supported yet by this build.*fix: set "protocol" to "auto"/);
  }, 60_000);
});
