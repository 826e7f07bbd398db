/**
 * docs/cluster.md, singletons: the lease machine is pure, and where a
 * singleton runs (and why a replica does not run it) is a projection of its
 * state.
 */
import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { leaseMachine, leaseViewOf } from '../../machines/lease.machine.js';

describe('leaseMachine', () => {
  const start = () => {
    const actor = createActor(leaseMachine, { input: { server: 's' } });
    actor.start();
    return { actor, view: () => leaseViewOf(actor.getSnapshot()) };
  };

  it('projects holding, remote (with the holder and its token), lost and unknown', () => {
    const { actor, view } = start();
    expect(view()).toMatchObject({ placement: 'none' });
    actor.send({ type: 'ACQUIRED', token: 7 });
    expect(view()).toEqual({ placement: 'here', token: 7 });
    actor.send({ type: 'LOST' });
    expect(view()).toMatchObject({ placement: 'none', reason: expect.stringMatching(/lost the singleton lease \(token 7\) and stopped the server/) });
    actor.send({ type: 'HELD_ELSEWHERE', replica: 'abc', token: 8, url: 'http://127.0.0.1:1/mcp' });
    expect(view()).toEqual({ placement: 'remote', replica: 'abc', token: 8, url: 'http://127.0.0.1:1/mcp', reason: 'runs on replica abc (singleton lease, token 8)' });
    actor.send({ type: 'UNREACHABLE', error: 'connection refused' });
    expect(view()).toMatchObject({ placement: 'none', reason: expect.stringMatching(/cannot be read \(connection refused\)/) });
    actor.send({ type: 'ACQUIRED', token: 9 });
    expect(view()).toEqual({ placement: 'here', token: 9 });
    // A Redis outage does not end a held lease by itself: only LOST does (the I/O sends it when the TTL ran out).
    actor.send({ type: 'UNREACHABLE', error: 'x' });
    expect(view()).toEqual({ placement: 'here', token: 9 });
    actor.send({ type: 'RELEASED' });
    expect(view()).toMatchObject({ placement: 'none' });
    actor.stop();
  });
});
