/**
 * Saves that change nothing that matters (SPEC §2.4, §3.2): an unrelated key,
 * a reformat, an identical save, a YAML comment cause no reconcile.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fixturePath } from '../helpers/fixtures.js';
import { waitFor } from '../helpers/processes.js';
import { basic, collect, Harness, quiet, row, SLOW, toolsOf, waitReconciled, waitState } from './support.js';

const h = new Harness();
afterAll(() => h.cleanup());

describe('saves that change nothing', () => {
  it('a theme-only edit, a reformat and an identical save cause no reconcile; a real edit after them does', async () => {
    const ws = h.workspace();
    const server = basic('1');
    ws.user({ a: server }, { theme: 'dark' });
    const c = await h.start(ws);
    const a = await waitState(c, 'a', 'connected');
    const states = collect(c, 'server-state');
    const toolChanges = collect(c, 'tools-changed');
    const before = c.reconciles;

    // 1. Only an unrelated key changes.
    ws.user({ a: server }, { theme: 'light' });
    await quiet();
    expect(c.reconciles).toBe(before);

    // 2. Same content, other formatting: key order, indentation, a comment, a trailing comma.
    const { env, args, command } = server as { env: Record<string, string>; args: string[]; command: string };
    ws.write(
      ws.userFile,
      `// reformatted by hand\n{ "mcpServers": { "a": { "env": ${JSON.stringify(env)},\n      "args": ${JSON.stringify(args)}, "command": ${JSON.stringify(command)}, } },\n"theme": "light" }\n`,
    );
    await quiet();
    expect(c.reconciles).toBe(before);

    // 3. The same bytes again.
    ws.write(ws.userFile, `// reformatted by hand\n{ "mcpServers": { "a": { "env": ${JSON.stringify(env)},\n      "args": ${JSON.stringify(args)}, "command": ${JSON.stringify(command)}, } },\n"theme": "light" }\n`);
    await quiet();
    expect(c.reconciles).toBe(before);

    expect(states).toEqual([]);
    expect(toolChanges).toEqual([]);
    expect(row(c, 'a')).toMatchObject({ state: 'connected', pid: a.pid, generation: a.generation });

    // The watcher is alive: a change that matters is picked up.
    ws.user({ a: basic('2') }, { theme: 'light' });
    await waitReconciled(c, before, 'the real edit to be reconciled');
    await waitFor(() => toolsOf(c, 'a').includes('mcp__a__v2_tool'), 'a to serve tools version 2', SLOW);
    expect(c.reconciles).toBe(before + 1);
  });
});

describe('YAML sources', () => {
  it('a comment-only YAML edit causes no reconcile; a value edit reconnects the server', async () => {
    const ws = h.workspace();
    const yml = join(ws.root, 'user.yml');
    const entry = (v: string, comment = '') =>
      `${comment}mcpServers:\n  y:\n    command: ${JSON.stringify(process.execPath)}\n    args: [${JSON.stringify(fixturePath('basic-server'))}]\n    env:\n      TOOLS_VERSION: "${v}"\n`;
    ws.write(yml, entry('1'));
    const c = await h.start(ws, { userConfigPath: yml });
    const y = await waitState(c, 'y', 'connected');
    const before = c.reconciles;

    ws.write(yml, entry('1', '# my servers\n\n'));
    await quiet();
    expect(c.reconciles).toBe(before);
    expect(row(c, 'y')).toMatchObject({ pid: y.pid, generation: y.generation });

    ws.write(yml, entry('2', '# my servers\n\n'));
    await waitReconciled(c, before, 'the YAML edit to be reconciled');
    await waitFor(() => toolsOf(c, 'y').includes('mcp__y__v2_tool'), 'y to serve tools version 2', SLOW);
    expect(c.reconciles).toBe(before + 1);
  });
});
