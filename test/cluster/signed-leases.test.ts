/**
 * Leases that cannot be forged (docs/cluster-gaps.md): with the cluster
 * secret a singleton's lease value carries an HMAC; a replica treats a
 * value that does not verify as free and takes it over in the acquire
 * script, logging it once, so whoever can write to Redis cannot hold a
 * singleton hostage with a made-up holder. The fencing token still grows.
 * Real redis-server, real gateway processes, the lease shortened to 2 s.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/processes.js';
import { textOf, type HttpConnected } from '../gateway/support.js';
import { ClusterFixture, type Replica } from './support.js';

const LEASE_MS = 2_000;
const env = { MCP_RECONCILER_LEASE_MS: String(LEASE_MS), MCP_RECONCILER_CLUSTER_SECRET: 'b'.repeat(64) };

const pidVia = async (s: HttpConnected): Promise<number> => {
  const r = await s.client.callTool({ name: 'mcp__s__pid', arguments: {} });
  expect(r.isError, textOf(r)).toBeFalsy();
  return Number(textOf(r));
};

/** RESP bulk string reply → its text. */
const bulk = (reply: string): string => reply.split('\r\n')[1] ?? '';

interface ClusterStatus {
  replicas: { id: string; pid: number }[];
  leases: { server: string; replica: string; token: number; pid?: number }[];
}

describe('serve --cluster with the secret: a forged singleton lease counts as free', () => {
  const fx = new ClusterFixture();
  let a: Replica;
  let leaseKey = '';

  beforeAll(async () => {
    await fx.startRedis();
    fx.ws.writeUser({ s: { ...fx.ws.server('1'), singleton: true } });
    leaseKey = `mcpr:{${fx.workspaceId}}:lease:s`;
  });

  afterAll(async () => {
    expect(await fx.stop()).toBe(0);
  });

  it('a lease written by someone without the secret (no expiry) does not keep the singleton from running; the replica takes it over with a signed value', async () => {
    // The hostage: a holder that never expires and no replica announces.
    await fx.redis.command(['SET', leaseKey, 'fa11fa11fa11:7']);
    await fx.redis.command(['SET', `mcpr:{${fx.workspaceId}}:fence:s`, '7']);
    a = await fx.replica('a', [], env);
    const onA = await a.open('?servers=s');
    const pid = await pidVia(onA);
    expect(fx.ws.serverPids()).toEqual([pid]);
    expect(a.serve.stderr).toMatch(/singleton "s": the lease in Redis \("fa11fa11fa11:7"\) is not signed \(forged, or a replica without \$MCP_RECONCILER_CLUSTER_SECRET or with another one\): it counts as free, and this replica took it over/);
    const id = (await fx.statusJson<ClusterStatus>()).replicas.find((r) => r.pid === a.serve.child.pid)!.id;
    // Signed now: `<replica>:<token>:<HMAC>`, the token past the counter's 7.
    expect(bulk(await fx.redis.command(['GET', leaseKey]))).toMatch(new RegExp(`^${id}:8:[A-Za-z0-9_-]{43}$`));
    const st = await fx.statusJson<ClusterStatus>();
    expect(st.leases.find((l) => l.server === 's')).toMatchObject({ replica: id, token: 8, pid: a.serve.child.pid });
  }, 240_000);

  it('a holder whose lease is overwritten by a badly signed value loses it, stops the server, and takes it back under a higher token', async () => {
    const onA = await a.open('?servers=s');
    const before = await pidVia(onA);
    const forged = `fa11fa11fa11:99:${'A'.repeat(43)}`;
    await fx.redis.command(['SET', leaseKey, forged]);
    await a.serve.fromStderr(/(singleton "s": lease lost \(token 8: another replica holds it now\); stopped it here)/, "A's lost lease");
    await a.serve.fromStderr(/(singleton "s": the lease in Redis \("fa11fa11fa11:99:A+"\) is not signed with this cluster's secret[^\n]*took it over)/, 'the takeover');
    const after = await pidVia(onA);
    expect(after).not.toBe(before);
    await waitFor(() => fx.ws.serverPids().length === 1, 'one server process', 60_000);
    expect(fx.ws.serverPids()).toEqual([after]);
    // The counter only grows: the new token is past 8, whatever the forged value claimed.
    const value = bulk(await fx.redis.command(['GET', leaseKey]));
    const token = Number(value.split(':')[1]);
    expect(token).toBeGreaterThan(8);
    expect(token).toBeLessThan(99);
  }, 240_000);
});
