/**
 * Config errors during hot reload (SPEC §3.2): a file that does not parse, or
 * an entry that becomes invalid, keeps the last good config in force, is
 * reported once with file and line, tears nothing down, and the fix applies.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { pidAlive, waitFor } from '../helpers/processes.js';
import { basic, collect, Harness, quiet, row, SLOW, toolsOf, waitReconciled, waitState } from './support.js';

const h = new Harness();
afterAll(() => h.cleanup());

/** A controller on user servers a and b whose workspace settings exclude b: a is connected, b `excluded`. */
async function startWithBExcluded() {
  const ws = h.workspace();
  ws.user({ a: basic('1'), b: basic('2') });
  ws.write(ws.settingsFile, { mcp: { excluded: ['b'] } });
  const c = await h.start(ws);
  await waitState(c, 'a', 'connected');
  expect(row(c, 'b')?.state).toBe('excluded');
  return { ws, c };
}

describe('config errors during hot reload', () => {
  it('a broken JSON file keeps the last good config (same process, same tools), reports one error with file and line, and the fix applies', async () => {
    const { ws, c, rows: { a } } = await h.connected({ a: basic('1') });
    const tools = toolsOf(c, 'a');
    const errors = collect(c, 'config-error');
    const states = collect(c, 'server-state');
    const before = c.reconciles;

    // Line 4 is where the parser gives up: a missing comma between two properties.
    const broken = `{\n  "mcpServers": {\n    "a": { "command": "node"\n      "args": []\n    }\n  }\n}\n`;
    ws.write(ws.userFile, broken);
    await waitFor(() => errors.length > 0, 'a config-error', SLOW);
    // Saving the same broken text again reports nothing new.
    await quiet();
    ws.write(ws.userFile, broken);
    await quiet();

    expect(errors).toHaveLength(1);
    const issues = errors[0]!.issues;
    expect(issues).toHaveLength(1);
    expect(issues[0]).toMatchObject({ file: ws.userFile, line: 4 });
    expect(issues[0]!.message.length).toBeGreaterThan(0);
    expect(c.reconciles).toBe(before);
    expect(states).toEqual([]);
    expect(row(c, 'a')).toMatchObject({ state: 'connected', pid: a.pid, generation: a.generation });
    expect(pidAlive(a.pid!)).toBe(true);
    expect(toolsOf(c, 'a')).toEqual(tools);

    // The fix resumes reloads and applies.
    ws.user({ a: basic('2') });
    await waitReconciled(c, before, 'the fixed file to be reconciled');
    await waitFor(() => toolsOf(c, 'a').includes('mcp__a__v2_tool'), 'a to serve tools version 2', SLOW);
    expect(row(c, 'a')?.state).toBe('connected');
    expect(errors).toHaveLength(1);
  });

  it('a broken settings file keeps its last good `mcp.excluded` in force', async () => {
    const { ws, c } = await startWithBExcluded();
    const errors = collect(c, 'config-error');
    const before = c.reconciles;

    ws.write(ws.settingsFile, '{ "mcp": { "excluded": [ "b" ] ');
    await waitFor(() => errors.length > 0, 'a config-error', SLOW);
    await quiet();
    expect(errors).toHaveLength(1);
    expect(errors[0]!.issues[0]).toMatchObject({ file: ws.settingsFile });
    expect(errors[0]!.issues[0]!.line).toBeGreaterThan(0);
    expect(c.reconciles).toBe(before);
    expect(row(c, 'b')).toMatchObject({ state: 'excluded', tools: [], pid: undefined });

    ws.write(ws.settingsFile, { mcp: { excluded: [] } });
    await waitState(c, 'b', 'connected');
    expect(errors).toHaveLength(1);
  });

  it('an entry that becomes invalid keeps its last good config while the valid edits next to it apply', async () => {
    const { ws, c, rows: { a } } = await h.connected({ a: basic('1'), b: basic('1') });
    const errors = collect(c, 'config-error');
    const before = c.reconciles;

    ws.user({ a: { ...basic('1'), args: 42 }, b: basic('3') });
    await waitReconciled(c, before, 'the valid edit to b to be reconciled');
    await waitFor(() => toolsOf(c, 'b').includes('mcp__b__v3_tool'), 'b to serve tools version 3', SLOW);
    expect(errors).toHaveLength(1);
    expect(errors[0]!.issues).toEqual([expect.objectContaining({ file: ws.userFile, server: 'a', field: 'args' })]);
    expect(errors[0]!.issues[0]!.line).toBeGreaterThan(0);
    expect(row(c, 'a')).toMatchObject({ state: 'connected', pid: a.pid, generation: a.generation });

    ws.user({ a: basic('5'), b: basic('3') });
    await waitFor(() => toolsOf(c, 'a').includes('mcp__a__v5_tool'), 'a to serve tools version 5', SLOW);
    expect(errors).toHaveLength(1);
  });

  it('a file that is broken at start contributes nothing, is reported, and applies once fixed', async () => {
    const ws = h.workspace();
    ws.user({ a: basic('1') });
    ws.write(ws.settingsFile, '{ "mcpServers": { "b": ');
    const c = h.create(ws);
    const errors = collect(c, 'config-error');
    await c.start();
    await waitState(c, 'a', 'connected');
    expect(errors).toHaveLength(1);
    expect(errors[0]!.issues[0]).toMatchObject({ file: ws.settingsFile, line: 1 });
    expect(row(c, 'b')).toBeUndefined();

    // The fixed file is in the (gated) workspace scope: b shows up waiting for approval.
    ws.write(ws.settingsFile, { mcpServers: { b: basic('2') } });
    await waitFor(() => row(c, 'b')?.state === 'pending_approval', 'b to appear, waiting for approval', SLOW);
    expect(errors).toHaveLength(1);
    expect(row(c, 'a')?.state).toBe('connected');
  });

  it('an `mcp.excluded` that becomes invalid keeps its last good value: the excluded server stays out', async () => {
    const { ws, c } = await startWithBExcluded();
    const errors = collect(c, 'config-error');
    const states = collect(c, 'server-state');

    // A typo: a string where a list belongs. Reading it as "nothing excluded" would start b.
    ws.write(ws.settingsFile, { mcp: { excluded: 'b' } });
    await waitFor(() => errors.length > 0, 'a config-error', SLOW);
    await quiet();
    expect(errors).toHaveLength(1);
    expect(errors[0]!.issues).toEqual([expect.objectContaining({ file: ws.settingsFile, field: 'mcp.excluded' })]);
    expect(errors[0]!.issues[0]!.line).toBeGreaterThan(0);
    expect(row(c, 'b')).toMatchObject({ state: 'excluded', tools: [], pid: undefined });
    expect(states.filter((e) => e.name === 'b')).toEqual([]);

    // Removing the key on purpose does un-exclude it.
    ws.write(ws.settingsFile, { mcp: {} });
    await waitState(c, 'b', 'connected');
  });
});

