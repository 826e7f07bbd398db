/**
 * HTTP sessions a client abandons (no DELETE) are reclaimed: after the
 * session idle timeout (no request and no open stream) the session ends,
 * its id is answered 404 and its servers are released, so their own idle
 * timeout stops them. At the session cap a new initialize ends the least
 * recently used idle session instead of being refused; only when every
 * session has a request or stream open is it answered 503, saying what to
 * do. Sessions are driven with raw HTTP where an SDK client would hide
 * what is sent (streams, missing DELETEs).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pidAlive, waitFor } from '../helpers/processes.js';
import { initialize, openSessions, openStream, ping, rawGateway } from './raw-session.js';
import { connectHttp, HttpServe, textOf } from './support.js';

describe('serve --http --session-idle-timeout: an abandoned session ends and releases its servers', () => {
  const gw = new HttpServe();
  const { ws } = gw;

  beforeAll(async () => {
    ws.writeUser({ a: ws.server('1'), b: ws.server('1') });
    // Short, but longer than a busy machine takes between one request of a client and its next.
    await gw.start(['--idle-timeout', '200', '--session-idle-timeout', '2000']);
  });

  afterAll(async () => {
    const { code, stderr, left } = await gw.stop();
    expect(left, 'processes left behind').toBe(0);
    expect(code, stderr).toBe(0);
  });

  it('a client that leaves without DELETE: its session ends, its id gets 404, and the server it held goes dormant', async () => {
    const s = await connectHttp(gw.url, gw.token, '?servers=a');
    const pid = Number(textOf(await s.client.callTool({ name: 'mcp__a__pid' })));
    expect(pidAlive(pid)).toBe(true);
    const id = s.transport.sessionId!;
    // A session whose client keeps its stream open (the SDK client's GET) is in use, however long.
    const kept = await connectHttp(gw.url, gw.token, '?servers=b');
    const keptPid = Number(textOf(await kept.client.callTool({ name: 'mcp__b__pid' })));

    // Gone without a word: the SDK client's close() ends its streams and sends no DELETE.
    await s.client.close();
    await gw.serve!.fromStderr(new RegExp(`session ${id} closed (\\(unused for the session idle timeout)`), 'the session to end');
    await waitFor(() => !pidAlive(pid), 'a to stop once its last session ended');
    expect(await ping(gw.url, gw.token, id)).toBe(404);

    // The session with its stream open is still there, and so is its server.
    expect(pidAlive(keptPid)).toBe(true);
    expect(await kept.client.ping()).toEqual({});
    await kept.transport.terminateSession();
    await kept.client.close();
  });

  it('refuses --session-idle-timeout without --http, and a value that is not a duration', async () => {
    const { runCliCaptured } = await import('../helpers/cli.js');
    const stdio = await runCliCaptured(['serve', '--stdio', '--session-idle-timeout', '1000', ...ws.args()], ws.env(), ws.root);
    expect(stdio.code).toBe(2);
    expect(stdio.stderr).toMatch(/--session-idle-timeout applies to --http only/);
    const bad = await runCliCaptured(['serve', '--http', '--session-idle-timeout', 'soon', ...ws.args()], ws.env(), ws.root);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--session-idle-timeout must be a whole number of milliseconds/);
  });
});

describe('serve --http at its 64-session cap', () => {
  // The default session idle timeout (30 min): nothing here expires, room comes from eviction only.
  const { gw, streams } = rawGateway();

  it('65 and more clients that never said goodbye: each new initialize succeeds by ending the least recently used idle session', async () => {
    const ids = await openSessions(gw, 64);
    // Used lately: the second session is no longer the least recently used one.
    expect(await ping(gw.url, gw.token, ids[1]!)).toBe(200);

    const next = await initialize(gw.url, gw.token);
    expect(next.status, next.text).toBe(200);
    expect(await ping(gw.url, gw.token, ids[0]!)).toBe(404);
    expect(await ping(gw.url, gw.token, ids[1]!)).toBe(200);
    const after = await initialize(gw.url, gw.token);
    expect(after.status, after.text).toBe(200);
    expect(await ping(gw.url, gw.token, ids[2]!)).toBe(404);
    expect(await ping(gw.url, gw.token, ids[1]!)).toBe(200);
    expect(await ping(gw.url, gw.token, next.sessionId!)).toBe(200);
    expect(gw.serve!.stderr).toMatch(new RegExp(`session ${ids[0]} closed \\(the least recently used idle session, ended to make room for a new one\\)`));
  });

  it('when every session has a stream open the initialize is refused, saying what to do; once one stream ends, its session makes room', async () => {
    // The 64 open sessions: the first test's, minus the evicted ones.
    const open = (await Promise.all(
      [...gw.serve!.stderr.matchAll(/session ([0-9a-f-]{36}) opened/g)].map(async ([, id]) => ((await ping(gw.url, gw.token, id!)) === 200 ? id! : undefined)),
    )).filter((id): id is string => id !== undefined);
    expect(open).toHaveLength(64);
    for (const id of open) streams.push(await openStream(gw.url, gw.token, id));

    const refused = await initialize(gw.url, gw.token);
    expect(refused.status).toBe(503);
    expect(refused.text).toMatch(/the gateway has 64 sessions and every one is in use \(a request or stream open\); end a session you no longer need \(HTTP DELETE with its Mcp-Session-Id\)/);

    streams[10]!.abort();
    let admitted: Awaited<ReturnType<typeof initialize>> | undefined;
    await waitFor(async () => (admitted = await initialize(gw.url, gw.token)).status === 200, 'an initialize to be admitted once a stream ended');
    expect(admitted!.sessionId).toBeTruthy();
    expect(await ping(gw.url, gw.token, open[10]!)).toBe(404);
    expect(await ping(gw.url, gw.token, open[11]!)).toBe(200);
  });
});
