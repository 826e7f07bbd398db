/**
 * The shim reads a message's id and method from its bytes (src/daemon/envelope.ts)
 * instead of parsing and serializing it: what it finds must be what
 * `JSON.parse` finds at the top level, whatever the nesting, escapes and key
 * order, and a line it cannot read is left alone.
 */
import { describe, expect, it } from 'vitest';
import { readEnvelope, readSplitEnvelope } from '../../src/daemon/envelope.js';

function envelope(line: string) {
  const buf = Buffer.from(`xx${line}\n`);
  const env = readEnvelope(buf, 2, buf.length - 1);
  return env && { ...env, idText: env.id === undefined ? undefined : buf.toString('utf8', env.idStart, env.idEnd) };
}

describe('readEnvelope', () => {
  it('agrees with JSON.parse on the top level of requests, responses and notifications', () => {
    const messages: unknown[] = [
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x', arguments: { id: 9, method: 'no', text: 'a,"id":2}' } } },
      { method: 'tools/call', params: { id: 'inner', nested: [{ id: 3 }, [1, 2, { method: 'x' }]] }, jsonrpc: '2.0', id: 'abc' },
      { result: { content: [{ type: 'text', text: 'quote " backslash \\ ,"id":7} \u00e9\u4e2d' }] }, jsonrpc: '2.0', id: 42 },
      { result: { id: 5 }, jsonrpc: '2.0', id: 'q"uo\\te' },
      { jsonrpc: '2.0', id: 0, error: { code: -32601, message: 'nope', data: { id: 5 } } },
      { jsonrpc: '2.0', method: 'notifications/tools/list_changed' },
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 3 } },
      { jsonrpc: '2.0', id: -7, result: {} },
      { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'parse' } },
    ];
    for (const m of messages) {
      const parsed = m as { id?: unknown; method?: string; result?: unknown; error?: unknown };
      const env = envelope(JSON.stringify(m));
      expect(env, JSON.stringify(m)).toBeDefined();
      expect(env!.id).toBe(parsed.id === undefined || parsed.id === null ? undefined : JSON.stringify(parsed.id));
      if (env!.id !== undefined) expect(JSON.parse(env!.idText!)).toEqual(parsed.id);
      expect(env!.method).toBe(parsed.method);
      expect(env!.hasResult).toBe('result' in parsed);
      expect(env!.hasError).toBe('error' in parsed);
    }
  });

  it('accepts spaces and equivalent ids; refuses what is not one JSON object', () => {
    expect(envelope(' { "id" : "\\u0041" , "method" : "ping" } \r')).toMatchObject({ id: '"A"', method: 'ping' });
    for (const bad of ['', 'null', '[1]', '{"id":1', '{"id":1}}', '{"id":{"a":1}}', '{"id":1,"method":2}', '{"a" 1}', '{"result":{},"id":1}x']) {
      expect(envelope(bad), bad).toBeUndefined();
    }
  });

  it('reads an SDK-shaped long line from its first and last bytes only, and nothing else', () => {
    const split = (m: unknown) => {
      const b = Buffer.from(JSON.stringify(m));
      return readSplitEnvelope(b.subarray(0, 256), b.subarray(Math.max(0, b.length - 512)));
    };
    const big = 'y'.repeat(100_000);
    expect(split({ result: { content: [{ type: 'text', text: big, id: 3 }] }, jsonrpc: '2.0', id: 17 })).toMatchObject({ id: '17', hasResult: true });
    expect(split({ method: 'tools/call', params: { arguments: { text: big } }, jsonrpc: '2.0', id: 'k' })).toMatchObject({ id: '"k"', method: 'tools/call' });
    // Other shapes are for the whole line.
    expect(split({ jsonrpc: '2.0', id: 1, result: { text: big } })).toBeUndefined();
    expect(split({ method: 'notifications/message', params: { data: big }, jsonrpc: '2.0' })).toBeUndefined();
    expect(split({ result: { text: big, id: 2 }, jsonrpc: '2.0' })).toBeUndefined();
  });
});
