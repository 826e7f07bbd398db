import { describe, expect, it } from 'vitest';
import { agreesWithSchema, type SchemaVerdict } from '../helpers/schema-agreement.js';
import { parseJSONRPCMessage, ReadBuffer } from '@modelcontextprotocol/client';
import { MessageLines, plainMessage } from '../../src/connection/message-lines.js';
import { drainMessages } from '../../src/util/drain-messages.js';

/** What the SDK's `JSONRPCMessageSchema` makes of `value`. */
function bySchema(value: unknown): SchemaVerdict {
  try {
    return { ok: true, value: parseJSONRPCMessage(value) };
  } catch {
    return { ok: false };
  }
}

/** The fast check either declines, or agrees with the schema: valid, same keys, same order, same values. */
function expectAgreement(value: unknown): boolean {
  return agreesWithSchema(plainMessage(value), bySchema, value);
}

/** Every message or error a reader gives for `chunks`, in order. */
function readAll(reader: { append(chunk: Buffer): void; readMessage(): unknown }, chunks: Buffer[]): unknown[] {
  const out: unknown[] = [];
  for (const chunk of chunks) {
    reader.append(chunk);
    drainMessages(
      reader,
      (m) => out.push(m),
      (err) => out.push({ thrown: err.message }),
    );
  }
  return out;
}

/** `bytes` cut into pieces of `size` bytes (the last one shorter). */
function cut(bytes: Buffer, size: number): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(bytes.subarray(i, i + size));
  return out;
}

describe('plainMessage', () => {
  it('agrees with the schema on the messages a client reads most', () => {
    const accepted: unknown[] = [
      { jsonrpc: '2.0', id: 1, result: {} },
      { jsonrpc: '2.0', id: 'a', result: { tools: [{ name: 'echo', inputSchema: { type: 'object' } }], nextCursor: 'c' } },
      // The envelope comes out in the schema's key order, whatever the server's.
      JSON.parse('{"result":{"b":1,"a":2},"id":7,"jsonrpc":"2.0"}'),
      { jsonrpc: '2.0', id: 0, method: 'roots/list' },
      { jsonrpc: '2.0', id: -3, method: 'sampling/createMessage', params: { messages: [], maxTokens: 5 } },
      JSON.parse('{"method":"ping","id":"x","jsonrpc":"2.0"}'),
      { jsonrpc: '2.0', method: 'notifications/tools/list_changed' },
      { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 0.5 } },
      { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: { nested: { _meta: 1 } } } },
      // What a 2025-era server answers the `server/discover` probe.
      { jsonrpc: '2.0', id: 1, error: { code: -32601, message: 'Method not found' } },
      JSON.parse('{"error":{"data":{"why":[1]},"message":"bad","code":-32602},"id":"q","jsonrpc":"2.0"}'),
      // No id (a request the server could not read); members of the error the schema drops.
      { jsonrpc: '2.0', error: { code: -32700, message: 'Parse error', extra: true } },
      JSON.parse('{"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"m","__proto__":{"x":1}}}'),
    ];
    for (const value of accepted) expect(expectAgreement(value), JSON.stringify(value)).toBe(true);
  });

  it('declines what it does not cover, whatever the schema says of it', () => {
    const declined: unknown[] = [
      null,
      [],
      'x',
      { jsonrpc: '1.0', id: 1, result: {} },
      { jsonrpc: '2.0', id: 1, error: { code: 1.5, message: 'm' } },
      { jsonrpc: '2.0', id: 1, error: { code: 2 ** 60, message: 'm' } },
      { jsonrpc: '2.0', id: 1, error: { code: -1 } },
      { jsonrpc: '2.0', id: 1, error: { code: -1, message: 5 } },
      { jsonrpc: '2.0', id: 1, error: null },
      { jsonrpc: '2.0', id: 1, error: [] },
      { jsonrpc: '2.0', id: null, error: { code: -1, message: 'm' } },
      { jsonrpc: '2.0', id: 1, error: { code: -1, message: 'm' }, result: {} },
      { jsonrpc: '2.0', id: 1, error: { code: -1, message: 'm' }, method: 'm' },
      { jsonrpc: '2.0', id: 1, error: { code: -1, message: 'm' }, extra: 1 },
      { jsonrpc: '2.0', id: 1, result: { _meta: { 'io.modelcontextprotocol/serverInfo': 5 } } }, // the schema drops a bad serverInfo
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x', _meta: { progressToken: 1 } } },
      { jsonrpc: '2.0', id: 1, result: {}, extra: true },
      { jsonrpc: '2.0', id: 1, result: [] },
      { jsonrpc: '2.0', id: 1, result: null },
      { jsonrpc: '2.0', id: null, result: {} },
      { jsonrpc: '2.0', id: 1.5, result: {} },
      { jsonrpc: '2.0', id: 2 ** 60, method: 'm' },
      { jsonrpc: '2.0', id: 1, method: 'm', params: [] },
      { jsonrpc: '2.0', method: 'm', params: null },
      { jsonrpc: '2.0', method: 'm', params: undefined },
      { jsonrpc: '2.0', id: 1, method: 'm', result: {} },
      { jsonrpc: '2.0', method: 5 },
      JSON.parse('{"jsonrpc":"2.0","id":1,"result":{"__proto__":{"x":1}}}'),
      JSON.parse('{"jsonrpc":"2.0","method":"m","params":{"__proto__":1}}'),
      Object.assign(Object.create(null) as object, { jsonrpc: '2.0', id: 1, result: {} }),
      { jsonrpc: '2.0', id: 1, result: new Date(0) },
    ];
    for (const value of declined) expect(plainMessage(value), JSON.stringify(value) ?? String(value)).toBeUndefined();
  });

  it('never accepts what the schema refuses, nor differs from it, over generated messages', () => {
    // A small deterministic generator (no dependency): valid and invalid shapes at every level, as JSON gives them.
    let seed = 4242;
    const rnd = (n: number): number => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 16) % n;
    const atoms = [0, -1, 1.5, 2 ** 53, 'x', '', true, false, null];
    const value = (depth: number): unknown => {
      const k = rnd(depth > 2 ? 1 : 4);
      if (k === 0) return atoms[rnd(atoms.length)];
      if (k === 1) return Array.from({ length: rnd(3) }, () => value(depth + 1));
      const o: Record<string, unknown> = {};
      for (let i = rnd(4); i > 0; i--) o[['a', '_meta', 'progressToken', 'tools', 'io.modelcontextprotocol/serverInfo'][rnd(5)]!] = value(depth + 1);
      return o;
    };
    const maybe = (v: () => unknown): unknown => (rnd(6) === 0 ? value(0) : v());
    let accepted = 0;
    for (let i = 0; i < 4000; i++) {
      const m: Record<string, unknown> = {};
      const keys = ['jsonrpc', 'id', 'method', 'params', 'result', 'error', 'extra'].sort(() => rnd(3) - 1);
      const kind = rnd(4);
      for (const key of keys) {
        if (key === 'jsonrpc' && rnd(12) > 0) m.jsonrpc = maybe(() => '2.0');
        if (key === 'id' && (kind === 0 || kind === 2 ? rnd(8) > 0 : rnd(8) === 0)) m.id = maybe(() => (rnd(2) ? i : `r${i}`));
        if (key === 'method' && (kind === 0 || kind === 1 ? rnd(8) > 0 : rnd(8) === 0)) m.method = maybe(() => 'tools/list');
        if (key === 'params' && rnd(2)) m.params = maybe(() => (rnd(3) ? { cursor: 'c' } : { _meta: value(1) }));
        if (key === 'result' && (kind === 2 ? rnd(8) > 0 : rnd(10) === 0)) m.result = maybe(() => (rnd(3) ? { tools: [] } : { _meta: value(1), x: 1 }));
        if (key === 'error' && (kind === 3 ? rnd(4) > 0 : rnd(12) === 0))
          m.error = maybe(() => {
            const e: Record<string, unknown> = { code: rnd(4) ? -32601 : atoms[rnd(atoms.length)], message: rnd(6) ? 'm' : value(1) };
            if (rnd(3) === 0) e.data = value(1);
            if (rnd(5) === 0) e.extra = value(1);
            return e;
          });
        if (key === 'extra' && rnd(12) === 0) m.extra = value(1);
      }
      if (expectAgreement(JSON.parse(JSON.stringify(m)))) accepted++;
    }
    // The generator reaches both sides of the fast check.
    expect(accepted).toBeGreaterThan(400);
    expect(accepted).toBeLessThan(4000);
  });
});

describe('MessageLines', () => {
  const big = { jsonrpc: '2.0', id: 3, result: { tools: Array.from({ length: 40 }, (_, i) => ({ name: `t${i}`, description: 'é'.repeat(50), inputSchema: { type: 'object' } })) } };
  const stream = Buffer.from(
    [
      JSON.stringify({ jsonrpc: '2.0', id: 1, result: {} }),
      'a server logging to stdout',
      JSON.stringify({ jsonrpc: '2.0', id: 2, error: { code: -32601, message: 'Method not found' } }) + '\r',
      JSON.stringify(big),
      JSON.stringify({ jsonrpc: '2.0', id: 4, result: 'not an object' }),
      '',
      JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 1, _meta: {} } }),
      JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'ping' }),
      '{"jsonrpc":"2.0","id":6,"res', // a partial line stays buffered
    ].join('\n'),
  );

  it("reads what the SDK's ReadBuffer reads, in order, however the stream is cut", () => {
    const expected = readAll(new ReadBuffer(), [stream]);
    // 5 messages and one error, for the line that is JSON but not JSON-RPC; the log line and the empty one are skipped.
    expect(expected.filter((m) => !(m as { thrown?: string }).thrown)).toHaveLength(5);
    expect(expected.filter((m) => (m as { thrown?: string }).thrown)).toHaveLength(1);
    for (const size of [1, 2, 3, 7, 64, 1000, 4096, stream.length]) {
      expect(readAll(new MessageLines(), cut(stream, size)), `chunks of ${size} bytes`).toStrictEqual(readAll(new ReadBuffer(), cut(stream, size)));
    }
  });

  it('keeps a partial line until its newline arrives, and drops it on clear()', () => {
    const reader = new MessageLines();
    reader.append(Buffer.from('{"jsonrpc":"2.0","id":1,'));
    reader.append(Buffer.from('"result":{}}'));
    expect(reader.readMessage()).toBeNull();
    reader.append(Buffer.from('\n{"jsonrpc":"2.0","id":2,'));
    expect(reader.readMessage()).toStrictEqual({ jsonrpc: '2.0', id: 1, result: {} });
    expect(reader.readMessage()).toBeNull();
    reader.clear();
    reader.append(Buffer.from('{"jsonrpc":"2.0","id":3,"result":{}}\n'));
    expect(reader.readMessage()).toStrictEqual({ jsonrpc: '2.0', id: 3, result: {} });
  });

  it("refuses to buffer past its limit with the SDK's message, and starts empty after", () => {
    const reader = new MessageLines(40);
    reader.append(Buffer.from('{"jsonrpc":'));
    expect(() => reader.append(Buffer.from('"2.0","id":1,"result":{"a":"bc"}}'))).toThrow('ReadBuffer exceeded maximum size of 40 bytes');
    // What was buffered before the error is gone: the next line is read on its own.
    reader.append(Buffer.from('{"jsonrpc":"2.0",'));
    reader.append(Buffer.from('"id":1,"result":{}}\n'));
    expect(reader.readMessage()).toStrictEqual({ jsonrpc: '2.0', id: 1, result: {} });
    const roomy = new MessageLines(16);
    roomy.append(Buffer.from('1234567890\n'));
    // A JSON number is no message: the schema's error, and the line is consumed.
    expect(() => roomy.readMessage()).toThrow();
    expect(roomy.readMessage()).toBeNull();
    // The consumed line freed its bytes.
    expect(() => roomy.append(Buffer.from('1234567890'))).not.toThrow();
  });
});
