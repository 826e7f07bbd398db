import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { ApprovalDecision, DesiredMap, DesiredServer } from '../../machines/types.js';
import { approvalStates, promptableServers } from '../../src/approvals/promptable.js';
import { FileApprovalStore, MemoryApprovalStore, type ApprovalStore } from '../../src/approvals/store.js';
import { computeGating } from '../../src/gating/compute.js';
import { desiredOf, entry } from '../gating/entries.js';

const at = '2025-01-01T00:00:00.000Z';
const decide = (e: DesiredServer, decision: 'approved' | 'rejected'): ApprovalDecision => ({ hash: e.hash, decision });
const verdictOf = (desired: DesiredMap, approvals: Record<string, ApprovalDecision>, name: string) =>
  computeGating(desired, { settings: {}, trusted: true, approvals }).verdicts[name];

describe('approval states and promptable servers (SPEC §4)', () => {
  const foo = entry('foo', 'project');
  const fooEdited = entry('foo', 'project', { command: 'node', args: ['foo.js', '--edited'] });

  it.each([
    { title: 'no decision → pending and promptable', config: foo, decision: undefined, state: 'pending', promptable: ['foo'], verdict: 'pending_approval' },
    { title: 'rejected → not promptable, and still not admitted', config: foo, decision: 'rejected', state: 'rejected', promptable: [], verdict: 'rejected' },
    { title: 'a config edit after a reject makes it promptable again', config: fooEdited, decision: 'rejected', state: 'pending', promptable: ['foo'], verdict: 'pending_approval' },
    { title: 'approved → neither promptable nor rejected, and admitted', config: foo, decision: 'approved', state: 'approved', promptable: [], verdict: 'admitted' },
  ] as const)('$title', ({ config, decision, state, promptable, verdict }) => {
    const desired = desiredOf(config);
    // The decision is always about the unedited config.
    const decisions: Record<string, ApprovalDecision> = decision === undefined ? {} : { foo: decide(foo, decision) };
    expect(approvalStates(desired, decisions)).toEqual({ foo: state });
    expect(promptableServers(desired, decisions)).toEqual(promptable);
    expect(verdictOf(desired, decisions, 'foo')).toBe(verdict);
  });

  it('an approval for an older config does not carry over to the edited one', () => {
    const decisions = { foo: decide(foo, 'approved') };
    expect(promptableServers(desiredOf(fooEdited), decisions)).toEqual(['foo']);
  });

  it('covers gated scopes only, sorted', () => {
    const desired = desiredOf(entry('zeta', 'workspace'), entry('user1', 'user'), entry('cli1', 'cli'), entry('rt', 'runtime'), entry('sdk1', 'sdk'), entry('alpha', 'project'));
    expect(approvalStates(desired, {})).toEqual({ alpha: 'pending', zeta: 'pending' });
    expect(Object.keys(approvalStates(desired, {}))).toEqual(['alpha', 'zeta']);
    expect(promptableServers(desired, {})).toEqual(['alpha', 'zeta']);
  });

  describe.each<[string, () => Promise<ApprovalStore>]>([
    ['memory store', async () => new MemoryApprovalStore()],
    ['file store', async () => new FileApprovalStore(join(await tempDir(), 'approvals.json'))],
  ])('identical re-add keeps the decision (%s)', (_kind, makeStore) => {
    it.each(['approved', 'rejected'] as const)('%s', async (decision) => {
      const store = await makeStore();
      const root = await tempDir();
      const first = entry('foo', 'project', { command: 'node', args: ['foo.js'], env: { A: '1' } });
      await store.set(root, 'foo', { hash: first.hash, decision, at });

      // removed: nothing to prompt
      const removed = desiredOf(entry('other', 'user'));
      expect(promptableServers(removed, (await store.load(root)).decisions)).toEqual([]);

      // added back with the same config, written in a different key order
      const again = entry('foo', 'project', { env: { A: '1' }, args: ['foo.js'], command: 'node' });
      const { decisions, error } = await store.load(root);
      expect(error).toBeUndefined();
      expect(approvalStates(desiredOf(again), decisions)).toEqual({ foo: decision });
      expect(promptableServers(desiredOf(again), decisions)).toEqual([]);
      expect(verdictOf(desiredOf(again), decisions, 'foo')).toBe(decision === 'approved' ? 'admitted' : 'rejected');
    });
  });
});

const temps: string[] = [];
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'mcpr-prompt-'));
  temps.push(dir);
  return dir;
}
afterAll(async () => {
  await Promise.all(temps.map((d) => rm(d, { recursive: true, force: true })));
});
