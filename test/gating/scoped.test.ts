/**
 * Gating only narrows as trust drops (SPEC §2.3, docs/library.md): settings from a
 * checked-in project or workspace file may add exclusions and narrow
 * `allowed`, never loosen what the user or CLI sources set; in an untrusted
 * folder they change nothing. Checked by example and by a seeded property
 * test over random scope combinations.
 */
import { describe, expect, it } from 'vitest';
import { GATED_SCOPES, type ApprovalDecision, type DesiredMap, type Scope } from '../../machines/types.js';
import { assemble } from '../../src/config/assemble.js';
import type { LoadedSource, ScopedSettings, SourceSettings } from '../../src/config/load.js';
import { computeGating, mergeGatingSettings } from '../../src/gating/compute.js';
import { desiredOf, entry } from './entries.js';

const at = (scope: Scope, settings: SourceSettings, source = `/${scope}.json`): ScopedSettings => ({ scope, source, settings });

describe('mergeGatingSettings', () => {
  it('a project file’s `excluded: []` does not un-exclude a user-excluded server, trusted or not', () => {
    const scoped = [at('user', { excluded: ['a'] }), at('project', { excluded: [] })];
    expect(mergeGatingSettings(scoped, true)).toEqual({ excluded: ['a'] });
    expect(mergeGatingSettings(scoped, false)).toEqual({ excluded: ['a'] });
  });

  it('excluded is the union over every scope; a trusted project file can add to it', () => {
    const scoped = [at('user', { excluded: ['u'] }), at('project', { excluded: ['p'] }), at('workspace', { excluded: ['w', 'u'] }), at('cli', { excluded: ['c'] })];
    expect(mergeGatingSettings(scoped, true).excluded).toEqual(['c', 'p', 'u', 'w']);
  });

  it('a gated `allowed` only intersects the user/CLI lists; absent everywhere allows all', () => {
    expect(mergeGatingSettings([at('user', { allowed: ['a', 'b'] }), at('project', { allowed: ['b', 'c'] })], true).allowed).toEqual(['b']);
    // narrowing "allow all" is fine
    expect(mergeGatingSettings([at('workspace', { allowed: ['x'] })], true).allowed).toEqual(['x']);
    expect(mergeGatingSettings([at('user', { excluded: [] })], true)).toEqual({ excluded: [] });
  });

  it('`allowed: []` denies all wherever it appears', () => {
    for (const scope of ['user', 'project', 'workspace', 'cli'] as const) {
      const scoped = [at('user', { allowed: ['a'] }), at(scope, { allowed: [] }, '/empty.json'), at('cli', { allowed: ['a'] })];
      expect(mergeGatingSettings(scoped, true).allowed).toEqual([]);
    }
  });

  it('an untrusted folder’s project and workspace files change no gating at all', () => {
    const scoped = [at('user', { allowed: ['a', 'b'] }), at('project', { allowed: [], excluded: ['b'] }), at('workspace', { allowed: ['a'] })];
    expect(mergeGatingSettings(scoped, false)).toEqual({ allowed: ['a', 'b'], excluded: [] });
  });

  it('end to end from assemble(): the project’s `excluded: []` leaves the user’s server excluded', () => {
    const loaded = (scope: Scope, path: string, settings: SourceSettings): LoadedSource => ({
      source: { scope, path },
      exists: true,
      servers: {},
      settings,
      issues: [],
      fatal: false,
    });
    const { scopedSettings } = assemble([loaded('user', '/home/u/settings.json', { excluded: ['a'] }), loaded('project', '/ws/.mcp.json', { excluded: [] })]);
    const desired = desiredOf(entry('a', 'user'), entry('b', 'user'));
    for (const trusted of [true, false]) {
      const { verdicts, lists } = computeGating(desired, { settings: scopedSettings, trusted, approvals: {} });
      expect(verdicts).toEqual({ a: 'excluded', b: 'admitted' });
      expect(lists.excluded).toEqual(['a']);
    }
  });
});

// ── property test ──────────────────────────────────────────────────────────

/** mulberry32: a tiny seeded PRNG, so a failure names a seed that reproduces it. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const NAMES = ['a', 'b', 'c', 'd', 'e'];
const FILE_SCOPES: Scope[] = ['user', 'project', 'workspace', 'workspace', 'cli'];
const SERVER_SCOPES: Scope[] = ['user', 'project', 'workspace', 'cli', 'runtime', 'sdk'];

interface Case {
  scoped: ScopedSettings[];
  trusted: boolean;
  flag?: string[];
  desired: DesiredMap;
  approvals: Record<string, ApprovalDecision>;
}

function randomCase(rand: () => number): Case {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  // Small lists with a fair share of absent and `[]`, where the interesting cases are.
  const list = (): string[] | undefined => {
    const r = rand();
    if (r < 0.35) return undefined;
    if (r < 0.5) return [];
    return NAMES.filter(() => rand() < 0.4);
  };
  const scoped: ScopedSettings[] = [];
  FILE_SCOPES.forEach((scope, i) => {
    if (rand() < 0.2) return; // this file does not exist or sets nothing
    const allowed = list();
    const excluded = list();
    scoped.push(at(scope, { ...(allowed ? { allowed } : {}), ...(excluded ? { excluded } : {}) }, `/${scope}-${i}.json`));
  });
  // Callers hand sources over in precedence order, but the merge must not depend on it.
  for (let i = scoped.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [scoped[i], scoped[j]] = [scoped[j]!, scoped[i]!];
  }
  const flag = rand() < 0.3 ? NAMES.filter(() => rand() < 0.5) : undefined;
  const entries = NAMES.map((n) => {
    const scope = pick(SERVER_SCOPES);
    return entry(n, scope, scope === 'sdk' ? { type: 'sdk', instance: {} } : undefined);
  });
  // Approved, so a verdict turns on the lists and the trust alone.
  const approvals = Object.fromEntries(entries.map((e) => [e.name, { hash: e.hash, decision: 'approved' as const }]));
  return { scoped, trusted: rand() < 0.5, ...(flag ? { flag } : {}), desired: desiredOf(...entries), approvals };
}

function gatingOf(c: Case, scoped: readonly ScopedSettings[] = c.scoped) {
  return computeGating(c.desired, { settings: scoped, trusted: c.trusted, approvals: c.approvals, ...(c.flag ? { cliAllowedServerNames: c.flag } : {}) });
}

/** Intersection of the present lists; undefined (allow all) when none is. */
function intersect(lists: Array<readonly string[] | undefined>): string[] | undefined {
  let out: string[] | undefined;
  for (const l of lists) if (l !== undefined) out = (out ?? [...l]).filter((n) => l.includes(n));
  return out;
}

describe('gating only narrows as trust drops: property over random scope combinations', () => {
  const RUNS = 2000;
  const SEED = 0x5eed10;

  it(`holds for ${RUNS} seeded random cases (seed ${SEED})`, () => {
    const rand = prng(SEED);
    for (let run = 0; run < RUNS; run++) {
      const c = randomCase(rand);
      const why = `run ${run}: ${JSON.stringify({ scoped: c.scoped, trusted: c.trusted, flag: c.flag })}`;
      const result = gatingOf(c);
      const ungated = c.scoped.filter((s) => !GATED_SCOPES.has(s.scope));
      const gated = c.scoped.filter((s) => GATED_SCOPES.has(s.scope));

      // 1. excluded ⊇ every trusted-or-ungated scope's excluded.
      for (const s of c.scoped) {
        if (GATED_SCOPES.has(s.scope) && !c.trusted) continue;
        for (const n of s.settings.excluded ?? []) expect(result.lists.excluded, why).toContain(n);
      }

      // 2. A gated scope never adds a name to `allowed` that the user/CLI lists (and the flag) did not allow.
      const bound = intersect([...ungated.map((s) => s.settings.allowed), c.flag]);
      if (bound !== undefined) {
        expect(result.lists.allowed, why).toBeDefined();
        for (const n of result.lists.allowed!) expect(bound, why).toContain(n);
      }
      // ...and `allowed: []` denies all wherever it appears in a source that counts.
      const counted = c.trusted ? c.scoped : ungated;
      if (counted.some((s) => s.settings.allowed?.length === 0)) expect(result.lists.allowed, why).toEqual([]);

      // 3. Monotone: adding the gated files' settings never admits a server that was not admitted without them.
      const without = gatingOf(c, ungated);
      for (const [name, verdict] of Object.entries(result.verdicts)) {
        if (verdict === 'admitted') expect(without.verdicts[name], `${why} / ${name}`).toBe('admitted');
      }

      // 4. In an untrusted folder the gated files' settings change nothing at all (trivially so when there are none).
      if (!c.trusted || gated.length === 0) expect(result, why).toEqual(without);

      // 5. The merge does not depend on the order sources are handed over.
      expect(gatingOf(c, [...c.scoped].reverse()).lists, why).toEqual(result.lists);
    }
  });
});
