/**
 * The abstract model of the whole controller (TESTING.md §2, way 2; defined in
 * test/helpers/controller-model.ts), walked with `createTestModel`; every path
 * is carried out against the REAL reconcilerMachine (real serverMachine
 * children, simulated I/O on a SimulatedClock) and every model state is
 * checked against the children's states and the simulated registry.
 */
import { describe, expect, it } from 'vitest';
import { createActor, SimulatedClock, type Actor, type AnyActorRef } from 'xstate';
import { reconcilerMachine } from '../../machines/reconciler.machine.js';
import { stateNameOf, type ServerStateName } from '../../machines/reason.js';
import type { DesiredMap, DesiredServer, GatingState } from '../../machines/types.js';
import { expectedState, initialContext, NAMES, serverStatesNotMet, testModel, untouchedServers, type ModelContext, type ModelSnapshot, type Name } from '../helpers/controller-model.js';
import { entry, flush, World } from './fixtures.js';

function entryOf(name: Name, version: 0 | 1): DesiredServer {
  return entry(name, { scope: name === 'b' ? 'project' : 'user', fp: `${name}-fp${version}`, hash: `${name}-h${version}` });
}

/** The desired map and gating the controller would compute for a model state. */
function levels(c: ModelContext): { desired: DesiredMap; gating: GatingState } {
  const desired: Record<string, DesiredServer> = {};
  for (const n of NAMES) if (c.present[n]) desired[n] = entryOf(n, c.version[n]);
  return { desired, gating: gatingOf(c) };
}

function gatingOf(c: ModelContext): GatingState {
  return {
    excluded: c.excluded,
    allowed: c.allowed,
    trusted: true,
    approvals: c.decision ? { b: { hash: entryOf('b', c.decision.version).hash, decision: c.decision.decision } } : {},
  };
}

/** One simulated world and one provided machine, reused by every path (reset in between). */
const world = new World();
const provided = reconcilerMachine.provide({ actors: { server: world.provide() } });

/** The system under test for one path. */
class Sut {
  readonly world = world;
  readonly clock = new SimulatedClock();
  readonly actor: Actor<typeof reconcilerMachine>;
  /** The model state checked last, to tell which servers a step must leave alone. */
  last: ModelContext | undefined;

  constructor(initial: ModelContext) {
    world.reset();
    this.actor = createActor(provided, { input: levels(initial), clock: this.clock });
    this.actor.start();
  }

  stateOf(name: Name): ServerStateName | undefined {
    const ref = this.actor.getSnapshot().children[name] as AnyActorRef | undefined;
    return ref ? stateNameOf(ref.getSnapshot()) : undefined;
  }

  generationOf(name: Name): number | undefined {
    return this.actor.getSnapshot().context.servers[name]?.getSnapshot().context.generation;
  }

  /** Let connects resolve and fingerprint_changed (0 ms) move on. */
  async settle(): Promise<void> {
    await flush();
    this.clock.increment(0);
    await flush();
  }
}

describe('abstract controller model, carried out against reconcilerMachine', { timeout: 600_000 }, () => {
  it('matches the model on every shortest path', async () => {
    const paths = testModel.getShortestPaths();
    let sut!: Sut;

    /** Servers whose entry and expected state a step leaves unchanged must not be torn down. */
    const untouched = async (next: ModelContext, run: () => Promise<void>) => {
      const stable = untouchedServers(sut.last!, next);
      const generations = stable.map((n) => sut.generationOf(n));
      const logBefore = sut.world.log.length;
      await run();
      const newLines = sut.world.log.slice(logBefore);
      for (const [i, n] of stable.entries()) {
        expect(newLines.filter((l) => l === `dropTools ${n}` || l === `disconnect ${n}` || l.startsWith(`connect ${n}#`)), `${n} churned`).toEqual([]);
        expect(sut.generationOf(n)).toBe(generations[i]);
      }
    };

    const reconcile = async (step: { state: ModelSnapshot }) =>
      untouched(step.state.context, async () => {
        const { desired, gating } = levels(step.state.context);
        sut.actor.send({ type: 'CONFIG', desired, gating });
        await sut.settle();
      });
    const regate = async (step: { state: ModelSnapshot }) =>
      untouched(step.state.context, async () => {
        sut.actor.send({ type: 'GATING', gating: gatingOf(step.state.context) });
        await sut.settle();
      });
    const decide = async (step: { state: ModelSnapshot }) =>
      untouched(step.state.context, async () => {
        const c = step.state.context;
        sut.actor.send({ type: 'APPROVAL', name: 'b', decision: { hash: entryOf('b', c.version.b).hash, decision: c.decision!.decision } });
        await sut.settle();
      });

    const check = async (state: ModelSnapshot) => {
      const c = state.context;
      const snap = sut.actor.getSnapshot();
      for (const n of NAMES) {
        const expected = expectedState(c, n);
        expect(sut.stateOf(n), `state of ${n}`).toBe(expected);
        // the registry holds exactly the tools of connected servers (nothing is reconnecting at rest)
        expect(sut.world.tools.has(n), `tools of ${n}`).toBe(expected === 'connected');
        expect(sut.world.connections.has(n), `connection of ${n}`).toBe(expected === 'connected');
        // a removed server's name is remembered for its reason
        expect(snap.context.removed.includes(n), `${n} remembered as removed`).toBe(!c.present[n]);
        if (expected === 'connected') expect(sut.world.tools.get(n)).toBe(sut.generationOf(n));
      }
      // gated server b never connected without an approval for its current hash
      for (const call of sut.world.connectCalls.filter((x) => x.name === 'b')) {
        expect(call.entry.hash).toMatch(/^b-h[01]$/);
      }
      sut.last = c;
    };

    let steps = 0;
    const statesSeen = new Set<string>();
    for (const path of paths) {
      sut = new Sut(initialContext());
      await sut.settle();
      await path.test({
        events: {
          ADD_SERVER: reconcile,
          EDIT_SERVER: reconcile,
          REMOVE_SERVER: reconcile,
          EXCLUDE: regate,
          ALLOW_ONLY: regate,
          APPROVE: decide,
          REJECT: decide,
          CRASH: async (step) => {
            const name = step.state.context.crashed!;
            const before = sut.generationOf(name)!;
            sut.world.lose(name, { error: 'process exited' });
            // the first loss reconnects at once; the tools stay registered throughout
            // (never dropped: they are replaced by the new generation's)
            expect(['reconnecting', 'connected']).toContain(sut.stateOf(name));
            expect(sut.world.tools.has(name)).toBe(true);
            await flush();
            expect(sut.generationOf(name)).toBe(before + 1);
            expect(sut.world.tools.get(name)).toBe(before + 1);
          },
        },
        states: {
          '*': async (state) => {
            steps++;
            statesSeen.add(JSON.stringify(state.context));
            await check(state);
          },
        },
      });
      sut.actor.stop();
    }
    console.log(`[controller model] ${paths.length} paths, ${statesSeen.size} distinct model states, ${steps} states checked against the reconciler`);
    expect(statesSeen.size).toBeGreaterThan(100);
    // every modelled server state was met
    expect(serverStatesNotMet([...statesSeen].map((s) => JSON.parse(s) as ModelContext))).toEqual([]);
  });
});
