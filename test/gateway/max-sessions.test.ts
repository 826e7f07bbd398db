/**
 * `serve --http --max-sessions N`: the gateway's cap on open sessions
 * (default 64; docs/cluster.md's capacity model needs 2 000 a replica). At
 * the cap a new initialize ends the least recently used idle session, and
 * is answered 503 only when every session is in use. Usage errors say what
 * to change.
 */
import { describe, expect, it } from 'vitest';
import { runCliCaptured } from '../helpers/cli.js';
import { initialize, openSessions, openStream, ping, rawGateway } from './raw-session.js';

describe('serve --http --max-sessions 3', () => {
  const { gw, streams } = rawGateway(['--max-sessions', '3']);

  it('the fourth initialize ends the least recently used idle session; with every session in use it is 503 naming the cap', async () => {
    const ids = await openSessions(gw, 3, 'max-sessions-test');
    const fourth = await initialize(gw.url, gw.token, 'max-sessions-test');
    expect(fourth.status, fourth.text).toBe(200);
    expect(await ping(gw.url, gw.token, ids[0]!)).toBe(404);
    expect(gw.serve!.stderr).toMatch(new RegExp(`session ${ids[0]} closed \\(the least recently used idle session, ended to make room for a new one\\)`));

    // Every open session in use (its standalone SSE stream open): no room.
    for (const id of [ids[1]!, ids[2]!, fourth.sessionId!]) streams.push(await openStream(gw.url, gw.token, id));
    const refused = await initialize(gw.url, gw.token, 'max-sessions-test');
    expect(refused.status).toBe(503);
    expect(refused.text).toMatch(/the gateway has 3 sessions and every one is in use/);
  });

  it('usage errors: not a whole number from 1 to 100000, or without --http', async () => {
    const { ws } = gw;
    for (const bad of ['0', 'many', '100001', '2.5']) {
      const r = await runCliCaptured(['serve', '--http', '--max-sessions', bad, ...ws.args()], ws.env(), ws.root);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(/--max-sessions must be a whole number from 1 to 100000/);
    }
    const stdio = await runCliCaptured(['serve', '--stdio', '--max-sessions', '10', ...ws.args()], ws.env(), ws.root);
    expect(stdio.code, stdio.stderr).toBe(2);
    expect(stdio.stderr).toMatch(/--max-sessions applies to --http only/);
  });
});
