/**
 * docs/cluster-principals.md: `oauth.perPrincipal` means something only to
 * `serve --http --cluster` with the cluster secret. Elsewhere serve says so
 * once, and a server that combines it with `singleton: true` is a config
 * error that says what to remove.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpServe } from './support.js';

describe('serve without --cluster: oauth.perPrincipal', () => {
  const gw = new HttpServe();

  beforeAll(async () => {
    gw.ws.writeUser({
      personal: { type: 'http', url: 'http://127.0.0.1:9/mcp', oauth: { perPrincipal: true } },
      both: { type: 'http', url: 'http://127.0.0.1:9/other', singleton: true, oauth: { perPrincipal: true } },
    });
    await gw.start();
  }, 120_000);

  afterAll(async () => {
    expect((await gw.stop()).left).toBe(0);
  });

  it('is noted once as meaning nothing here; with singleton: true it is a config error saying what to remove', async () => {
    const note = await gw.serve!.fromStderr(/(note: oauth\.perPrincipal \([^)]*\)[^\n]*)/, 'the perPrincipal note', 60_000);
    expect(note).toContain('(personal)');
    expect(note).toContain('applies to serve --http --cluster with $MCP_RECONCILER_CLUSTER_SECRET only');
    const error = await gw.serve!.fromStderr(/(config: [^\n]*perPrincipal[^\n]*)/, 'the config error', 60_000);
    expect(error).toContain('singleton: true');
    expect(error).toContain('remove one of the two');
    expect(gw.serve!.stderr.match(/note: oauth\.perPrincipal/g)).toHaveLength(1);
  }, 120_000);
});
