import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { InputSpec } from '../../src/config/load.js';
import { startHttpFixture, type HttpFixture } from '../fixtures/http-fixture.js';
import { Harness, row } from './support.js';

const h = new Harness();
const fixtures: HttpFixture[] = [];

afterAll(async () => {
  await h.cleanup();
  await Promise.all(fixtures.map((f) => f.close()));
});

function write(path: string, doc: unknown): void {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, JSON.stringify(doc));
}

describe('host formats through the controller', () => {
  it('cursor: a url that answers the streamable POST with 404 is connected over SSE, and status says so', async () => {
    const f = await startHttpFixture();
    fixtures.push(f);
    const ws = h.workspace();
    write(join(ws.home, '.cursor', 'mcp.json'), { mcpServers: { legacy: { url: f.sseUrl }, modern: { url: f.url } } });
    const c = h.controller(ws, { preset: 'cursor' });
    await c.start();
    expect(row(c, 'legacy')).toMatchObject({ state: 'connected', transport: 'sse' });
    expect(row(c, 'modern')).toMatchObject({ state: 'connected', transport: 'http' });
  });

  it('vscode: the resolveInput hook answers ${input:…} and the server connects', async () => {
    const f = await startHttpFixture();
    fixtures.push(f);
    const ws = h.workspace();
    // XDG_CONFIG_HOME is the harness home: VS Code's user folder on Linux.
    write(join(ws.home, 'Code', 'User', 'mcp.json'), {
      inputs: [{ type: 'promptString', id: 'endpoint', description: 'Server URL' }],
      servers: { asked: { type: 'http', url: '${input:endpoint}' } },
    });
    const asked: [string, InputSpec][] = [];
    const c = h.controller(ws, {
      preset: 'vscode',
      resolveInput: (id, spec) => {
        asked.push([id, spec]);
        return f.url;
      },
    });
    await c.start();
    expect(asked.map(([id, spec]) => [id, spec.description])).toEqual([['endpoint', 'Server URL']]);
    expect(row(c, 'asked')).toMatchObject({ state: 'connected', transport: 'http' });
  });
});
