/**
 * A bounded in-memory event store for one HTTP session, so a client whose
 * SSE stream broke can reconnect with `Last-Event-ID` and receive what it
 * missed (streamable-HTTP resumability).
 */
import type { EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

interface StoredEvent {
  id: string;
  streamId: string;
  message: JSONRPCMessage;
}

/**
 * Keeps the last `limit` events across the session's streams; older ones
 * are forgotten (a client that was away that long lists again after the
 * list_changed it will get next).
 */
export class BoundedEventStore implements EventStore {
  private readonly events: StoredEvent[] = [];
  private seq = 0;

  constructor(private readonly limit = 1_000) {}

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    // The stream id is part of the event id, so a replay knows its stream without a lookup table.
    const id = `${streamId}_${++this.seq}`;
    this.events.push({ id, streamId, message });
    if (this.events.length > this.limit) this.events.splice(0, this.events.length - this.limit);
    return id;
  }

  async getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    const cut = eventId.lastIndexOf('_');
    return cut > 0 ? eventId.slice(0, cut) : undefined;
  }

  async replayEventsAfter(lastEventId: string, { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> }): Promise<string> {
    const streamId = (await this.getStreamIdForEventId(lastEventId)) ?? '';
    const at = this.events.findIndex((e) => e.id === lastEventId);
    if (at < 0) return streamId;
    for (const e of this.events.slice(at + 1)) {
      if (e.streamId === streamId) await send(e.id, e.message);
    }
    return streamId;
  }
}
