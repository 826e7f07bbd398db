/**
 * `"oauth": { "perPrincipal": true }` (docs/cluster-principals.md): kept by
 * the validator, part of the fingerprint (a principal's connection is another
 * connection), and refused with `singleton: true` or on a stdio server.
 */
import { describe, expect, it } from 'vitest';
import { validateServerEntry } from '../../src/config/schema.js';
import { approvalHash, fingerprint } from '../../src/config/identity.js';

describe('oauth.perPrincipal', () => {
  it('is kept, and changes the fingerprint and the approval hash', () => {
    const plain = validateServerEntry({ url: 'https://mcp.example.com/mcp' });
    const per = validateServerEntry({ url: 'https://mcp.example.com/mcp', oauth: { perPrincipal: true } });
    expect(plain.ok && per.ok).toBe(true);
    if (!plain.ok || !per.ok) return;
    expect(per.config.oauth?.perPrincipal).toBe(true);
    expect(fingerprint(per.config)).not.toBe(fingerprint(plain.config));
    expect(approvalHash(per.config)).not.toBe(approvalHash(plain.config));
  });

  it('is refused together with singleton: true, saying why and what to do', () => {
    const r = validateServerEntry({ url: 'https://mcp.example.com/mcp', singleton: true, oauth: { perPrincipal: true } });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems[0]!.path).toEqual(['oauth', 'perPrincipal']);
    expect(r.problems[0]!.message).toContain('singleton: true');
    expect(r.problems[0]!.message).toContain('remove one of the two');
  });

  it('is refused on a stdio server', () => {
    const r = validateServerEntry({ command: 'node', oauth: { perPrincipal: true } });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems[0]!.message).toContain('remote (http or sse) servers only');
  });

  it('is not a boolean: refused', () => {
    expect(validateServerEntry({ url: 'https://mcp.example.com/mcp', oauth: { perPrincipal: 'yes' } }).ok).toBe(false);
  });
});
