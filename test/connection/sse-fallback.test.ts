import { afterAll, describe, expect, it } from 'vitest';
import { openConnection, type ConnectOptions } from '../../src/connection/connect.js';
import { ProcessTracker } from '../../src/connection/processes.js';
import { startHttpFixture, type HttpFixture } from '../fixtures/http-fixture.js';
import { desiredServer } from '../helpers/fixtures.js';
import { connectionCollector, expectNoSurvivors } from './support.js';

// VS Code and Cursor connect a `type: http` server with streamable HTTP and,
// when the first request gets a 4xx, over SSE. The fixture serves SSE on /sse
// and answers a POST there with 404, like an SSE-only server.
const tracker = new ProcessTracker({ graceMs: 500 });
const { connect, closeAll } = connectionCollector();
let fixture: HttpFixture;

function options(): ConnectOptions {
  return { generation: 1, tracker, cwd: process.cwd(), timeoutMs: 10_000 };
}


afterAll(async () => {
  await closeAll();
  await fixture?.close();
  await expectNoSurvivors([tracker]);
});

describe('http → SSE fallback (fallbackToSse)', () => {
  it('an SSE-only server answering 404 to the streamable POST is connected over SSE and says so', async () => {
    fixture = await startHttpFixture();
    const conn = await connect(desiredServer('legacy', { type: 'http', url: fixture.sseUrl, fallbackToSse: true }), options());
    expect(conn.transportType).toBe('sse');
    expect(conn.tools.length).toBeGreaterThan(0);
    expect((await conn.callTool('add', { a: 2, b: 3 })).structuredContent).toEqual({ sum: 5 });
  });

  it('a streamable-HTTP server stays on http', async () => {
    const conn = await connect(desiredServer('modern', { type: 'http', url: fixture.url, fallbackToSse: true }), options());
    expect(conn.transportType).toBe('http');
  });

  it('without the flag the 404 is a connect failure, not a silent switch', async () => {
    await expect(openConnection(desiredServer('strict', { type: 'http', url: fixture.sseUrl }), options())).rejects.toThrow(/failed to connect: (Streamable HTTP error|Error POSTing to endpoint)/);
  });
});
