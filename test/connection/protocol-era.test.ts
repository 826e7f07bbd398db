/**
 * The era a server was found to speak is remembered with its listing
 * (docs/protocol.md): the next connect under `auto` goes straight to it, no
 * probe; a remembered era the server now refuses is probed afresh once.
 * Observed on the v2 HTTP fixture, which records every method it receives.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { protocolSuite } from './protocol-suite.js';
import { desiredServer, stdioFixture } from '../helpers/fixtures.js';
import { waitState } from '../controller/support.js';

const dirs: string[] = [];
const { connect, h, options, v2Http } = protocolSuite(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('a remembered era', () => {
  it('modern: adopted without a probe (no server/discover, no initialize)', async () => {
    const f = await v2Http('reject');
    const first = await connect(desiredServer('web', { type: 'http', url: f.url }), options);
    expect(first.protocol.era).toBe('modern');
    f.methods.length = 0;
    const again = await connect(desiredServer('web', { type: 'http', url: f.url }), { ...options, prior: first.protocol });
    expect(again.protocol.era).toBe('modern');
    expect(again.tools.map((t) => t.name).sort()).toEqual(['add', 'echo']);
    expect(f.methods).not.toContain('server/discover');
    expect(f.methods).not.toContain('initialize');
  });

  it('legacy: initialize straight away, no probe', async () => {
    const f = await v2Http('serve');
    const conn = await connect(desiredServer('web-old', { type: 'http', url: f.url }), { ...options, prior: { era: 'legacy' } });
    expect(conn.protocol.era).toBe('legacy');
    expect(f.methods[0]).toBe('initialize');
    expect(f.methods).not.toContain('server/discover');
  });

  it('a remembered era the server now refuses is probed afresh, once', async () => {
    const f = await v2Http('reject');
    const conn = await connect(desiredServer('upgraded', { type: 'http', url: f.url }), { ...options, prior: { era: 'legacy' } });
    expect(conn.protocol.era).toBe('modern');
    expect(f.methods.slice(0, 2)).toEqual(['initialize', 'server/discover']);
    const stdio = await connect(stdioFixture('v2-stdio-server', { name: 'upgraded-stdio', env: { V2_LEGACY: 'reject' } }), { ...options, prior: { era: 'legacy' } });
    expect(stdio.protocol.era).toBe('modern');
  });

  it('is ignored under a pin', async () => {
    const f = await v2Http('serve');
    const conn = await connect(desiredServer('pinned', { type: 'http', url: f.url, protocol: '2025-11-25' }), { ...options, prior: { era: 'modern', discover: { supportedVersions: ['2026-07-28'], capabilities: {} } } });
    expect(conn.protocol.era).toBe('legacy');
    expect(f.methods[0]).toBe('initialize');
  });
});

describe('the era found, as the server answers', () => {
  it('reaches the start-phase hook before anything is listed, so a limiter can pass it on as it frees the slot', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mcp-era-hook-'));
    dirs.push(dir);
    const methods = join(dir, 'methods.log');
    const seen: { era: string; received: string[] }[] = [];
    const received = (): string[] => readFileSync(methods, 'utf8').split('\n').filter(Boolean);
    const startPhase = { initialized: (verdict: { era: string }) => seen.push({ era: verdict.era, received: received() }) };
    const conn = await connect(stdioFixture('light-server', { name: 'light-hook', env: { METHODS_FILE: methods } }), { ...options, startPhase });
    expect(conn.protocol.era).toBe('legacy');
    expect(seen).toHaveLength(1);
    expect(seen[0]!.era).toBe('legacy');
    // Probed, answered `initialize`, and not yet asked for its tools.
    expect(seen[0]!.received.slice(0, 2)).toEqual(['server/discover', 'initialize']);
    expect(seen[0]!.received).not.toContain('tools/list');
    expect(received()).toContain('tools/list');
  });

  it("a 2025-era server's refusal of the probe is read as its era one round trip sooner, before the initialize that follows", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mcp-era-answer-'));
    dirs.push(dir);
    const methods = join(dir, 'methods.log');
    const answered: { learned: string | undefined; received: string[] }[] = [];
    const startPhase = {
      answered: (learned: { era: string } | undefined) => answered.push({ learned: learned?.era, received: readFileSync(methods, 'utf8').split('\n').filter(Boolean) }),
    };
    const conn = await connect(stdioFixture('light-server', { name: 'light-answer', env: { METHODS_FILE: methods } }), { ...options, startPhase });
    expect(conn.protocol.era).toBe('legacy');
    // Once, at the first answer: the probe's refusal, while `initialize` is not yet sent.
    expect(answered).toEqual([{ learned: 'legacy', received: ['server/discover'] }]);
  });

  it("a modern server's answer frees the start but teaches nothing early; a known era is not re-learnt", async () => {
    const seen: (string | undefined)[] = [];
    const startPhase = { answered: (learned: { era: string } | undefined) => seen.push(learned?.era ?? 'none') };
    const modern = await connect(stdioFixture('v2-stdio-server', { name: 'modern-answer' }), { ...options, startPhase });
    expect(modern.protocol.era).toBe('modern');
    const known = await connect(stdioFixture('light-server', { name: 'known-answer' }), { ...options, startPhase, prior: { era: 'legacy' } });
    expect(known.protocol.era).toBe('legacy');
    expect(seen).toEqual(['none', 'none']);
  });
});

describe('the listing cache keeps the era', () => {
  it('a restarted controller connects with the cached era: no second probe', async () => {
    const f = await v2Http('serve');
    const cacheDir = mkdtempSync(join(tmpdir(), 'mcp-era-cache-'));
    dirs.push(cacheDir);
    const ws = h.workspace('mcp-era-');
    const first = h.controller(ws, { listingCache: cacheDir });
    await first.addRuntimeServer('web', { type: 'http', url: f.url });
    await first.start();
    await waitState(first, 'web', 'connected');
    await first.dispose();
    expect(f.methods.filter((m) => m === 'server/discover')).toHaveLength(1);
    const [file] = readdirSync(cacheDir);
    expect(JSON.parse(readFileSync(join(cacheDir, file!), 'utf8')).protocol).toMatchObject({ era: 'modern', discover: { supportedVersions: expect.arrayContaining(['2026-07-28']) } });

    const second = h.controller(ws, { listingCache: cacheDir });
    await second.addRuntimeServer('web', { type: 'http', url: f.url });
    await second.start();
    await waitState(second, 'web', 'connected');
    expect(f.methods.filter((m) => m === 'server/discover')).toHaveLength(1);
    expect(f.methods).not.toContain('initialize');
    expect(second.tools().map((t) => t.name)).toEqual(expect.arrayContaining([expect.stringContaining('echo')]));
  }, 60_000);
});
