/**
 * The config entry is validated field by field (a warm start reads every
 * entry; docs/performance.md). That must give exactly what the object
 * schema gives: the same values, the same issues in the same order.
 */
import { describe, expect, it } from 'vitest';
import { parseEntryFields, schemaParts, validateServerEntry } from '../../src/config/schema.js';

/** The object schema over the whole entry, `null` members dropped first (as validateServerEntry always did). */
function whole(raw: Record<string, unknown>) {
  const cleaned = Object.fromEntries(Object.entries(raw).filter(([, v]) => v !== null));
  const r = schemaParts.entry.safeParse(cleaned, { jitless: true });
  return r.success
    ? { ok: true, data: r.data }
    : { ok: false, problems: r.error.issues.map((i) => ({ path: i.path.filter((p) => typeof p !== 'symbol'), message: i.message })) };
}

const entries: Record<string, unknown>[] = [
  { command: 'node', args: ['server.js', 8080, true], env: { PORT: 8080, DEBUG: false, NAME: 'x' } },
  { type: 'streamable-http', url: 'https://example.com/mcp', headers: { Authorization: 'Bearer t' }, timeout: 5000 },
  { httpUrl: 'https://example.com/mcp', oauth: { clientId: 'c', scopes: 'a b', callbackPort: 3334, issuer: 'https://auth.example.com' } },
  { command: 'x', disabled: null, cwd: null, unknownKey: { deep: [1, 2] }, description: 'a server' },
  { command: 'x', args: undefined, startup: 'lazy', idleTimeoutMs: 60_000, permissions: { allow: ['read_*'], deny: ['rm'] } },
  { command: 'x', includeTools: ['a'], excludeTools: ['b'], pinnedTools: ['a'], logLevel: 'debug', protocol: '2026-07-28', singleton: false },
  // Invalid in several fields at once: the order of the issues is the schema's.
  { timeout: -1, command: '', type: 'carrier-pigeon', args: [{}], env: { A: [1] }, logLevel: 'loud' },
  { url: 'https://x', oauth: { callbackPort: 70_000, grantType: 'password', issuer: 'ftp://x' }, startup: 'sometimes' },
  { command: 'x', timeout: 1e12, idleTimeoutMs: 0, startTimeoutMs: 'soon', headers: 'Authorization: x', trust: 'yes' },
  { command: 'x', permissions: { allow: 'all' }, auth: [], autoApprove: [1], fallbackToSse: 1 },
  {},
];

describe('config entry, field by field', () => {
  it.each(entries.map((e, i) => [i, e] as const))('entry %i: same values and issues as the object schema', (_i, entry) => {
    expect(parseEntryFields(entry)).toEqual(whole(entry));
  });

  it('keeps a member that is present but undefined, as the object schema does', () => {
    const r = parseEntryFields({ command: 'x', cwd: undefined });
    expect(r.ok && Object.hasOwn(r.data, 'cwd')).toBe(true);
  });

  it('still reports several problems with their field paths through validateServerEntry', () => {
    const r = validateServerEntry({ command: '', timeout: -1, env: { A: [1] } });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems.map((p) => p.path)).toEqual([['command'], ['env', 'A'], ['timeout']]);
  });
});
