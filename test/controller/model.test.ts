/**
 * The abstract controller model (TESTING.md §2, way 2; test/helpers/controller-model.ts)
 * carried out against a REAL controller: a temp workspace per path, server `a`
 * in the user's settings (ungated) and `b` in `.mcp.json` (gated), both running
 * the basic fixture server whose tools are named by its config version.
 *
 * - ADD / EDIT / REMOVE / EXCLUDE / ALLOW_ONLY rewrite the config files and call
 *   `reload()`; APPROVE / REJECT go through `approve()` / `reject()`; CRASH
 *   SIGKILLs the server's process and waits for the supervisor to bring it back.
 * - After every step, once the controller has settled (polled, no sleeps), the
 *   model state is checked against `status()`, `unavailableReason()`,
 *   `tools()` and `pids()`, with the invariants: a server held off has no
 *   process and no tool; the registry holds exactly the connected servers'
 *   tools, of their current version; an unchanged server is never
 *   disconnected (same pid and generation, no transition).
 *
 * Real processes are slow, so the paths are the shortest ones to every
 * *observable* model state (each server's expected state, its config version
 * while connected, and which server just crashed), extended so that every
 * event of the model is carried out at least once.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { getShortestPaths, type StatePath } from 'xstate/graph';
import { reasonOfState } from '../../machines/reason.js';
import type { McpController } from '../../src/controller/controller.js';
import type { McpControllerEvents } from '../../src/controller/types.js';
import {
  expectedState,
  initialContext,
  MODEL_EVENTS,
  NAMES,
  serverStatesNotMet,
  testModel,
  untouchedServers,
  type ModelContext,
  type ModelEvent,
  type ModelSnapshot,
  type Name,
} from '../helpers/controller-model.js';
import { fixturePath } from '../helpers/fixtures.js';
import { pidAlive, waitFor } from '../helpers/processes.js';
import { Harness, processesMatching, type Workspace } from './support.js';

/** Generous bound for a step to settle on a busy 2-core machine (a bound, not an expectation). */
const SETTLE_MS = 45_000;
/** Starts the marker on every server's command line (then `<server>@<workspace>`), so this run's processes can be found in /proc. */
const MARKER = `--mcpr-model-test=${process.pid}/`;

const h = new Harness();
afterAll(async () => {
  await h.cleanup();
  expect(processesMatching(MARKER)).toEqual([]);
});

// ── the paths ────────────────────────────────────────────────────────────

/** What a controller shows of a model state: each server's state, its version while connected, a just-crashed server. */
function observable(c: ModelContext): string {
  const servers = NAMES.map((n) => {
    const state = expectedState(c, n) ?? 'absent';
    return state === 'connected' ? `${n}:connected@v${c.version[n]}` : `${n}:${state}`;
  });
  return [...servers, ...(c.crashed ? [`crashed:${c.crashed}`] : [])].join(' ');
}

const eventsOf = (path: { steps: Array<{ event: { type: string } }> }) =>
  path.steps.map((s) => s.event).filter((e): e is ModelEvent => e.type !== 'xstate.init');

/** Every observable state of the model, met by the full traversal below. */
const allObservable = new Set<string>();

/**
 * The shortest path to every observable state: of the shortest paths to every
 * model state, the shortest per observable state. (A coarse `serializeState`
 * would not do: the traversal would keep one representative per observable
 * state and miss what only another one leads to, e.g. `b` connected at v1.)
 * `getPaths` then drops the paths that are a prefix of another.
 */
const paths = testModel.getPaths((logic, options) => {
  const best = new Map<string, StatePath<ModelSnapshot, ModelEvent>>();
  for (const p of getShortestPaths(logic, options)) {
    const key = observable(p.state.context);
    allObservable.add(key);
    if ((best.get(key)?.steps.length ?? Infinity) > p.steps.length) best.set(key, p);
  }
  return [...best.values()];
});
// Every event of the model at least once: append a missing one to a path whose end allows it.
for (const event of MODEL_EVENTS) {
  const key = JSON.stringify(event);
  if (paths.some((p) => eventsOf(p).some((e) => JSON.stringify(e) === key))) continue;
  const i = paths.findIndex((p) => p.state.can(event));
  if (i >= 0) paths[i] = testModel.getPathsFromEvents([...eventsOf(paths[i]!), event], {})[0]!;
}

// ── the system under test ────────────────────────────────────────────────

/** The basic fixture server with the tools of config version `version`; `marker` goes on its command line. */
function serverConfig(marker: string, version: 0 | 1): Record<string, unknown> {
  return { command: process.execPath, args: [fixturePath('basic-server'), marker], env: { TOOLS_VERSION: String(version) } };
}

/** The registered tool names of `name` at `version`, sorted. */
function toolsAt(name: Name, version: 0 | 1): string[] {
  return ['add', 'echo', 'env', 'pid', `v${version}_tool`].map((t) => `mcp__${name}__${t}`).sort();
}

/** What was seen of a server at the last check. */
interface Seen {
  pid: number | undefined;
  generation: number;
}

/** One real controller on one temp workspace, for one path. */
class Sut {
  readonly ws: Workspace;
  readonly c: McpController;
  /** The model state checked last and what the controller showed then. */
  private last: { context: ModelContext; seen: Partial<Record<Name, Seen>> } | undefined;
  /** Every pid each server showed at a check on this path: only the current one may be alive. */
  private readonly pids: Record<Name, Set<number>> = { a: new Set(), b: new Set() };
  /** The process a CRASH step killed. */
  private killed: { name: Name; pid: number } | undefined;
  /** On the command line of each server's processes (and of nothing else). */
  readonly markers: Record<Name, string>;
  /** Transitions and tool changes since the current step began. */
  private log: Array<{ server: string; what: string }> = [];

  constructor(context: ModelContext) {
    this.ws = h.workspace('mcpr-model-');
    this.markers = { a: `${MARKER}a@${this.ws.root}`, b: `${MARKER}b@${this.ws.root}` };
    this.writeConfig(context);
    // A crashed server's first reconnect waits `initialMs`: kept short, there are many crashes to wait out.
    this.c = h.controller(this.ws, { backoff: { initialMs: 50 } });
    this.c.on('server-state', (e: McpControllerEvents['server-state']) => this.log.push({ server: e.name, what: `${e.previous} → ${e.state} #${e.generation}` }));
    this.c.on('tools-changed', (e: McpControllerEvents['tools-changed']) =>
      this.log.push({ server: e.server, what: `tools +${e.added.join(',')} -${e.removed.join(',')} ~${e.updated.join(',')}` }),
    );
  }

  /** Write the user settings (server `a` and the gating settings) and `.mcp.json` (server `b`) of a model state. */
  writeConfig(c: ModelContext): void {
    const mcp = { ...(c.excluded.length ? { excluded: c.excluded } : {}), ...(c.allowed ? { allowed: c.allowed } : {}) };
    this.ws.writeUserSettings({ mcpServers: c.present.a ? { a: serverConfig(this.markers.a, c.version.a) } : {}, ...(Object.keys(mcp).length ? { mcp } : {}) });
    this.ws.writeMcpJson(c.present.b ? { b: serverConfig(this.markers.b, c.version.b) } : {});
  }

  /** A step begins: forget the previous step's transitions. */
  begin(): void {
    this.log = [];
    this.killed = undefined;
  }

  async reconfigure(c: ModelContext): Promise<void> {
    this.begin();
    this.writeConfig(c);
    await this.c.reload();
  }

  async crash(name: Name): Promise<void> {
    this.begin();
    const pid = this.c.status().find((r) => r.name === name)?.pid;
    expect(pid, `${name} has a process to kill`).toBeTypeOf('number');
    this.killed = { name, pid: pid! };
    process.kill(pid!, 'SIGKILL');
  }

  /** Everything about the controller that disagrees with model state `next` (empty: it matches). */
  mismatches(next: ModelContext): string[] {
    const out: string[] = [];
    const rows = this.c.status();
    const stable = this.last ? untouchedServers(this.last.context, next).filter((n) => n !== this.killed?.name) : [];
    const expectedTools: string[] = [];
    const livePids: number[] = [];
    for (const n of NAMES) {
      const expected = expectedState(next, n) ?? 'removed';
      const r = rows.find((x) => x.name === n);
      const before = this.last?.seen[n];
      const tools = expected === 'connected' ? toolsAt(n, next.version[n]) : [];
      expectedTools.push(...tools);
      if (r?.state !== expected) out.push(`${n}: state ${r?.state ?? 'no row'}, expected ${expected}`);
      if (this.c.unavailableReason(n) !== reasonOfState(expected)) out.push(`${n}: unavailableReason ${this.c.unavailableReason(n)}, expected ${reasonOfState(expected)}`);
      const rowTools = [...(r?.tools ?? [])].sort();
      if (rowTools.join() !== tools.join()) out.push(`${n}: status tools [${rowTools.join(', ')}], expected [${tools.join(', ')}]`);
      const registered = this.c.tools().filter((t) => t.server === n).map((t) => t.name).sort();
      if (registered.join() !== tools.join()) out.push(`${n}: registered tools [${registered.join(', ')}], expected [${tools.join(', ')}]`);
      // Old generations' processes are gone too; the current one, if any, is the only one.
      const stale = [...this.pids[n]].filter((pid) => pid !== r?.pid && pidAlive(pid));
      if (stale.length) out.push(`${n}: earlier process ${stale.join(', ')} is alive`);
      if (expected === 'connected') {
        if (r?.pid === undefined || !pidAlive(r.pid)) out.push(`${n}: connected without a live process (pid ${r?.pid})`);
        else livePids.push(r.pid);
        if (r?.cached) out.push(`${n}: tools still from the listing cache`);
        if (stable.includes(n)) {
          if (r?.pid !== before?.pid || r?.generation !== before?.generation) {
            out.push(`${n}: unchanged but disturbed (pid ${before?.pid} → ${r?.pid}, generation ${before?.generation} → ${r?.generation})`);
          }
        } else if (before?.pid !== undefined && r?.pid === before.pid) {
          out.push(`${n}: still process ${r.pid} after a change that needs a new one`);
        }
      } else if (r?.pid !== undefined) {
        out.push(`${n}: ${expected} but shows pid ${r.pid}`);
      }
    }
    if (this.killed && pidAlive(this.killed.pid)) out.push(`${this.killed.name}: killed process ${this.killed.pid} is alive`);
    const registry = this.c.tools().map((t) => t.name).sort();
    if (registry.join() !== [...expectedTools].sort().join()) out.push(`registry [${registry.join(', ')}], expected [${expectedTools.sort().join(', ')}]`);
    const tracked = [...this.c.pids()].sort((x, y) => x - y);
    if (tracked.join() !== livePids.sort((x, y) => x - y).join()) out.push(`tracked children [${tracked.join(', ')}], expected [${livePids.join(', ')}]`);
    const churn = this.log.filter((e) => stable.includes(e.server as Name));
    if (churn.length) out.push(`unchanged servers churned: ${churn.map((e) => `${e.server} ${e.what}`).join('; ')}`);
    if (out.length) return out;
    // Last, as it reads /proc: the processes on each server's command line, whether the controller saw them or not.
    for (const n of NAMES) {
      const running = processesMatching(this.markers[n]);
      const expected = expectedState(next, n) === 'connected' ? [rows.find((x) => x.name === n)?.pid] : [];
      if (running.join() !== expected.join()) out.push(`${n}: processes [${running.join(', ')}] running, expected [${expected.join(', ')}]`);
    }
    return out;
  }

  /** Wait until the controller matches `next` (polling), then assert it does, and remember what it showed. */
  async check(next: ModelContext): Promise<void> {
    await waitFor(() => this.mismatches(next).length === 0, `the controller to match ${observable(next)}`, SETTLE_MS, 50).catch(() => {});
    expect(this.mismatches(next), `controller vs model state ${observable(next)}`).toEqual([]);
    const seen: Partial<Record<Name, Seen>> = {};
    for (const r of this.c.status()) {
      if (r.name !== 'a' && r.name !== 'b') continue;
      seen[r.name] = { pid: r.pid, generation: r.generation };
      if (r.pid !== undefined) {
        this.pids[r.name].add(r.pid);
        h.remember(r.pid);
      }
    }
    this.last = { context: next, seen };
  }
}

// ── the test ─────────────────────────────────────────────────────────────

const covered = { paths: 0, steps: 0, observable: new Set<string>(), contexts: new Set<string>(), events: new Set<string>() };

describe('abstract controller model, carried out against a real controller', () => {
  for (const [i, path] of paths.entries()) {
    const events = eventsOf(path);
    const title = events.map((e) => ('name' in e ? `${e.type} ${e.name}` : e.type)).join(' → ') || '(initial state)';
    it(`path ${i + 1}/${paths.length}: ${title}`, async () => {
      const sut = new Sut(initialContext());
      try {
        await sut.c.start();
        const reconfigure = async (step: { state: ModelSnapshot }) => sut.reconfigure(step.state.context);
        await path.test({
          events: {
            ADD_SERVER: reconfigure,
            EDIT_SERVER: reconfigure,
            REMOVE_SERVER: reconfigure,
            EXCLUDE: reconfigure,
            ALLOW_ONLY: reconfigure,
            APPROVE: async () => {
              sut.begin();
              await sut.c.approve('b');
            },
            REJECT: async () => {
              sut.begin();
              await sut.c.reject('b');
            },
            CRASH: async (step) => sut.crash(step.state.context.crashed!),
          },
          states: {
            '*': async (state) => {
              await sut.check(state.context);
              covered.steps++;
              covered.observable.add(observable(state.context));
              covered.contexts.add(JSON.stringify(state.context));
            },
          },
        });
        for (const e of events) covered.events.add(JSON.stringify(e));
        covered.paths++;
      } finally {
        await sut.c.dispose();
      }
      expect(sut.c.pids()).toEqual([]);
      const leftovers = () => NAMES.flatMap((n) => processesMatching(sut.markers[n]));
      await waitFor(() => leftovers().length === 0, 'every server process of the path to be gone', SETTLE_MS).catch(() => {});
      expect(leftovers()).toEqual([]);
    });
  }

  it('covered every observable model state, every server state and every event', () => {
    console.log(
      `[controller model, real controller] ${covered.paths} paths, ${covered.steps} states checked (${covered.observable.size} observable states ` +
        `of ${allObservable.size}, ${covered.contexts.size} distinct model contexts), ${covered.events.size} distinct events`,
    );
    // Lower bounds at today's model: a shrunk model (or path set) fails here.
    expect(covered.paths).toBe(paths.length);
    expect(covered.paths).toBeGreaterThanOrEqual(35);
    expect(covered.steps).toBeGreaterThanOrEqual(125);
    expect(allObservable.size).toBeGreaterThanOrEqual(58);
    expect([...covered.observable].sort()).toEqual([...allObservable].sort());
    expect([...covered.events].sort()).toEqual(MODEL_EVENTS.map((e) => JSON.stringify(e)).sort());
    expect(serverStatesNotMet([...covered.contexts].map((s) => JSON.parse(s) as ModelContext))).toEqual([]);
  });
});
