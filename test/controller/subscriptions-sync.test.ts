/**
 * The subscription count a server actor holds (SPEC §13) is synchronised on
 * each connection, and only when it differs from the connection's count: a
 * start of N servers without subscriptions sends the actors no SUBSCRIPTIONS
 * event at all, and a reconnect of a subscribed server keeps the count it
 * had. Real fixture servers; events are counted through the actor system's
 * inspection, never timed.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { stdioFixtureConfig } from '../helpers/fixtures.js';
import { Harness, row, waitNewGeneration } from './support.js';

describe('controller: SUBSCRIPTIONS events', () => {
  const h = new Harness();
  afterAll(() => h.cleanup());

  it('none at a start without subscriptions; one per change of the count; none again when a subscribed server connects anew', async () => {
    const ws = h.workspace();
    const c = h.controller(ws, { listingCache: false });
    const seen: Array<{ server: string; count: number }> = [];
    c.actor.system.inspect((e) => {
      if (e.type === '@xstate.event' && e.event.type === 'SUBSCRIPTIONS') seen.push({ server: (e.actorRef as unknown as { id: string }).id, count: (e.event as unknown as { count: number }).count });
    });
    for (const name of ['a', 'b', 'c']) await c.addRuntimeServer(name, stdioFixtureConfig('resource-server'));
    await c.start();
    expect(c.status().map((s) => s.state)).toEqual(['connected', 'connected', 'connected']);
    expect(seen).toEqual([]);

    const unsubscribe = await c.subscribeResource('note://static/hello', () => {}, { servers: ['b'] });
    expect(seen).toEqual([{ server: 'b', count: 1 }]);

    // A new connection of "b" after its process died: its machine already holds 1, which is what the connection counts.
    const { generation, pid } = row(c, 'b');
    process.kill(pid!, 'SIGKILL');
    await waitNewGeneration(c, 'b', generation);
    expect(row(c, 'b').state).toBe('connected');
    expect(seen).toEqual([{ server: 'b', count: 1 }]);
    expect(c.actor.getSnapshot().context.servers.b?.getSnapshot().context.subscriptions).toBe(1);

    await unsubscribe();
    expect(seen).toEqual([
      { server: 'b', count: 1 },
      { server: 'b', count: 0 },
    ]);
  });
});
