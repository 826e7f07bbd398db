/**
 * The HTTP gateway's event store (`serve --http --resumable`): a client that
 * reconnects with `Last-Event-ID` gets what followed on that stream only,
 * and the store forgets the oldest events past its bound.
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { BoundedEventStore } from '../../src/gateway/event-store.js';

const note = (n: number): JSONRPCMessage => ({ jsonrpc: '2.0', method: 'notifications/message', params: { n } });

async function replay(store: BoundedEventStore, after: string): Promise<{ stream: string; got: unknown[] }> {
  const got: unknown[] = [];
  const stream = await store.replayEventsAfter(after, { send: async (_id, m) => void got.push((m as unknown as { params: { n: number } }).params.n) });
  return { stream, got };
}

describe('BoundedEventStore', () => {
  it('replays the events of the same stream after the given id', async () => {
    const store = new BoundedEventStore();
    const a1 = await store.storeEvent('_GET_stream', note(1));
    await store.storeEvent('other-stream', note(2));
    await store.storeEvent('_GET_stream', note(3));
    expect(await store.getStreamIdForEventId(a1)).toBe('_GET_stream');
    expect(await replay(store, a1)).toEqual({ stream: '_GET_stream', got: [3] });
  });

  it('keeps only the newest `limit` events', async () => {
    const store = new BoundedEventStore(2);
    const first = await store.storeEvent('s', note(1));
    const second = await store.storeEvent('s', note(2));
    await store.storeEvent('s', note(3));
    expect((await replay(store, first)).got).toEqual([]); // forgotten: nothing to replay from
    expect((await replay(store, second)).got).toEqual([3]);
  });
});
