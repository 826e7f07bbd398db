import { describe, expect, it } from 'vitest';
import {
  holdsTools,
  isLive,
  publicStatusOf,
  publicStatusOfState,
  reasonOf,
  reasonOfState,
  SERVER_STATE_NAMES,
  stateNameOf,
} from '../../machines/reason.js';

describe('state projections', () => {
  it('flattens the machine’s state values to the 14 public names', () => {
    expect(stateNameOf({ value: 'pending_approval' })).toBe('pending_approval');
    expect(stateNameOf({ value: 'removed' })).toBe('removed');
    expect(stateNameOf({ value: { live: 'connecting' } })).toBe('connecting');
    expect(stateNameOf({ value: { live: 'connected' } })).toBe('connected');
    expect(stateNameOf({ value: { live: { connected: 'busy' } } })).toBe('connected');
    expect(stateNameOf({ value: { live: 'dormant' } })).toBe('dormant');
    expect(stateNameOf({ value: { live: { reconnecting: 'waiting' } } })).toBe('reconnecting');
    expect(stateNameOf({ value: { live: { reconnecting: 'attempting' } } })).toBe('reconnecting');
    expect(() => stateNameOf({ value: 'admission' })).toThrow(/not a server machine state/);
    expect(() => stateNameOf({ value: { live: 'elsewhere' } })).toThrow(/not a server machine state/);
    expect(SERVER_STATE_NAMES).toHaveLength(14);
  });

  it('maps each state to its reason and public status (SPEC §7)', () => {
    const table = Object.fromEntries(SERVER_STATE_NAMES.map((s) => [s, [reasonOfState(s), publicStatusOfState(s)]]));
    expect(table).toEqual({
      pending_approval: ['pending_approval', 'pending'],
      rejected: ['rejected', 'disabled'],
      excluded: ['excluded', 'disabled'],
      not_allowed: ['not_allowed', 'disabled'],
      disabled: ['disabled', 'disabled'],
      untrusted: ['untrusted', 'disabled'],
      connecting: [undefined, 'connecting'],
      connected: [undefined, 'connected'],
      dormant: [undefined, 'dormant'],
      fingerprint_changed: ['reconnecting', 'connecting'],
      reconnecting: ['reconnecting', 'connecting'],
      needs_auth: ['needs_auth', 'needs-auth'],
      failed: ['failed', 'failed'],
      removed: ['removed', 'disabled'],
    });
    expect(reasonOf({ value: { live: { reconnecting: 'waiting' } } })).toBe('reconnecting');
    expect(publicStatusOf({ value: { live: 'connected' } })).toBe('connected');
  });

  it('knows which states are live and which may hold tools', () => {
    expect(SERVER_STATE_NAMES.filter((s) => holdsTools(s))).toEqual(['connecting', 'connected', 'dormant', 'reconnecting']);
    // dormant keeps its tools but has no process or client
    expect(isLive({ value: { live: 'dormant' } })).toBe(false);
    expect(isLive({ value: { live: 'connecting' } })).toBe(true);
    expect(isLive({ value: { live: { reconnecting: 'waiting' } } })).toBe(true);
    expect(isLive({ value: 'fingerprint_changed' })).toBe(false);
    expect(isLive({ value: 'failed' })).toBe(false);
  });
});
