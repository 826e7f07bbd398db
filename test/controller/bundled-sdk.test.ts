/**
 * rolldown.config.mjs: the published entry carries its own copy of the SDK v2
 * and zod. A host that has its own SDK (v2 or v1) and passes its server
 * instances in (`sdkServers`) must still be served by the bundled client: a
 * host process imports the package entry and both SDKs from node_modules,
 * lists and calls a tool of each, the v2 one checked against its outputSchema.
 * The bundle's zod compiles no parsers, and the host's zod keeps its settings.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { repoRoot } from '../helpers/fixtures.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const HOST = `
  import { writeFileSync } from 'node:fs';
  import { join } from 'node:path';
  import { createMcpController } from 'mcp-reconciler';
  import { McpServer as V2 } from '@modelcontextprotocol/server';
  import { McpServer as V1 } from '@modelcontextprotocol/sdk/server/mcp.js';
  import * as z from 'zod';
  const dir = process.env.HOST_DIR;
  writeFileSync(join(dir, 'settings.json'), JSON.stringify({ mcpServers: {} }));
  const v2 = new V2({ name: 'v2', version: '1.0.0' });
  v2.registerTool('add', { description: 'Adds.', inputSchema: z.object({ a: z.number(), b: z.number() }), outputSchema: z.object({ sum: z.number() }) },
    ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }], structuredContent: { sum: a + b } }));
  const v1 = new V1({ name: 'v1', version: '1.0.0' });
  v1.registerTool('echo', { description: 'Echoes.', inputSchema: { text: z.string() } }, ({ text }) => ({ content: [{ type: 'text', text }] }));
  const c = createMcpController({ cwd: dir, sources: [{ scope: 'user', path: join(dir, 'settings.json') }], approvals: join(dir, 'approvals.json'),
    watch: false, listingCache: false, processStateFile: false, sdkServers: { v2, v1 } });
  try {
    await c.start();
    const out = { states: c.status().map((s) => s.name + ' ' + s.state), tools: c.tools().map((t) => t.name).sort(),
      add: await c.callTool('mcp__v2__add', { a: 2, b: 3 }), echo: await c.callTool('mcp__v1__echo', { text: 'hi' }),
      hostZodConfig: { ...z.config() } };
    process.stdout.write(JSON.stringify(out));
  } finally { await c.dispose(); }
`;

describe('the published entry beside a host’s own SDK', () => {
  it('serves in-process servers built with the host’s SDK v2 and v1', () => {
    const dir = mkdtempSync(join(tmpdir(), 'bundled-sdk-'));
    dirs.push(dir);
    const out = JSON.parse(
      execFileSync(process.execPath, ['--input-type=module', '-e', HOST], { cwd: repoRoot, env: { ...process.env, HOST_DIR: dir }, encoding: 'utf8', timeout: 60_000 }),
    );
    expect(out.states.sort()).toEqual(['v1 connected', 'v2 connected']);
    expect(out.tools).toEqual(['mcp__v1__echo', 'mcp__v2__add']);
    expect(out.add).toEqual({ content: [{ type: 'text', text: '5' }], structuredContent: { sum: 5 } });
    expect(out.echo).toEqual({ content: [{ type: 'text', text: 'hi' }] });
    // zod's switch lives on globalThis: the bundle must not have flipped it for the host.
    expect(out.hostZodConfig.jitless).toBeUndefined();
  });

  it("carries zod without the generator of its eval-compiled object parsers (the host's zod keeps its own)", () => {
    const lib = join(repoRoot, 'dist/lib');
    const bundle = readdirSync(lib)
      .filter((f) => f.endsWith('.js'))
      .map((f) => readFileSync(join(lib, f), 'utf8'))
      .join('\n');
    // The parsers zod generates start with this line (zod/v4/core/schemas.js).
    const generated = 'const newResult = {};';
    expect(bundle).toContain('safeParse');
    expect(bundle).not.toContain(generated);
    expect(readFileSync(join(repoRoot, 'node_modules/zod/v4/core/schemas.js'), 'utf8')).toContain(generated);
  });
});
