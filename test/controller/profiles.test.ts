/**
 * Profiles: `profiles: { NAME: { servers, tools } }` in a settings file, used
 * with the `profile` option (`--profile`) or `setProfile()`. A profile only
 * narrows: servers it leaves out rest in `disabled` and `why` names the
 * profile and its file; tools it leaves out are not registered; it never
 * lets in a server gating keeps out. Real fixture servers over stdio.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stdioFixtureConfig } from '../helpers/fixtures.js';
import { waitFor } from '../helpers/processes.js';
import { cli, Harness, row, waitState } from './support.js';

const h = new Harness();
afterAll(() => h.cleanup());

const registered = (c: { tools(): { name: string }[] }) => c.tools().map((t) => t.name).sort();

describe('profiles', () => {
  it('narrow servers and tools; why names the profile; setProfile switches at runtime; an unknown one is refused', async () => {
    const ws = h.workspace();
    const server = stdioFixtureConfig('basic-server');
    const file = ws.writeUserSettings({
      mcpServers: { a: server, b: server, c: server },
      mcp: { excluded: ['c'] },
      profiles: { research: { servers: ['a', 'c'], tools: ['mcp__a__echo', 'mcp__*__a*'] }, everything: {} },
    });
    const c = h.controller(ws, { profile: 'research' });
    await c.start();
    expect(c.profile).toBe('research');
    expect(row(c, 'a').state).toBe('connected');
    expect(registered(c)).toEqual(['mcp__a__add', 'mcp__a__echo']);
    // Left out by the profile.
    expect(row(c, 'b')).toMatchObject({ state: 'disabled', disabledBy: `profile "research" (${file})`, profile: 'research', pid: undefined });
    expect(c.toolUnavailableMessage('mcp__b__echo')).toBe(
      `Tool mcp__b__echo is unavailable: MCP server "b" is disabled by profile "research" (${file}). To fix: add "b" to the "servers" of profile "research", or use another profile (--profile NAME; setProfile() in the library).`,
    );
    // Kept by the profile, but still excluded: a profile never widens.
    expect(row(c, 'c').state).toBe('excluded');
    // A tool of a kept server that the profile's tools leave out.
    expect(c.toolUnavailableMessage('mcp__a__pid')).toBe(
      `Tool mcp__a__pid of MCP server "a" is not kept by profile "research" (${file}). To fix: add it to that profile's "tools", or use another profile (--profile NAME; setProfile() in the library).`,
    );
    await expect(c.callTool('mcp__a__pid')).rejects.toMatchObject({ code: 'unknown_tool' });

    await expect(c.setProfile('nope')).rejects.toMatchObject({ code: 'usage', message: 'no profile named "nope" is defined', hint: 'defined profiles: everything, research' });
    await c.setProfile('everything');
    await waitState(c, 'b', 'connected');
    await waitFor(() => registered(c).includes('mcp__a__pid') && registered(c).includes('mcp__b__pid'), 'every tool of a and b');
    expect(row(c, 'a').generation).toBe(1);
    await c.setProfile(undefined);
    expect(c.profile).toBeUndefined();
    expect(row(c, 'b').state).toBe('connected');
  });

  it('--profile on the command line: `tools` lists what the profile keeps, `why` names it', async () => {
    const ws = h.workspace();
    const server = stdioFixtureConfig('basic-server');
    const file = ws.writeUserSettings({ mcpServers: { a: server, b: server }, profiles: { small: { servers: ['a'], tools: ['mcp__a__echo'] } } });
    const args = ['--cwd', ws.root, '--approvals', ws.approvals, '--profile', 'small'];
    const tools = await cli(['tools', '--json', ...args], ws.env, ws.root);
    expect(tools.code).toBe(0);
    const listed = JSON.parse(tools.stdout) as { tools: { name: string }[]; skipped: { server: string; rawName: string; reason: string }[] };
    expect(listed.tools.map((t) => t.name)).toEqual(['mcp__a__echo']);
    expect(listed.skipped).toContainEqual(expect.objectContaining({ server: 'a', rawName: 'add', reason: `not kept by profile "small" (${file})` }));
    const why = await cli(['why', 'b', ...args], ws.env, ws.root);
    expect(why.stdout).toBe(`MCP server "b" is disabled by profile "small" (${file}).\nfix: add "b" to the "servers" of profile "small", or use another profile (--profile NAME; setProfile() in the library)\n`);
    const unknown = await cli(['why', 'a', '--cwd', ws.root, '--approvals', ws.approvals, '--profile', 'big'], ws.env, ws.root);
    expect(unknown.stdout).toContain('MCP server "a" is disabled by profile "big", which no settings file defines.');
  });

  it('permissions.deny hides tools by glob over registered names, in every file, and why names the file', async () => {
    const ws = h.workspace();
    const file = ws.writeUserSettings({ mcpServers: { a: stdioFixtureConfig('basic-server') }, permissions: { deny: ['mcp__a__e*', 'mcp__*__pid'] } });
    const c = h.controller(ws);
    await c.start();
    expect(registered(c)).toEqual(['mcp__a__add', 'mcp__a__v1_tool']);
    expect(c.toolUnavailableMessage('mcp__a__echo')).toBe(
      `Tool mcp__a__echo of MCP server "a" is hidden by permissions.deny in ${file}. To fix: take it out of that deny list if it should be used.`,
    );
    await expect(c.callTool('mcp__a__pid')).rejects.toMatchObject({ code: 'unknown_tool', message: expect.stringContaining('is hidden by permissions.deny') });
    expect(row(c, 'a').skippedTools).toContainEqual(expect.objectContaining({ rawName: 'env', reason: `hidden by permissions.deny in ${file}` }));
  });

  it('permissions.ask holds a call for onToolApproval; allow lets through; "always" is remembered for the workspace; without a hook the call is refused', async () => {
    const ws = h.workspace();
    const file = ws.writeUserSettings({ mcpServers: { a: stdioFixtureConfig('basic-server') }, permissions: { ask: ['mcp__a__*'], allow: ['mcp__a__add'] } });
    const state = join(ws.root, 'state.json');
    const asked: string[] = [];
    const answers = ['deny', 'always'] as const;
    const c = h.controller(ws, {
      workspaceStateFile: state,
      onToolApproval: (req) => {
        asked.push(`${req.tool} ${req.askedBy} ${JSON.stringify(req.arguments)}`);
        return answers[asked.length - 1] ?? 'deny';
      },
    });
    await c.start();
    expect((await c.callTool('mcp__a__add', { a: 1, b: 1 })).structuredContent).toEqual({ sum: 2 });
    expect(asked).toEqual([]);
    await expect(c.callTool('mcp__a__echo', { text: 'no' })).rejects.toMatchObject({ code: 'tool_denied', message: `Tool mcp__a__echo was not approved (permissions.ask in ${file})` });
    expect((await c.callTool('mcp__a__echo', { text: 'yes' })).content).toEqual([{ type: 'text', text: 'yes' }]);
    expect((await c.callTool('mcp__a__echo', { text: 'again' })).content).toEqual([{ type: 'text', text: 'again' }]);
    expect(asked).toEqual([`mcp__a__echo permissions.ask in ${file} {"text":"no"}`, `mcp__a__echo permissions.ask in ${file} {"text":"yes"}`]);
    expect(JSON.parse(readFileSync(state, 'utf8')).alwaysAllow).toEqual(['mcp__a__echo']);

    // Another controller of the workspace remembers "always"; one without a hook cannot ask.
    const next = h.controller(ws, { workspaceStateFile: state });
    await next.start();
    expect((await next.callTool('mcp__a__echo', { text: 'remembered' })).content).toEqual([{ type: 'text', text: 'remembered' }]);
    await expect(next.callTool('mcp__a__pid')).rejects.toMatchObject({
      code: 'tool_denied',
      message: `Tool mcp__a__pid needs your approval before each call (permissions.ask in ${file}), and this host cannot ask`,
    });
  });
});
