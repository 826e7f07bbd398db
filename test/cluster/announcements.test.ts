/**
 * docs/cluster-singletons.md, signed announcements: what a replica signs is
 * what another replica with the same secret verifies, bound to its Redis
 * key; unsigned, tampered, moved or other-secret announcements are told apart.
 */
import { describe, expect, it } from 'vitest';
import { announcementKey, announcementText, readAnnouncement } from '../../src/cluster/announcements.js';

const SECRET = 'announcements-test-secret-0123456789abcdef0123';
const KEY = 'mcpr:{ws}:replica:0123456789ab';
// Integer-like principal names and non-ASCII text: JSON.parse → JSON.stringify must give back the signed text.
const info = { id: '0123456789ab', url: 'http://10.0.0.5:7331/mcp', reachUrl: 'http://r1.internal:7331/mcp', sessions: 3, principals: { '42': 1, alice: 1, 'zoë': 1, '7': 0 }, at: '2026-12-01T00:00:00.000Z' };

describe('replica announcements signed with the cluster secret', () => {
  const key = announcementKey(SECRET);

  it('verifies its own signature and gives the announcement back without it', () => {
    const read = readAnnouncement<typeof info>(announcementText(info, KEY, key), KEY, key);
    expect(read).toEqual({ info, trust: 'verified' });
  });

  it('tells unsigned, tampered, moved and other-secret announcements apart', () => {
    expect(readAnnouncement(announcementText(info, KEY, undefined), KEY, key)?.trust).toBe('unsigned');
    const signed = announcementText(info, KEY, key);
    expect(readAnnouncement(signed.replace('r1.internal', 'evil.example'), KEY, key)?.trust).toBe('forged');
    expect(readAnnouncement(signed, 'mcpr:{ws}:replica:ffffffffffff', key)?.trust).toBe('forged');
    expect(readAnnouncement(signed, KEY, announcementKey(`${SECRET}-other`))?.trust).toBe('forged');
    expect(readAnnouncement(signed, KEY, undefined)?.trust).toBe('unchecked');
    expect(readAnnouncement('not json', KEY, key)).toBeUndefined();
  });

  it('needs a secret of 32 bytes or more, like the sealing key', () => {
    expect(() => announcementKey('short')).toThrow(/32/);
  });
});
