/**
 * Instant start (SPEC §12): the listing cache, lazy servers (`dormant`), the
 * idle stop, and the gates in front of all of them. Real fixture servers and
 * real processes; every spawned PID is checked dead at the end.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ListingCache } from '../../src/cache/listing-cache.js';
import { approvalHash, configHash, fingerprint } from '../../src/config/identity.js';
import { validateServerEntry } from '../../src/config/schema.js';
import type { ServerConfig } from '../../machines/types.js';
import type { McpController } from '../../src/controller/controller.js';
import { stdioFixtureConfig } from '../helpers/fixtures.js';
import { pidAlive, waitFor } from '../helpers/processes.js';
import { firstText, Harness, rejection, row, toolNames, waitState, type Workspace } from './support.js';

const h = new Harness();
afterAll(() => h.cleanup());

const BASIC_TOOLS = ['mcp__b__add', 'mcp__b__echo', 'mcp__b__env', 'mcp__b__pid', 'mcp__b__v1_tool'];

function cacheDir(ws: Workspace): string {
  return join(ws.home, 'listing-cache');
}

/** Run one eager controller until `server` connected, so its listing is cached; then dispose it. */
async function fillCache(ws: Workspace, name: string, config: ServerConfig): Promise<void> {
  const { c } = await h.running({ [name]: config }, { listingCache: cacheDir(ws) }, ws);
  expect(row(c, name).state).toBe('connected');
  await c.dispose();
}

/** Write a cache entry by hand (what an older run of the server listed). */
async function writeCache(ws: Workspace, name: string, config: ServerConfig, toolNamesListed: string[]): Promise<void> {
  const cache = new ListingCache({ dir: cacheDir(ws), root: ws.root });
  cache.store(fingerprint(config), name, {
    tools: toolNamesListed.map((n) => ({ name: n, description: `cached ${n}`, inputSchema: { type: 'object' as const } })),
    prompts: [],
  });
  await cache.flush();
}

/** A started lazy controller serving the basic fixture as `name` from its cached listing: filled by a real run, or naming `listed` tools. */
async function dormant(name: string, listed?: string[]): Promise<McpController> {
  const ws = h.workspace();
  const config = stdioFixtureConfig('basic-server');
  if (listed) await writeCache(ws, name, config, listed);
  else await fillCache(ws, name, config);
  return (await h.running({ [name]: config }, { listingCache: cacheDir(ws), startup: 'lazy' }, ws)).c;
}

async function noProcesses(c: McpController): Promise<void> {
  await waitFor(() => c.pids().length === 0, 'the server process to be gone', 10_000);
}

describe('listing cache', () => {
  it('registers the cached tools at once while connecting, then replaces them with the live listing', async () => {
    const ws = h.workspace();
    const config = stdioFixtureConfig('basic-server');
    await fillCache(ws, 'b', config);
    const files = readdirSync(cacheDir(ws));
    expect(files).toHaveLength(1);
    expect(statSync(join(cacheDir(ws), files[0]!)).mode & 0o777).toBe(0o600);

    const c = h.controller(ws, { listingCache: cacheDir(ws) });
    await c.addRuntimeServer('b', config);
    const seenWhileConnecting: { tools: string[]; cached: boolean }[] = [];
    const changes: { added: string[]; removed: string[]; updated: string[] }[] = [];
    c.on('server-state', (e) => {
      if (e.name === 'b' && e.state === 'connecting') seenWhileConnecting.push({ tools: toolNames(c), cached: c.tools().every((t) => t.cached === true) });
    });
    c.on('tools-changed', (e) => changes.push(e));
    await c.start();
    expect(seenWhileConnecting[0]).toEqual({ tools: BASIC_TOOLS, cached: true });
    expect(row(c, 'b').state).toBe('connected');
    expect(toolNames(c)).toEqual(BASIC_TOOLS);
    // the live listing confirmed the cache: entries are no longer marked, and nothing "changed"
    expect(c.tools().some((t) => t.cached)).toBe(false);
    expect(row(c, 'b').cached).toBe(false);
    expect(changes.map((e) => ({ ...e, added: [...e.added].sort() }))).toEqual([{ server: 'b', added: BASIC_TOOLS, removed: [], updated: [] }]);
  });

  it('corrects a stale cache within one listing after connect and emits tools-changed for the difference', async () => {
    const ws = h.workspace();
    const config = stdioFixtureConfig('basic-server');
    await writeCache(ws, 'b', config, ['echo', 'gone_tool']);
    const c = h.controller(ws, { listingCache: cacheDir(ws) });
    await c.addRuntimeServer('b', config);
    const changes: { added: string[]; removed: string[] }[] = [];
    c.on('tools-changed', (e) => changes.push({ added: [...e.added].sort(), removed: e.removed }));
    await c.start();
    expect(toolNames(c)).toEqual(BASIC_TOOLS);
    expect(changes).toEqual([
      { added: ['mcp__b__echo', 'mcp__b__gone_tool'], removed: [] },
      { added: ['mcp__b__add', 'mcp__b__env', 'mcp__b__pid', 'mcp__b__v1_tool'], removed: ['mcp__b__gone_tool'] },
    ]);
    // …and the cache now holds the live listing
    await c.dispose();
    const reread = new ListingCache({ dir: cacheDir(ws), root: ws.root });
    await reread.prepare([fingerprint(config)]);
    expect(reread.get(fingerprint(config))!.tools.map((t) => t.name).sort()).toEqual(['add', 'echo', 'env', 'pid', 'v1_tool']);
  });

  it('writes nothing with listingCache: false, and a corrupt cache file counts as no entry', async () => {
    const ws = h.workspace();
    const config = stdioFixtureConfig('basic-server');
    const { c } = await h.running({ b: config }, { listingCache: false }, ws);
    expect(toolNames(c)).toEqual(BASIC_TOOLS);
    await c.dispose();
    expect(existsSync(cacheDir(ws))).toBe(false);

    await writeCache(ws, 'b', config, ['echo']);
    const file = join(cacheDir(ws), readdirSync(cacheDir(ws))[0]!);
    const { writeFileSync } = await import('node:fs');
    writeFileSync(file, '{ not json');
    const cache = new ListingCache({ dir: cacheDir(ws), root: ws.root });
    await cache.prepare([fingerprint(config)]);
    expect(cache.has(fingerprint(config))).toBe(false);
  });
});

describe('lazy servers', () => {
  it('a lazy server with a cache sits dormant with no process; the first call starts it and gets its answer', async () => {
    const c = await dormant('b');
    const r = row(c, 'b');
    expect([r.state, r.status, r.reason, r.cached, r.pid]).toEqual(['dormant', 'dormant', undefined, true, undefined]);
    expect(c.pids()).toEqual([]);
    expect(toolNames(c)).toEqual(BASIC_TOOLS);
    expect(c.unavailableReason('b')).toBeUndefined();
    expect(c.toolUnavailableMessage('mcp__b__echo')).toMatch(/dormant.*first call starts it/);

    const result = await c.callTool('mcp__b__echo', { text: 'wake up' });
    expect(firstText(result)).toBe('wake up');
    expect(row(c, 'b').state).toBe('connected');
    expect(c.pids()).toHaveLength(1);
    expect(row(c, 'b').cached).toBe(false);
  });

  it('a cached prompt of a dormant server wakes it too: getPrompt starts it and answers', async () => {
    const c = await dormant('p');
    expect(row(c, 'p').state).toBe('dormant');
    expect(c.prompts().map((p) => p.name)).toEqual(['mcp__p__greet']);
    expect(c.pids()).toEqual([]);
    const result = await c.getPrompt('mcp__p__greet', { who: 'Ada' });
    expect(JSON.stringify(result.messages)).toContain('Ada');
    expect(row(c, 'p').state).toBe('connected');
    expect(c.pids()).toHaveLength(1);
  });

  it('a lazy server without a cache connects once to fill it, then goes dormant', async () => {
    const ws = h.workspace();
    const c = h.controller(ws, { listingCache: cacheDir(ws) });
    await c.addRuntimeServer('b', { ...stdioFixtureConfig('basic-server'), startup: 'lazy' });
    const states: string[] = [];
    c.on('server-state', (e) => states.push(e.state));
    await c.start();
    expect(states).toEqual(['connecting', 'dormant']);
    expect(toolNames(c)).toEqual(BASIC_TOOLS);
    await noProcesses(c);
    expect(readdirSync(cacheDir(ws))).toHaveLength(1);
  });

  it('startup and idleTimeoutMs are read from config files and change neither the fingerprint nor the approval hash', () => {
    const parsed = validateServerEntry({ command: 'node', startup: 'lazy', idleTimeoutMs: 60_000 });
    expect(parsed).toEqual({ ok: true, config: { type: 'stdio', command: 'node', startup: 'lazy', idleTimeoutMs: 60_000 } });
    const bad = validateServerEntry({ command: 'node', startup: 'sometimes' });
    expect(bad.ok).toBe(false);
    const plain: ServerConfig = { type: 'stdio', command: 'node' };
    const lazy: ServerConfig = { ...plain, startup: 'lazy', idleTimeoutMs: 5 };
    expect(fingerprint(lazy)).toBe(fingerprint(plain));
    expect(approvalHash(lazy)).toBe(approvalHash(plain));
  });
});

describe('calls that wait for a connection', () => {
  it('a call to a cached tool while connecting waits for the connection; one with a short timeout gets tool_unavailable', async () => {
    const ws = h.workspace();
    const config = stdioFixtureConfig('slow-server', { env: { START_DELAY_MS: '1500' } });
    await fillCache(ws, 'slow', config);
    const c = h.controller(ws, { listingCache: cacheDir(ws) });
    await c.addRuntimeServer('slow', config);
    const started = c.start();
    await waitState(c, 'slow', 'connecting');
    expect(toolNames(c)).toEqual(['mcp__slow__ping']);
    expect(c.toolUnavailableMessage('mcp__slow__ping')).toMatch(/still connecting, and a call waits for it/);

    const short = await rejection(c.callTool('mcp__slow__ping', {}, { timeoutMs: 50 }));
    expect(short.code).toBe('tool_unavailable');
    expect(short.message).toMatch(/did not connect within 50 ms/);

    const result = await c.callTool('mcp__slow__ping', {});
    expect(firstText(result)).toBe('pong');
    await started;
    expect(row(c, 'slow').state).toBe('connected');
  });

  it('a call to a tool the live listing no longer has fails with unknown_tool, not a hang', async () => {
    const c = await dormant('b', ['gone_tool']);
    expect(row(c, 'b').state).toBe('dormant');
    const err = await rejection(c.callTool('mcp__b__gone_tool', {}));
    expect(err.code).toBe('unknown_tool');
    expect(err.message).toMatch(/no longer provided/);
    expect(toolNames(c)).toEqual(BASIC_TOOLS);
  });
});

describe('idle stop', () => {
  it('stops a connected server after idleTimeoutMs without calls; its tools stay and the next call wakes it', async () => {
    const ws = h.workspace();
    const { c } = await h.running({ b: stdioFixtureConfig('basic-server') }, { listingCache: cacheDir(ws), idleTimeoutMs: 300 }, ws);
    const firstPid = row(c, 'b').pid!;
    h.remember(firstPid);
    await waitState(c, 'b', 'dormant');
    await waitFor(() => !pidAlive(firstPid), 'the idle server process to exit', 10_000);
    expect(toolNames(c)).toEqual(BASIC_TOOLS);
    const result = await c.callTool('mcp__b__pid', {});
    expect(Number(firstText(result))).not.toBe(firstPid);
    h.remember(Number(firstText(result)));
  });

  it('never stops a server while one of its calls is running', async () => {
    const ws = h.workspace();
    const { c } = await h.running({ s: stdioFixtureConfig('slow-tool-server') }, { listingCache: cacheDir(ws), idleTimeoutMs: 200 }, ws);
    const tool = c.tools().find((t) => t.server === 's')!;
    const states: string[] = [];
    c.on('server-state', (e) => states.push(e.path));
    // A call that outlasts the idle timeout still completes on the same connection.
    const result = await c.callTool(tool.name, { ms: 800 });
    expect(result.isError).not.toBe(true);
    expect(states.filter((s) => s === 'live.dormant')).toEqual([]);
    await waitState(c, 's', 'dormant');
  });
});

describe('gates before any start', () => {
  it('a lazy project server with a cached listing registers nothing and starts nothing until approved', async () => {
    const ws = h.workspace();
    const config = stdioFixtureConfig('basic-server');
    await writeCache(ws, 'b', { ...config, type: 'stdio' }, ['echo']);
    ws.writeMcpJson({ b: { ...config, startup: 'lazy' } });
    const c = h.controller(ws, { listingCache: cacheDir(ws) });
    await c.start();
    expect(row(c, 'b').state).toBe('pending_approval');
    expect(c.tools()).toEqual([]);
    expect(c.pids()).toEqual([]);
    await c.approve('b');
    await waitState(c, 'b', 'dormant');
    expect(toolNames(c)).toEqual(['mcp__b__echo']);
    expect(c.pids()).toEqual([]);
    await c.reject('b');
    await waitState(c, 'b', 'rejected');
    expect(c.tools()).toEqual([]);
    const err = await rejection(c.callTool('mcp__b__echo', { text: 'x' }));
    expect(err.code).toBe('unknown_tool');
    expect(c.pids()).toEqual([]);
  });
});

describe('a warm start with eager servers', () => {
  it('registers every cached listing, and gives the host its turn, before the first server process is spawned (N=10)', async () => {
    const ws = h.workspace();
    const names = Array.from({ length: 10 }, (_, i) => `w${String(i).padStart(2, '0')}`);
    const config = (name: string) => stdioFixtureConfig('basic-server', { env: { TOOLS_VERSION: name } });
    for (const name of names) await writeCache(ws, name, config(name), ['echo', 'add']);
    const c = h.controller(ws, { listingCache: cacheDir(ws), startup: 'eager' });
    for (const name of names) await c.addRuntimeServer(name, config(name));
    // At each tools-changed: how many cached tools are visible, and how many server processes exist.
    const seen: Array<{ tools: number; processes: number }> = [];
    // How many processes exist when the host's next turn runs after every cached tool became visible.
    let atHostTurn: number | undefined;
    c.on('tools-changed', () => {
      const tools = c.tools().filter((t) => t.cached).length;
      seen.push({ tools, processes: c.pids().length });
      if (tools === names.length * 2 && atHostTurn === undefined) setImmediate(() => (atHostTurn ??= c.pids().length));
    });
    await c.start();
    const visible = seen.findIndex((s) => s.tools === names.length * 2);
    expect(visible).toBeGreaterThanOrEqual(0);
    // The event that made every cached tool visible, and each before it, came before any spawn.
    expect(seen.slice(0, visible + 1).map((s) => s.processes)).toEqual(Array.from({ length: visible + 1 }, () => 0));
    // The spawns begin on a later turn: the host gets its turn (answering a client, say) before they block the main thread.
    expect(atHostTurn).toBe(0);
    for (const name of names) expect(row(c, name).state).toBe('connected');
  });

  it('registers every cached listing before any server actor takes its first step', async () => {
    const ws = h.workspace();
    const names = ['w0', 'w1', 'w2', 'w3'];
    const config = (name: string) => stdioFixtureConfig('basic-server', { env: { TOOLS_VERSION: name } });
    for (const name of names) await writeCache(ws, name, config(name), ['echo']);
    const c = h.controller(ws, { listingCache: cacheDir(ws), startup: 'eager' });
    for (const name of names) await c.addRuntimeServer(name, config(name));
    const order: string[] = [];
    c.on('tools-changed', (e) => order.push(`tools ${e.server}`));
    c.on('server-state', (e) => order.push(`state ${e.name}`));
    await c.start();
    const firstStep = order.findIndex((x) => x.startsWith('state '));
    expect(firstStep).toBe(names.length);
    expect(order.slice(0, firstStep).sort()).toEqual(names.map((n) => `tools ${n}`));
    for (const name of names) expect(row(c, name).state).toBe('connected');
  });

  it('a cached listing that cannot be registered is reported once, by its server, which then connects', async () => {
    const ws = h.workspace();
    const config = stdioFixtureConfig('basic-server');
    await writeCache(ws, 'dup', config, ['echo', 'echo']);
    const debug: string[] = [];
    const c = h.controller(ws, { listingCache: cacheDir(ws), startup: 'eager', logger: { debug: (m: string) => debug.push(m) } });
    await c.addRuntimeServer('dup', config);
    const early: string[][] = [];
    c.on('tools-changed', () => early.push(toolNames(c)));
    await c.start();
    // The cached listing never showed: the first tools the host saw were the live listing's.
    expect(early[0]).toEqual(BASIC_TOOLS.map((t) => t.replace('mcp__b__', 'mcp__dup__')));
    expect(debug.filter((m) => m.startsWith('cached listing of "dup" not registered'))).toHaveLength(1);
    expect(row(c, 'dup').state).toBe('connected');
  });
});
