/**
 * Elicitation, roots and sampling through the public API, with an
 * in-process SDK server whose tools ask the client (docs/oauth.md).
 */
import { pathToFileURL } from 'node:url';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { RootsListChangedNotificationSchema, type ClientCapabilities } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import type { McpController, McpControllerOptions } from '../../src/index.js';
import { bareController, disposedAfterEach } from '../helpers/bare-controller.js';
import { tempDirEach } from '../helpers/temp-dir.js';

interface Probe {
  server: McpServer;
  capabilities(): ClientCapabilities | undefined;
  rootsChanged: number;
}

/** A server whose tools elicit, list roots and sample. */
function probeServer(): Probe {
  const server = new McpServer({ name: 'probe', version: '1.0.0' });
  const probe: Probe = { server, capabilities: () => server.server.getClientCapabilities(), rootsChanged: 0 };
  server.server.setNotificationHandler(RootsListChangedNotificationSchema, () => {
    probe.rootsChanged++;
  });
  server.registerTool('ask', { description: 'asks for a name and an age' }, async () => {
    const answer = await server.server.elicitInput({
      message: 'Who are you?',
      requestedSchema: {
        type: 'object',
        properties: {
          name: { type: 'string', minLength: 2 },
          age: { type: 'integer', default: 30 },
          status: { type: 'string', enum: ['active', 'inactive'], default: 'active' },
        },
        required: ['name'],
      },
    });
    return { content: [{ type: 'text', text: JSON.stringify(answer) }] };
  });
  server.registerTool('ask_url', { description: 'asks the user to visit a URL' }, async () => {
    const answer = await server.server.elicitInput({ mode: 'url', message: 'Sign the form', url: 'https://example.com/form', elicitationId: 'e1' });
    return { content: [{ type: 'text', text: JSON.stringify(answer) }] };
  });
  server.registerTool('roots', { description: 'lists roots' }, async () => {
    const { roots } = await server.server.listRoots();
    return { content: [{ type: 'text', text: JSON.stringify(roots) }] };
  });
  server.registerTool('sample', { description: 'asks the host model' }, async () => {
    const r = await server.server.createMessage({ messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }], maxTokens: 5 });
    return { content: [{ type: 'text', text: JSON.stringify(r.content) }] };
  });
  return probe;
}

function textOf(result: { content?: unknown }): string {
  return ((result.content as { text?: string }[] | undefined)?.[0]?.text ?? '') as string;
}

describe('client capabilities (elicitation, roots, sampling)', () => {
  const tmp = tempDirEach('mcp-caps-');
  const controllers = disposedAfterEach();

  async function connect(probe: Probe, opts: Partial<McpControllerOptions>): Promise<McpController> {
    const c = bareController(tmp.path, opts);
    controllers.push(c);
    await c.addRuntimeServer('probe', { type: 'sdk', instance: probe.server });
    await c.start();
    expect(c.status()[0]?.state).toBe('connected');
    return c;
  }

  it('declares nothing it cannot answer: no elicitation or sampling without a handler', async () => {
    const probe = probeServer();
    const c = await connect(probe, {});
    expect(probe.capabilities()?.elicitation).toBeUndefined();
    expect(probe.capabilities()?.sampling).toBeUndefined();
    expect(probe.capabilities()?.roots).toEqual({ listChanged: true });
    const result = await c.callTool('mcp__probe__ask', {});
    expect(result.isError).toBe(true);
  });

  it('round-trips a form elicitation: the host answers part, the schema defaults fill the rest', async () => {
    const probe = probeServer();
    const seen: { server: string; message: string }[] = [];
    const c = await connect(probe, {
      onElicitation: (server, request) => {
        seen.push({ server, message: request.message });
        return { action: 'accept', content: { name: 'Ada' } };
      },
    });
    expect(probe.capabilities()?.elicitation).toEqual({ form: { applyDefaults: true }, url: {} });
    const answer = JSON.parse(textOf(await c.callTool('mcp__probe__ask', {}))) as unknown;
    expect(answer).toEqual({ action: 'accept', content: { name: 'Ada', age: 30, status: 'active' } });
    expect(seen).toEqual([{ server: 'probe', message: 'Who are you?' }]);
  });

  it('refuses to send an answer that breaks the requested schema', async () => {
    const probe = probeServer();
    const c = await connect(probe, { onElicitation: () => ({ action: 'accept', content: { name: 'A', age: 'old' } }) });
    const result = await c.callTool('mcp__probe__ask', {});
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/does not match the requested schema/);
  });

  it('passes decline through and answers URL mode', async () => {
    const probe = probeServer();
    const c = await connect(probe, { onElicitation: (_s, r) => (r.mode === 'url' ? { action: 'accept' } : { action: 'decline' }) });
    expect(JSON.parse(textOf(await c.callTool('mcp__probe__ask', {})))).toEqual({ action: 'decline' });
    expect(JSON.parse(textOf(await c.callTool('mcp__probe__ask_url', {})))).toEqual({ action: 'accept' });
  });

  it('offers the workspace folder as root and announces a change', async () => {
    const probe = probeServer();
    const c = await connect(probe, {});
    expect(JSON.parse(textOf(await c.callTool('mcp__probe__roots', {})))).toEqual([{ uri: pathToFileURL(c.config().root).href, name: expect.any(String) }]);
    const changed = new Promise<void>((resolve) => {
      probe.server.server.setNotificationHandler(RootsListChangedNotificationSchema, () => resolve());
    });
    await c.setRoots([{ uri: 'file:///elsewhere', name: 'elsewhere' }]);
    await changed;
    expect(JSON.parse(textOf(await c.callTool('mcp__probe__roots', {})))).toEqual([{ uri: 'file:///elsewhere', name: 'elsewhere' }]);
  });

  it('answers sampling through onSampling, and declares no roots when the host turns them off', async () => {
    const probe = probeServer();
    const c = await connect(probe, {
      roots: false,
      onSampling: (server) => ({ role: 'assistant', model: 'host-model', content: { type: 'text', text: `from host for ${server}` } }),
    });
    expect(probe.capabilities()?.sampling).toEqual({});
    expect(probe.capabilities()?.roots).toBeUndefined();
    expect(JSON.parse(textOf(await c.callTool('mcp__probe__sample', {})))).toEqual({ type: 'text', text: 'from host for probe' });
  });
});
