/**
 * Definition drift (docs/tool-definitions.md): a server whose tools change
 * after they were accepted (a new tool, a known tool's new description) is
 * reported in `status`, and with `pinToolDefinitions` the change is held
 * back — the accepted definition stays registered and callable — until
 * `approveTools` accepts the server's current definitions. A real stdio
 * fixture changes its own tools on request.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { stdioFixtureConfig } from '../helpers/fixtures.js';
import { waitFor } from '../helpers/processes.js';
import { firstText, Harness, row, toolNames } from '../controller/support.js';
import type { McpController } from '../../src/controller/controller.js';

const h = new Harness();
afterAll(() => h.cleanup());

const describedAs = (c: McpController, name: string): string | undefined => c.tools().find((t) => t.name === name)?.description;

describe('tool definition drift', () => {
  it('with pinToolDefinitions, holds a new tool and a changed description back until approveTools', async () => {
    const ws = h.workspace();
    const c = h.controller(ws, { listingCache: false });
    await c.addRuntimeServer('live', { ...stdioFixtureConfig('list-changed-server'), pinToolDefinitions: true });
    await c.start();
    expect(row(c, 'live').toolDrift).toBeUndefined();

    // A tool added after acceptance is recorded, not registered.
    await c.callTool('mcp__live__add_tool', { name: 'late' });
    await waitFor(() => row(c, 'live').toolDrift?.added.includes('late') === true, 'the new tool to be recorded as drift');
    expect(row(c, 'live').toolDrift).toMatchObject({ added: ['late'], changed: [], held: true });
    expect(toolNames(c)).not.toContain('mcp__live__late');
    expect(c.toolUnavailableMessage('mcp__live__late')).toMatch(/held back.*approve live --tool-definitions/);

    expect(c.approveTools('live')).toBe(true);
    expect(toolNames(c)).toContain('mcp__live__late');
    expect(row(c, 'live').toolDrift).toBeUndefined();

    // A known tool's new description: the accepted one stays, and the tool stays callable.
    await c.callTool('mcp__live__describe_tool', { name: 'late', description: 'Now does something else.' });
    await waitFor(() => row(c, 'live').toolDrift?.changed.includes('late') === true, 'the changed description to be recorded');
    expect(describedAs(c, 'mcp__live__late')).toBe('Added at runtime.');
    expect(firstText(await c.callTool('mcp__live__late', {}))).toBe('late');
    expect(c.toolUnavailableMessage('mcp__live__late')).toMatch(/definition you accepted.*held back/);

    c.approveTools('live');
    expect(describedAs(c, 'mcp__live__late')).toBe('Now does something else.');
    expect(row(c, 'live').toolDrift).toBeUndefined();
  });

  it('without a pin, registers the change, emits tools-changed with updated and records the drift', async () => {
    const ws = h.workspace();
    const c = h.controller(ws, { listingCache: false });
    await c.addRuntimeServer('live', stdioFixtureConfig('list-changed-server'));
    await c.start();
    const changes: { updated: string[]; added: string[] }[] = [];
    c.on('tools-changed', (e) => changes.push(e));
    await c.callTool('mcp__live__add_tool', { name: 'late' });
    await waitFor(() => toolNames(c).includes('mcp__live__late'), 'the new tool to be registered');
    expect(row(c, 'live').toolDrift).toMatchObject({ added: ['late'], changed: [], held: false });
    c.approveTools('live');
    expect(row(c, 'live').toolDrift).toBeUndefined();

    await c.callTool('mcp__live__describe_tool', { name: 'late', description: 'Changed.' });
    await waitFor(() => describedAs(c, 'mcp__live__late') === 'Changed.', 'the new description');
    expect(changes).toContainEqual(expect.objectContaining({ updated: ['mcp__live__late'] }));
    expect(row(c, 'live').toolDrift).toMatchObject({ changed: ['late'], added: [], held: false });
  });
});
