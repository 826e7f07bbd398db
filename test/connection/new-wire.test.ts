/**
 * Parity of the two wires (docs/protocol.md): everything the connection
 * layer carries works the same on the 2026-07-28 revision (auto against a
 * v2 server) and on the 2025 one (the same server pinned to 2025-11-25):
 * listings, calls, prompts, resources, progress, cancellation, an
 * elicitation (an input-required result on the new wire), list changes and
 * resource updates (`subscriptions/listen` on the new wire). Then the
 * controller runs a new-wire-only server like any other: calls, the
 * supervisor's restart after a crash, the listing cache.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { ProcessTracker } from '../../src/connection/processes.js';
import type { ProtocolChoice } from '../../machines/types.js';
import { desiredServer, stdioFixtureConfig } from '../helpers/fixtures.js';
import { waitFor } from '../helpers/processes.js';
import { Harness, waitState } from '../controller/support.js';
import { connectionCollector, eventLog, expectNoSurvivors, firstText } from './support.js';

const tracker = new ProcessTracker({ graceMs: 500 });
const { connect, closeAll } = connectionCollector();
const h = new Harness();
const options = { generation: 1, tracker, cwd: process.cwd(), timeoutMs: 20_000 };

afterAll(async () => {
  await closeAll();
  await h.cleanup();
  await expectNoSurvivors([tracker]);
});

const wires: { name: string; protocol: ProtocolChoice; era: 'modern' | 'legacy' }[] = [
  { name: 'new wire (auto)', protocol: 'auto', era: 'modern' },
  { name: '2025 wire (pinned)', protocol: '2025-11-25', era: 'legacy' },
];

describe.each(wires)('on the $name', ({ protocol, era }) => {
  async function rich(name: string, extra: Partial<Parameters<typeof connect>[1]> = {}) {
    const log = eventLog();
    const conn = await connect(desiredServer(name, { ...stdioFixtureConfig('v2-rich-server'), protocol }), { ...options, onEvent: log.onEvent, ...extra });
    expect(conn.protocol.era).toBe(era);
    return { conn, log };
  }

  it('lists tools, prompts and resources; calls, gets and reads', async () => {
    const { conn } = await rich(`list-${era}`);
    expect(conn.tools.map((t) => t.name).sort()).toEqual(['bump', 'confirm', 'echo', 'progress', 'slow']);
    expect(conn.prompts.map((p) => p.name)).toEqual(['greet']);
    expect(conn.resources.map((r) => r.uri).sort()).toEqual(['mem://counter', 'mem://note']);
    expect(firstText(await conn.callTool('echo', { text: era }))).toBe(`echo: ${era}`);
    const prompt = await conn.client.getPrompt({ name: 'greet', arguments: { name: 'Ada' } });
    expect(prompt.messages[0]?.content).toEqual({ type: 'text', text: 'Hello, Ada' });
    expect((await conn.readResource('mem://note')).contents[0]).toMatchObject({ uri: 'mem://note', text: 'a note' });
  });

  it('delivers progress, and cancels a call the caller aborts', async () => {
    const { conn } = await rich(`progress-${era}`);
    const seen: number[] = [];
    expect(firstText(await conn.callTool('progress', {}, { onprogress: (p) => seen.push(p.progress) }))).toBe('done');
    expect(seen).toEqual([1, 2, 3]);
    const abort = new AbortController();
    const call = conn.callTool('slow', { ms: 600_000 }, { signal: abort.signal });
    call.catch(() => {});
    // Aborted once the server has the call (its request is in flight).
    await new Promise((r) => setTimeout(r, 200));
    abort.abort(new Error('no longer wanted'));
    await expect(call).rejects.toThrow();
    await waitFor(() => conn.stderrTail().includes('slow was cancelled'), 'the server saw the cancellation', 20_000);
  });

  it('answers an elicitation through the host callback', async () => {
    const asked: string[] = [];
    const { conn } = await rich(`elicit-${era}`, {
      clientFeatures: {
        onElicitation: (_server, request) => {
          asked.push(request.message);
          return { action: 'accept', content: { ok: true } };
        },
      },
    });
    expect(firstText(await conn.callTool('confirm', {}))).toBe('confirmed');
    expect(asked).toEqual(['Proceed?']);
  });

  it('hears list changes and updates of a subscribed resource', async () => {
    const { conn, log } = await rich(`changes-${era}`);
    expect(conn.canSubscribe).toBe(true);
    await conn.subscribeResource('mem://counter');
    expect(firstText(await conn.callTool('bump', {}))).toBe('bumped 1');
    await waitFor(() => log.events.some((e) => e.type === 'tools_changed'), 'tools_changed', 20_000);
    await waitFor(() => log.events.some((e) => e.type === 'resource_updated' && e.uri === 'mem://counter'), 'resource_updated', 20_000);
    expect((await conn.listTools()).map((t) => t.name)).toContain('extra_1');
    await conn.unsubscribeResource('mem://counter');
  });
});

describe('the controller with a server that speaks only the new wire', () => {
  it('connects it, calls through it, and restarts it after a crash', async () => {
    const ws = h.workspace('mcp-newwire-');
    const c = h.controller(ws, { backoff: { initialMs: 50, maxMs: 200, attempts: 5 } });
    await c.addRuntimeServer('rich', stdioFixtureConfig('v2-rich-server', { env: { V2_LEGACY: 'reject' } }));
    await c.start();
    await waitState(c, 'rich', 'connected');
    const echo = c.tools().find((t) => t.name.endsWith('echo'));
    expect(echo).toBeDefined();
    expect(firstText(await c.callTool(echo!.name, { text: 'via controller' }))).toBe('echo: via controller');
    const [pid] = c.pids();
    process.kill(pid!, 'SIGKILL');
    await waitFor(() => c.pids().length === 1 && c.pids()[0] !== pid, 'a new process', 30_000);
    await waitState(c, 'rich', 'connected');
    expect(firstText(await c.callTool(echo!.name, { text: 'again' }))).toBe('echo: again');
  }, 90_000);
});
