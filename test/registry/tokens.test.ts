/**
 * What each tool costs in a model's context: every registered tool carries
 * the `o200k_base` token count of its definition, status rows carry each
 * server's total, and `tools --json` / `status --json` print them. Against
 * published servers over stdio.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { countTokens, definitionText } from '../../src/registry/tokens.js';
import { modulePath } from '../helpers/fixtures.js';
import { cli, Harness, row } from '../controller/support.js';

const h = new Harness();
afterAll(() => h.cleanup());

const memory = modulePath('@modelcontextprotocol/server-memory/dist/index.js');
const filesystem = modulePath('@modelcontextprotocol/server-filesystem/dist/index.js');

describe('tool definition tokens', () => {
  it('counts each tool’s name, description and input schema, and sums them per server', async () => {
    const ws = h.workspace();
    ws.writeUserSettings({
      mcpServers: {
        memory: { command: process.execPath, args: [memory], env: { MEMORY_FILE_PATH: `${ws.root}/memory.jsonl` } },
        files: { command: process.execPath, args: [filesystem, ws.root] },
      },
    });
    const c = h.controller(ws);
    await c.start();
    const tools = c.tools();
    expect(tools.length).toBeGreaterThan(15);
    for (const t of tools) {
      expect(t.tokens).toBe(countTokens(JSON.stringify({ name: t.name, description: t.description ?? '', input_schema: t.inputSchema })));
      expect(t.tokens).toBeGreaterThan(10);
    }
    // A real definition: name + description + schema, far more than the name alone.
    const read = c.tools().find((t) => t.rawName === 'read_text_file')!;
    expect(read.tokens).toBeGreaterThan(countTokens(read.name) + countTokens(read.description ?? ''));
    for (const server of ['memory', 'files']) {
      expect(row(c, server).tokens).toBe(tools.filter((t) => t.server === server).reduce((n, t) => n + t.tokens, 0));
    }
    // JSON carries it like any other field.
    expect(JSON.parse(JSON.stringify(read)).tokens).toBe(read.tokens);
    expect(definitionText(read)).toContain('"input_schema"');
  });

  it('`tools --json` shows each tool’s tokens, `status` each server’s and the total', async () => {
    const ws = h.workspace();
    ws.writeUserSettings({ mcpServers: { memory: { command: process.execPath, args: [memory], env: { MEMORY_FILE_PATH: `${ws.root}/memory.jsonl` } } } });
    const base = ['--cwd', ws.root, '--approvals', ws.approvals];
    const tools = await cli(['tools', '--json', ...base], ws.env, ws.root);
    expect(tools.code).toBe(0);
    const listed = (JSON.parse(tools.stdout) as { tools: { name: string; tokens: number }[] }).tools;
    expect(listed.length).toBeGreaterThan(5);
    expect(listed.every((t) => Number.isInteger(t.tokens) && t.tokens > 0)).toBe(true);
    const sum = listed.reduce((n, t) => n + t.tokens, 0);

    const status = await cli(['status', '--json', ...base], ws.env, ws.root);
    const parsed = JSON.parse(status.stdout) as { servers: { name: string; tokens: number }[]; totalTokens: number };
    expect(parsed.servers.find((s) => s.name === 'memory')!.tokens).toBe(sum);
    expect(parsed.totalTokens).toBe(sum);

    const text = await cli(['status', ...base], ws.env, ws.root);
    expect(text.stdout).toMatch(/TOKENS/);
    expect(text.stdout).toContain(`total: ${listed.length} tools, ${sum} tokens (o200k_base)`);
  });
});
