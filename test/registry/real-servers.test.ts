/**
 * The registry and the output contract fed with listings and results from
 * real stdio servers: our fixtures and published servers nobody here wrote.
 * Needs `npx tsc -p .` first (fixtures run from dist/).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { enforceOutputContract, OUTPUT_CONTRACT_META_KEY } from '../../src/registry/output-contract.js';
import { ToolRegistry } from '../../src/registry/registry.js';
import { closeAll, connectStdio, fixturePath, packagePath } from './stdio-client.js';

afterEach(closeAll);

function textOf(content: { type: string; text?: string }[]): string {
  const first = content[0];
  return first?.type === 'text' ? (first.text ?? '') : '';
}

describe('duplicate-tools-server', () => {
  it('a later generation listing a duplicate is rejected and the good generation stays exactly as it was', async () => {
    const registry = new ToolRegistry();
    const clean = await connectStdio(fixturePath('duplicate-tools-server'), [], { DUPLICATE: '0' });
    const first = registry.commit('dup', 1, { tools: await clean.tools(), prompts: await clean.prompts() });
    expect(first.ok).toBe(true);
    expect(registry.tools().map((t) => t.name)).toEqual(['mcp__dup__echo', 'mcp__dup__ping']);
    expect(registry.prompts().map((p) => p.name)).toEqual(['mcp__dup__greet']);
    const before = structuredClone({ tools: registry.tools(), prompts: registry.prompts(), skipped: registry.skippedOf('dup') });

    const bad = await connectStdio(fixturePath('duplicate-tools-server'));
    const badTools = await bad.tools();
    expect(badTools.filter((t) => t.name === 'echo')).toHaveLength(2);
    const second = registry.commit('dup', 2, { tools: badTools, prompts: await bad.prompts() });

    expect(second.ok).toBe(false);
    expect(!second.ok && second.error.code).toBe('tool_conflict');
    expect(!second.ok && second.error.message).toContain('"echo" more than once');
    expect({ tools: registry.tools(), prompts: registry.prompts(), skipped: registry.skippedOf('dup') }).toEqual(before);
    expect(registry.tools().every((t) => t.generation === 1)).toBe(true);
  });
});

describe('task-required-server', () => {
  it('registers the normal tool and skips the task-only one with the reason', async () => {
    const registry = new ToolRegistry();
    const s = await connectStdio(fixturePath('task-required-server'));
    const tools = await s.tools();
    expect(tools.map((t) => t.name)).toEqual(['quick', 'long_job']);
    const result = registry.commit('tasks', 1, { tools, prompts: [] });
    expect(result.ok).toBe(true);
    expect(registry.tools().map((t) => t.name)).toEqual(['mcp__tasks__quick']);
    expect(registry.skippedOf('tasks')).toEqual([{ rawName: 'long_job', reason: expect.stringContaining("execution.taskSupport is 'required'") }]);
  });
});

describe('bad-output-server', () => {
  it('conforming results pass unchanged; each way of breaking the outputSchema becomes an error naming it', async () => {
    const registry = new ToolRegistry();
    const s = await connectStdio(fixturePath('bad-output-server'));
    registry.commit('bad', 1, { tools: await s.tools(), prompts: [] });
    const report = registry.getTool('mcp__bad__report')!;
    const valid = registry.getTool('mcp__bad__valid_report')!;
    expect(report.outputSchema).toBeDefined();

    const good = await s.callRaw('valid_report');
    expect(enforceOutputContract(valid, good)).toBe(good);
    const goodToo = await s.callRaw('report');
    expect(enforceOutputContract(report, goodToo)).toBe(goodToo);

    const cases: [string, string][] = [
      ['missing', "mcp__bad__report returned structuredContent that breaks its outputSchema: (root) must have required property 'label'"],
      ['extra', 'mcp__bad__report returned structuredContent that breaks its outputSchema: (root) must NOT have additional properties ("debug")'],
      ['type', 'mcp__bad__report returned structuredContent that breaks its outputSchema: /count must be integer'],
      ['none', 'mcp__bad__report returned no structuredContent although it declares an outputSchema'],
    ];
    for (const [mode, message] of cases) {
      const raw = await s.callRaw('report', { break: mode });
      const checked = enforceOutputContract(report, raw);
      expect(checked.isError, mode).toBe(true);
      expect(textOf(checked.content), mode).toBe(message);
      expect(checked.content.slice(1), mode).toEqual(raw.content);
      expect(checked._meta?.[OUTPUT_CONTRACT_META_KEY], mode).toMatchObject({ tool: 'mcp__bad__report' });
    }

    const failed = await s.callRaw('report', { break: 'error' });
    expect(enforceOutputContract(report, failed)).toBe(failed);
  });

  it('the SDK client itself throws on such results, which is why callers check raw results', async () => {
    const s = await connectStdio(fixturePath('bad-output-server'));
    await s.tools(); // the SDK client caches output validators from the listing
    await expect(s.client.callTool({ name: 'report', arguments: { break: 'type' } })).rejects.toThrow(/output schema/);
  });
});

describe('@modelcontextprotocol/server-everything', () => {
  it('its outputSchema tool result passes; a tampered copy is caught; its task-only tool is skipped', async () => {
    const registry = new ToolRegistry();
    const s = await connectStdio(packagePath('@modelcontextprotocol/server-everything/dist/index.js'), ['stdio']);
    const result = registry.commit('everything', 1, { tools: await s.tools(), prompts: await s.prompts() });
    expect(result.ok).toBe(true);
    expect(registry.skippedOf('everything')).toEqual([{ rawName: 'simulate-research-query', reason: expect.stringContaining('taskSupport') }]);
    expect(registry.promptsOf('everything').length).toBeGreaterThan(0);

    const tool = registry.getTool('mcp__everything__get-structured-content')!;
    expect(tool.outputSchema?.required).toEqual(['temperature', 'conditions', 'humidity']);
    const real = await s.callRaw('get-structured-content', { location: 'Chicago' });
    expect(real.structuredContent).toBeDefined();
    expect(enforceOutputContract(tool, real)).toBe(real);

    const { humidity: _h, ...withoutHumidity } = real.structuredContent as Record<string, unknown>;
    const tampered = enforceOutputContract(tool, { ...real, structuredContent: { ...withoutHumidity, windSpeed: 3 } });
    expect(tampered.isError).toBe(true);
    expect(textOf(tampered.content)).toContain("(root) must have required property 'humidity'");
    expect(textOf(tampered.content)).toContain('("windSpeed")');
  });
});

describe('@modelcontextprotocol/server-filesystem', () => {
  let root: string;
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'registry-fs-'));
    writeFileSync(join(root, 'notes.txt'), 'hello\n');
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('every tool is registered with its outputSchema and real results satisfy it', async () => {
    const registry = new ToolRegistry();
    const s = await connectStdio(packagePath('@modelcontextprotocol/server-filesystem/dist/index.js'), [root]);
    const tools = await s.tools();
    expect(tools.length).toBeGreaterThan(5);
    expect(registry.commit('fs', 1, { tools, prompts: [] }, { excludeTools: ['write_file', 'edit_file', 'move_file'] }).ok).toBe(true);
    expect(registry.toolsOf('fs').every((t) => t.outputSchema !== undefined)).toBe(true);
    expect(registry.getTool('mcp__fs__write_file')).toBeUndefined();
    expect(registry.skippedOf('fs').map((x) => x.rawName)).toEqual(['write_file', 'edit_file', 'move_file']);

    const calls: [string, Record<string, unknown>][] = [
      ['read_text_file', { path: join(root, 'notes.txt') }],
      ['list_directory', { path: root }],
      ['list_allowed_directories', {}],
      ['get_file_info', { path: join(root, 'notes.txt') }],
      ['directory_tree', { path: root }],
      ['search_files', { path: root, pattern: '*.txt' }],
    ];
    for (const [name, args] of calls) {
      const tool = registry.getTool(`mcp__fs__${name}`)!;
      const raw = await s.callRaw(name, args);
      expect(raw.isError, name).toBeFalsy();
      expect(enforceOutputContract(tool, raw), name).toBe(raw);
    }

    const read = registry.getTool('mcp__fs__read_text_file')!;
    const wrong = enforceOutputContract(read, { content: [{ type: 'text', text: 'x' }], structuredContent: { content: 42 } });
    expect(textOf(wrong.content)).toBe('mcp__fs__read_text_file returned structuredContent that breaks its outputSchema: /content must be string');
  });
});
