/**
 * A sign-in through a shared callback (docs/cluster-oauth.md), with the
 * callback played by the test: the sign-in URL is handed out only once the
 * callback says the sign-in is kept, because a browser that comes back
 * before that reaches a process that knows no such sign-in. The clustered
 * gateway's own test (test/cluster/oauth-callback.test.ts) runs the same
 * flow through Redis.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SharedCallback, SignInRecord, SignInRedeemer } from '../../src/auth/shared-callback.js';
import { startOAuthFixture, type OAuthFixture } from '../fixtures/oauth-fixture.js';
import { disposedAfterEach } from '../helpers/bare-controller.js';
import { tempDirEach } from '../helpers/temp-dir.js';
import { authTestController, reach } from './support.js';

describe('OAuth through a shared callback', () => {
  const tmp = tempDirEach('mcp-oauth-shared-');
  const controllers = disposedAfterEach();
  let fixture: OAuthFixture;
  beforeEach(async () => {
    fixture = await startOAuthFixture();
  });
  afterEach(async () => {
    await fixture.close();
  });

  it('hands out the sign-in URL only after the callback kept the sign-in, then connects with the code it redeemed', async () => {
    const events: string[] = [];
    let keep!: () => void;
    const kept = new Promise<void>((resolve) => (keep = resolve));
    let redeem: SignInRedeemer | undefined;
    let record: SignInRecord | undefined;
    let redeemed!: () => void;
    const callback: SharedCallback = {
      redirectUrl: 'https://gateway.example/oauth/callback',
      setRedeemer: (fn) => void (redeem = fn),
      expect: async (r, _signal, stored) => {
        record = r;
        events.push('expect');
        await kept; // storing it takes a while (a busy Redis)
        events.push('stored');
        stored?.();
        return new Promise<void>((resolve) => (redeemed = resolve));
      },
    };
    const c = authTestController(tmp.path, {
      oauth: { callback },
      onAuthorizationUrl: async (_server, url) => {
        events.push('url');
        // The browser: the fixture consents at once and sends it to the callback URL, whose
        // process redeems the code (here, the same controller's redeemer).
        const location = new URL((await fetch(url, { redirect: 'manual' })).headers.get('location')!);
        expect(`${location.origin}${location.pathname}`).toBe(callback.redirectUrl);
        expect(location.searchParams.get('state')).toBe(record!.state);
        await redeem!(record!, location.searchParams.get('code')!, location.searchParams.get('iss') ?? undefined);
        redeemed();
      },
    });
    controllers.push(c);
    await c.addRuntimeServer('remote', { type: 'http', url: fixture.url });
    const connected = reach(c, 'connected');
    const started = c.start();

    await waitUntil(() => events.includes('expect'));
    // A turn of the event loop later the URL has still not gone out.
    await new Promise((r) => setTimeout(r, 50));
    expect(events).toEqual(['expect']);

    keep();
    await started;
    await connected;
    expect(events).toEqual(['expect', 'stored', 'url']);
    expect(fixture.counts.authorization_code).toBe(1);
  });
});

/** Resolves once `ok()` holds, checking at every turn of the event loop. */
async function waitUntil(ok: () => boolean): Promise<void> {
  while (!ok()) await new Promise((r) => setImmediate(r));
}
