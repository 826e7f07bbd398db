/**
 * The listing cache with resources (SPEC §13): a warm-cache start registers
 * a server's resources and templates before it runs (a lazy server's while
 * dormant), a read wakes it, and cache files written before resources were
 * cached (version 1) still give their tools.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ListingCache } from '../../src/cache/listing-cache.js';
import { fingerprint } from '../../src/config/identity.js';
import { stdioFixtureConfig } from '../helpers/fixtures.js';
import { Harness, row, toolNames, waitState } from './support.js';

const h = new Harness();
afterAll(() => h.cleanup());

describe('listing cache with resources', () => {
  it('registers cached resources of a lazy server while it sleeps; reading one wakes it and the live listing replaces them', async () => {
    const ws = h.workspace();
    const cacheDir = join(ws.home, 'listing-cache');
    const config = stdioFixtureConfig('resource-server', { env: { INSTANCE: 'L' } });
    const fill = h.controller(ws, { listingCache: cacheDir });
    await fill.addRuntimeServer('notes', config);
    await fill.start();
    expect(row(fill, 'notes').state).toBe('connected');
    await fill.dispose();

    const c = h.controller(ws, { listingCache: cacheDir, startup: 'lazy' });
    await c.addRuntimeServer('notes', config);
    await c.start();
    expect(row(c, 'notes').state).toBe('dormant');
    expect(c.pids()).toEqual([]);
    expect(c.resources()).toEqual([expect.objectContaining({ uri: 'note://static/hello', server: 'notes', cached: true })]);
    expect(c.resourceTemplates()).toEqual([expect.objectContaining({ uriTemplate: 'note://notes/{id}', cached: true })]);

    const read = await c.readResource('note://notes/5');
    expect(read.contents[0]).toMatchObject({ uri: 'note://notes/5', text: 'note 5 from L' });
    expect(row(c, 'notes').state).toBe('connected');
    expect(c.resources()[0]?.cached).toBeUndefined();
  });

  it('still reads a version 1 cache file (tools and prompts only): its tools register, its resources wait for the server', async () => {
    const ws = h.workspace();
    const cacheDir = join(ws.home, 'listing-cache');
    const config = stdioFixtureConfig('resource-server');
    const cache = new ListingCache({ dir: cacheDir, root: ws.root });
    const file = cache.fileOf(fingerprint(config))!;
    mkdirSync(dirname(file), { recursive: true });
    const v1 = { version: 1, server: 'old', fingerprint: fingerprint(config), at: new Date().toISOString(), tools: [{ name: 'touch', inputSchema: { type: 'object' } }], prompts: [] };
    writeFileSync(file, JSON.stringify(v1), { mode: 0o600 });
    await cache.prepare([fingerprint(config)]);
    expect(cache.get(fingerprint(config))).toEqual({ tools: v1.tools, prompts: [] });

    const c = h.controller(ws, { listingCache: cacheDir, startup: 'lazy' });
    await c.addRuntimeServer('old', config);
    await c.start();
    expect(row(c, 'old').state).toBe('dormant');
    expect(toolNames(c)).toEqual(['mcp__old__touch']);
    expect(c.resources()).toEqual([]);
    await c.callTool('mcp__old__touch', { uri: 'note://static/hello' });
    await waitState(c, 'old', 'connected');
    expect(c.resources().map((r) => r.uri)).toEqual(['note://static/hello']);
    // The next write is version 2, with the resources.
    await c.dispose();
    const again = new ListingCache({ dir: cacheDir, root: ws.root });
    await again.prepare([fingerprint(config)]);
    expect(again.get(fingerprint(config))?.resources?.map((r) => r.uri)).toEqual(['note://static/hello']);
  });
});
