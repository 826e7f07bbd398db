import { describe, expect, it } from 'vitest';
import type { AdmissionVerdict } from '../../machines/admission.js';
import type { ApprovalDecision, DesiredServer } from '../../machines/types.js';
import { computeGating, effectiveAllowed, type GatingInput } from '../../src/gating/compute.js';
import { desiredOf, entry } from './entries.js';

const input = (over: Partial<GatingInput> = {}): GatingInput => ({ settings: {}, trusted: true, approvals: {}, ...over });
const approved = (e: DesiredServer): ApprovalDecision => ({ hash: e.hash, decision: 'approved' });
const rejected = (e: DesiredServer): ApprovalDecision => ({ hash: e.hash, decision: 'rejected' });

describe('effectiveAllowed: the CLI upper bound (SPEC §2.3)', () => {
  const U = undefined;
  const cases: Array<[string, string[] | undefined, string[] | undefined, string[] | undefined]> = [
    // name, settings, flag, expected
    ['neither → allow all', U, U, U],
    ['settings only → settings', ['b', 'a'], U, ['a', 'b']],
    ['flag only → flag', U, ['b', 'a'], ['a', 'b']],
    ['both → intersection', ['a', 'b', 'c'], ['b', 'c', 'd'], ['b', 'c']],
    ['settings can narrow the flag', ['a'], ['a', 'b'], ['a']],
    ['settings cannot widen past the flag', ['a', 'b', 'c'], ['a'], ['a']],
    ['disjoint → deny all', ['c'], ['a', 'b'], []],
    ['settings [] → deny all', [], U, []],
    ['settings [] under a flag → deny all', [], ['a'], []],
    ['flag [] → deny all whatever settings say', ['a'], [], []],
    ['flag [] alone → deny all', U, [], []],
    ['duplicates collapse', ['a', 'a'], U, ['a']],
  ];
  it.each(cases)('%s', (_name, settings, flag, expected) => {
    expect(effectiveAllowed(settings, flag)).toEqual(expected);
  });

  it('never admits a name outside the flag, for every combination over three names', () => {
    const names = ['a', 'b', 'c'];
    const subsets = [...Array(8).keys()].map((m) => names.filter((_, i) => m & (1 << i)));
    for (const flag of subsets) {
      for (const settings of [undefined, ...subsets]) {
        const result = effectiveAllowed(settings, flag)!;
        expect(result.every((n) => flag.includes(n))).toBe(true);
        if (settings) expect(result).toEqual(settings.filter((n) => flag.includes(n)));
        else expect(result).toEqual(flag);
      }
    }
  });
});

describe('computeGating (SPEC §2.3)', () => {
  const user = entry('user1', 'user');
  const cli = entry('cli1', 'cli');
  const runtime = entry('rt1', 'runtime');
  const sdk = entry('sdk1', 'sdk', { type: 'sdk', instance: {} });
  const proj = entry('proj1', 'project');
  const work = entry('work1', 'workspace');
  const all = desiredOf(user, cli, runtime, sdk, proj, work);
  const allApproved = { [proj.name]: approved(proj), [work.name]: approved(work) };

  it('absent allowed admits everything (approved gated servers included)', () => {
    const { verdicts, gating, lists } = computeGating(all, input({ approvals: allApproved }));
    expect(Object.values(verdicts).every((v) => v === 'admitted')).toBe(true);
    expect(Object.keys(verdicts).sort()).toEqual(Object.keys(all).sort());
    expect(gating).not.toHaveProperty('allowed');
    expect(lists).not.toHaveProperty('allowed');
  });

  it('allowed: [] denies every server except in-process sdk ones', () => {
    const { verdicts, gating, lists } = computeGating(all, input({ settings: { allowed: [] }, approvals: allApproved }));
    expect(verdicts).toEqual({
      user1: 'not_allowed',
      cli1: 'not_allowed',
      rt1: 'not_allowed',
      sdk1: 'admitted',
      proj1: 'not_allowed',
      work1: 'not_allowed',
    });
    expect(gating.allowed).toEqual([]);
    expect(lists.allowed).toEqual([]);
  });

  it('sdk servers are not filtered by allowed, from settings or from the flag', () => {
    for (const over of [{ settings: { allowed: ['user1'] } }, { cliAllowedServerNames: ['user1'] }]) {
      const { verdicts } = computeGating(all, input({ ...over, approvals: allApproved }));
      expect(verdicts.sdk1).toBe('admitted');
      expect(verdicts.user1).toBe('admitted');
      expect(verdicts.cli1).toBe('not_allowed');
    }
  });

  it('the flag bounds settings: a name only settings allow stays not_allowed', () => {
    const { verdicts, gating } = computeGating(
      desiredOf(user, cli),
      input({ settings: { allowed: ['user1', 'cli1'] }, cliAllowedServerNames: ['user1'] }),
    );
    expect(gating.allowed).toEqual(['user1']);
    expect(verdicts).toEqual({ user1: 'admitted', cli1: 'not_allowed' });
  });

  it('settings narrow the flag', () => {
    const { verdicts } = computeGating(desiredOf(user, cli), input({ settings: { allowed: ['cli1'] }, cliAllowedServerNames: ['user1', 'cli1'] }));
    expect(verdicts).toEqual({ user1: 'not_allowed', cli1: 'admitted' });
  });

  it('an untrusted folder makes gated servers untrusted and leaves the others alone', () => {
    const { verdicts } = computeGating(all, input({ trusted: false, approvals: allApproved }));
    expect(verdicts).toEqual({ user1: 'admitted', cli1: 'admitted', rt1: 'admitted', sdk1: 'admitted', proj1: 'untrusted', work1: 'untrusted' });
  });

  it('excluded disconnects any scope, sdk included', () => {
    const { verdicts, lists } = computeGating(all, input({ settings: { excluded: ['sdk1', 'user1', 'user1'] }, approvals: allApproved }));
    expect(verdicts.sdk1).toBe('excluded');
    expect(verdicts.user1).toBe('excluded');
    expect(verdicts.cli1).toBe('admitted');
    expect(lists.excluded).toEqual(['sdk1', 'user1']);
  });

  it('pending and rejected list gated servers by the approval state of their current hash', () => {
    const p2 = entry('proj2', 'project');
    const p3 = entry('proj3', 'project', { command: 'node', args: ['edited.js'] });
    const desired = desiredOf(user, proj, work, p2, p3);
    const { lists, verdicts } = computeGating(desired, input({
      approvals: {
        proj1: approved(proj),
        work1: rejected(work),
        // rejected for an older config: pending again
        proj3: { hash: entry('proj3', 'project').hash, decision: 'rejected' },
        // a decision for an ungated server changes nothing
        user1: { hash: 'other', decision: 'rejected' },
      },
    }));
    expect(lists.pending).toEqual(['proj2', 'proj3']);
    expect(lists.rejected).toEqual(['work1']);
    expect(verdicts).toEqual({ user1: 'admitted', proj1: 'admitted', work1: 'rejected', proj2: 'pending_approval', proj3: 'pending_approval' });
  });
});

describe('admission order (SPEC §5): disabled → untrusted → excluded → not_allowed → rejected → pending_approval', () => {
  const proj = entry('p', 'project');
  const disabledProj = entry('p', 'project', { command: 'node', disabled: true });
  const cases: Array<[string, DesiredServer, GatingInput, AdmissionVerdict]> = [
    ['disabled beats untrusted, excluded and not_allowed', disabledProj, input({ trusted: false, settings: { excluded: ['p'], allowed: [] } }), 'disabled'],
    ['disabled beats a missing approval', disabledProj, input(), 'disabled'],
    ['untrusted beats excluded', proj, input({ trusted: false, settings: { excluded: ['p'] } }), 'untrusted'],
    ['excluded beats not_allowed', proj, input({ settings: { excluded: ['p'], allowed: [] } }), 'excluded'],
    ['excluded beats rejected', proj, input({ settings: { excluded: ['p'] }, approvals: { p: rejected(proj) } }), 'excluded'],
    ['not_allowed beats rejected', proj, input({ settings: { allowed: ['q'] }, approvals: { p: rejected(proj) } }), 'not_allowed'],
    ['not_allowed beats pending_approval', proj, input({ cliAllowedServerNames: [] }), 'not_allowed'],
    ['rejected for the current hash', proj, input({ approvals: { p: rejected(proj) } }), 'rejected'],
    ['no decision → pending_approval', proj, input(), 'pending_approval'],
    ['decision for another hash → pending_approval', proj, input({ approvals: { p: { hash: 'old', decision: 'approved' } } }), 'pending_approval'],
    ['approved and allowed → admitted', proj, input({ settings: { allowed: ['p'] }, approvals: { p: approved(proj) } }), 'admitted'],
    ['a disabled user server is disabled', entry('p', 'user', { command: 'x', disabled: true }), input(), 'disabled'],
  ];
  it.each(cases)('%s', (_name, e, gatingInput, expected) => {
    expect(computeGating(desiredOf(e), gatingInput).verdicts[e.name]).toBe(expected);
  });
});
