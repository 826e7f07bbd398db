/**
 * `permissions` inside a server entry (docs/manage.md): globs over that
 * server's tool names (bare or `mcp__<server>__<tool>`) and annotation
 * rules, applied with the settings files' `permissions`. A deny at either
 * level hides the tool and `why` names the level and file; an `allow` lifts
 * an `ask` of its own level or a broader one, never a narrower one. Real
 * fixture servers over stdio.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { ToolApprovalRequest } from '../../src/controller/tool-policy.js';
import { stdioFixtureConfig } from '../helpers/fixtures.js';
import { cli, Harness, row, waitState } from './support.js';

const h = new Harness();
afterAll(() => h.cleanup());

const registered = (c: { tools(): { name: string }[] }, server: string) =>
  c
    .tools()
    .map((t) => t.name)
    .filter((n) => n.startsWith(`mcp__${server}__`))
    .sort();

describe('per-server permissions', () => {
  it("an entry's deny hides its own tools only; why names the server's entry and the file, and every level that denies", async () => {
    const ws = h.workspace('mcp-srvperm-');
    const file = ws.writeUserSettings({
      permissions: { deny: ['mcp__*__add'] },
      mcpServers: {
        a: { ...stdioFixtureConfig('basic-server'), permissions: { deny: ['e*', 'mcp__a__pid', 'add', 'mcp__b__v1_tool'] } },
        b: stdioFixtureConfig('basic-server'),
      },
    });
    const c = h.controller(ws);
    await c.start();
    await waitState(c, 'a', 'connected');
    await waitState(c, 'b', 'connected');
    expect(registered(c, 'a')).toEqual(['mcp__a__v1_tool']);
    expect(registered(c, 'b')).toEqual(['mcp__b__echo', 'mcp__b__env', 'mcp__b__pid', 'mcp__b__v1_tool']);
    expect(c.toolUnavailableMessage('mcp__a__echo')).toBe(
      `Tool mcp__a__echo of MCP server "a" is hidden by the permissions.deny of server "a" in ${file}. To fix: take it out of that deny list if it should be used.`,
    );
    expect(row(c, 'a').skippedTools).toContainEqual(expect.objectContaining({ rawName: 'add', reason: `hidden by permissions.deny in ${file} and the permissions.deny of server "a" in ${file}` }));
    await expect(c.callTool('mcp__a__pid')).rejects.toMatchObject({ code: 'unknown_tool', message: expect.stringContaining('permissions.deny of server "a"') });
    const why = await cli(['why', 'mcp__a__env', '--cwd', ws.root, '--approvals', ws.approvals], ws.env, ws.root);
    expect(why.stdout).toContain(`is hidden by the permissions.deny of server "a" in ${file}`);
  });

  it('a deny at either level hides; an allow lifts an ask of its own level or a broader one, never a narrower one; annotation rules', async () => {
    const ws = h.workspace('mcp-srvperm-');
    const file = ws.writeUserSettings({
      permissions: { ask: ['mcp__*__*'], allow: ['readOnlyHint', 'mcp__x__delete_*'], deny: ['mcp__y__delete_file'] },
      mcpServers: {
        // Its own ask for destructive tools is narrower than the settings' allow of delete_*.
        x: { ...stdioFixtureConfig('annotated-server'), permissions: { ask: ['destructiveHint'] } },
        // Its own allow lifts the settings' broader ask; its own deny of read_file beats the settings' readOnlyHint allow.
        y: { ...stdioFixtureConfig('annotated-server'), permissions: { allow: ['write_file', 'delete_file'], deny: ['mcp__y__read_file'] } },
      },
    });
    const asked: string[] = [];
    const c = h.controller(ws, {
      onToolApproval: (req: ToolApprovalRequest) => {
        asked.push(`${req.tool}: ${req.askedBy}`);
        return 'allow';
      },
    });
    await c.start();
    await waitState(c, 'x', 'connected');
    await waitState(c, 'y', 'connected');
    const call = async (tool: string) => {
      const before = asked.length;
      const result = await c.callTool(tool);
      expect(result.content).toEqual([{ type: 'text', text: tool.split('__')[2] }]);
      return asked.slice(before);
    };
    // The settings' readOnlyHint allow lifts the settings' ask.
    expect(await call('mcp__x__read_file')).toEqual([]);
    // The settings' allow of delete_* does not lift x's own (narrower) ask of destructive tools.
    expect(await call('mcp__x__delete_file')).toEqual([`mcp__x__delete_file: permissions.ask in ${file} and the permissions.ask of server "x" in ${file}`]);
    expect(await call('mcp__x__write_file')).toEqual([`mcp__x__write_file: permissions.ask in ${file}`]);
    // y's own allow lifts the broader ask; a deny anywhere hides, whatever allows it.
    expect(await call('mcp__y__write_file')).toEqual([]);
    expect(registered(c, 'y')).toEqual(['mcp__y__write_file']);
    expect(c.toolUnavailableMessage('mcp__y__read_file')).toContain(`is hidden by the permissions.deny of server "y" in ${file}`);
    expect(c.toolUnavailableMessage('mcp__y__delete_file')).toContain(`is hidden by permissions.deny in ${file}`);
  });
});
