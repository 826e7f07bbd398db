/**
 * The gateway's 2026-07-28 lane asks its client what managed servers ask
 * (SPEC §15): that revision has no server-to-client requests, so a managed
 * server's elicitation or sampling during a call, and a `permissions.ask`
 * approval (docs/manage.md), come back as input-required results, and the
 * client's retry with the answers finishes the call. A real SDK v2 client
 * pinned to 2026-07-28 (which fulfils input-required results through its
 * elicitation/sampling handlers) talks to `serve --http` and `serve --stdio`
 * (the built binary); the approval is asked of a 2025 client too, as an
 * `elicitation/create` request. Questions during `prompts/get` and
 * `resources/read` go the same way on each lane, and a URL elicitation's
 * `notifications/elicitation/complete` reaches the 2025 client that was asked.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2, type Transport as TransportV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema, ElicitationCompleteNotificationSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultWorkspaceStatePath } from '../../src/config/workspace-state.js';
import { fixturePath } from '../helpers/fixtures.js';
import { waitFor } from '../helpers/processes.js';
import { cliMain, MARKER, startServeHttp, textOf, Workspace, type ServeProcess } from './support.js';

const MODERN = '2026-07-28';

type Elicited = { message: string; requestedSchema?: unknown; mode?: string };
type Answer = { action: 'accept' | 'decline' | 'cancel'; content?: Record<string, unknown> };

/** What the test's client was asked, and how it answers next. */
interface Asker {
  asked: Elicited[];
  sampled: unknown[];
  answer: (q: Elicited) => Answer;
}

function workspace(): Workspace {
  const ws = new Workspace();
  const env = { [MARKER]: ws.mark };
  writeFileSync(
    ws.userConfig,
    JSON.stringify({
      mcpServers: {
        travel: { command: process.execPath, args: [fixturePath('elicit-server')], env },
        rich: { command: process.execPath, args: [fixturePath('v2-rich-server')], env },
        ask: { command: process.execPath, args: [fixturePath('v2-ask-server')], env },
        a: ws.server('1'),
      },
      permissions: { ask: ['mcp__a__echo'] },
    }),
  );
  return ws;
}

async function connectV2(transport: TransportV2, asker: Asker, capabilities: Record<string, unknown> = { elicitation: { form: {} }, sampling: {} }): Promise<ClientV2> {
  const client = new ClientV2({ name: 'input-required-test', version: '1.0.0' }, { capabilities, versionNegotiation: { mode: { pin: MODERN } } });
  if (capabilities.elicitation) {
    client.setRequestHandler('elicitation/create', (request) => {
      const q = request.params as Elicited;
      asker.asked.push(q);
      return asker.answer(q) as never;
    });
  }
  if (capabilities.sampling) {
    client.setRequestHandler('sampling/createMessage', (request) => {
      asker.sampled.push(request.params);
      return { role: 'assistant', model: 'test-model', content: { type: 'text', text: 'five seven five' } } as never;
    });
  }
  await client.connect(transport, { timeout: 30_000 });
  return client;
}

const CALL = { timeout: 60_000 };

/** Each stdio client starts its own gateway and its four servers: a loaded machine needs room. */
const SLOW = { timeout: 180_000 };

/** The text of a prompt result's first message. */
const promptText = (result: { messages: Array<{ content: unknown }> }): string => (result.messages[0]?.content as { text?: string } | undefined)?.text ?? '';

function suite(kind: 'http' | 'stdio'): void {
  describe(`serve --${kind}, a 2026-07-28 client`, SLOW, () => {
    const ws = workspace();
    const open: Array<() => Promise<unknown>> = [];
    let serve: ServeProcess | undefined;
    let url = '';
    let token = '';

    beforeAll(async () => {
      if (kind === 'http') ({ serve, url, token } = await startServeHttp(ws));
    });
    afterAll(async () => {
      for (const close of open) await close();
      await serve?.stop();
      expect(await ws.cleanup()).toBe(0);
    });

    const connect = async (asker: Asker, capabilities?: Record<string, unknown>): Promise<ClientV2> => {
      const transport =
        kind === 'http'
          ? new HttpV2(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } })
          : new StdioV2({ command: process.execPath, args: [cliMain, 'serve', '--stdio', ...ws.args()], env: ws.env() as Record<string, string>, stderr: 'pipe' });
      const client = await connectV2(transport, asker, capabilities);
      open.push(() => client.close().catch(() => undefined));
      return client;
    };
    const asker = (answer: Asker['answer']): Asker => ({ asked: [], sampled: [], answer });

    it('a managed server’s elicitation during a call round-trips through an input-required result', async () => {
      const a = asker(() => ({ action: 'accept', content: { date: '2026-12-24', class: 'business' } }));
      const client = await connect(a);
      const booked = await client.callTool({ name: 'mcp__travel__book', arguments: {} }, CALL);
      expect(a.asked.map((q) => q.message)).toEqual(['Which flight?']);
      // The managed server got the answer, with the schema's default filled in on the way.
      expect(JSON.parse(textOf(booked))).toEqual({ action: 'accept', content: { date: '2026-12-24', class: 'business', seats: 2 } });

      // A v2 server that asks with its own input-required result (the 2026-07-28 wire upstream too).
      const b = asker(() => ({ action: 'accept', content: { ok: true } }));
      const other = await connect(b);
      expect(textOf(await other.callTool({ name: 'mcp__rich__confirm', arguments: {} }, CALL))).toBe('confirmed');
      expect(b.asked.map((q) => q.message)).toEqual(['Proceed?']);

      const declined = await connect(asker(() => ({ action: 'decline' })));
      expect(JSON.parse(textOf(await declined.callTool({ name: 'mcp__travel__book', arguments: {} }, CALL)))).toEqual({ action: 'decline' });
    });

    it('a managed server’s question during prompts/get and resources/read round-trips likewise', async () => {
      const a = asker((q) => ({ action: 'accept', content: { city: q.message === 'Which city?' ? 'Porto' : 'Lisbon' } }));
      const client = await connect(a);
      // A 2025 server's elicitation while its prompt is got, its sampling while its resource is read.
      const trip = await client.getPrompt({ name: 'mcp__travel__trip' }, CALL);
      expect(JSON.parse(promptText(trip))).toEqual({ action: 'accept', content: { city: 'Lisbon' } });
      const quote = await client.readResource({ uri: 'travel://quote' }, CALL);
      expect(quote.contents).toEqual([{ uri: 'travel://quote', text: 'test-model: five seven five' }]);
      // A v2 server's own input-required results, likewise.
      const plan = await client.getPrompt({ name: 'mcp__ask__plan' }, CALL);
      expect(promptText(plan)).toBe('Plan for Porto');
      const pick = await client.readResource({ uri: 'ask://pick' }, CALL);
      expect(pick.contents).toEqual([{ uri: 'ask://pick', text: 'picked: five seven five' }]);
      expect(a.asked.map((q) => q.message)).toEqual(['Where to?', 'Which city?']);
      expect(a.sampled.map((q) => JSON.stringify(q))).toEqual([expect.stringContaining('A price for the trip'), expect.stringContaining('Pick one')]);
    });

    it('a managed server’s sampling request round-trips likewise', async () => {
      const a = asker(() => ({ action: 'decline' }));
      const client = await connect(a);
      const haiku = await client.callTool({ name: 'mcp__travel__haiku', arguments: {} }, CALL);
      expect(textOf(haiku)).toBe('test-model: five seven five');
      expect(a.sampled).toHaveLength(1);
      expect(JSON.stringify(a.sampled[0])).toContain('A haiku about gateways');
    });

    it('a permissions.ask tool asks the client: accept runs it, decline is tool_denied, always is remembered', async () => {
      let decision: Answer = { action: 'accept', content: { decision: 'allow' } };
      const a = asker(() => decision);
      const client = await connect(a);
      expect(textOf(await client.callTool({ name: 'mcp__a__echo', arguments: { text: 'once' } }, CALL))).toBe('once');
      expect(a.asked).toHaveLength(1);
      expect(a.asked[0]!.message).toMatch(/Allow the tool mcp__a__echo to run with \{"text":"once"\}\? \(permissions\.ask in /);

      decision = { action: 'decline' };
      const denied = await client.callTool({ name: 'mcp__a__echo', arguments: { text: 'no' } }, CALL);
      expect(denied.isError).toBe(true);
      expect(textOf(denied)).toMatch(/^tool_denied: Tool mcp__a__echo was not approved/);

      decision = { action: 'accept', content: { decision: 'deny' } };
      expect(textOf(await client.callTool({ name: 'mcp__a__echo', arguments: { text: 'no' } }, CALL))).toMatch(/^tool_denied/);

      decision = { action: 'accept', content: { decision: 'always' } };
      expect(textOf(await client.callTool({ name: 'mcp__a__echo', arguments: { text: 'always' } }, CALL))).toBe('always');
      const asked = a.asked.length;
      expect(textOf(await client.callTool({ name: 'mcp__a__echo', arguments: { text: 'quiet' } }, CALL))).toBe('quiet');
      expect(a.asked).toHaveLength(asked);
      // Remembered for the workspace the way the library's onToolApproval "always" is.
      const stateFile = defaultWorkspaceStatePath(ws.root, ws.env());
      expect(existsSync(stateFile) && (JSON.parse(readFileSync(stateFile, 'utf8')) as { alwaysAllow?: string[] }).alwaysAllow).toEqual(['mcp__a__echo']);
    });
  });
}

suite('http');
suite('stdio');

/** `serve --http` on a fresh workspace for one describe block: started before its tests, stopped after them with nothing left behind. */
function servedOverHttp() {
  const served = {
    ws: workspace(),
    url: '',
    token: '',
    serve: undefined as ServeProcess | undefined,
    /** Closed before the gateway stops. */
    open: [] as Array<() => Promise<unknown>>,
    /** Transport options that carry the gateway's access token. */
    auth: () => ({ requestInit: { headers: { authorization: `Bearer ${served.token}` } } }),
  };
  beforeAll(async () => {
    ({ serve: served.serve, url: served.url, token: served.token } = await startServeHttp(served.ws));
  });
  afterAll(async () => {
    for (const close of served.open) await close();
    await served.serve?.stop();
    expect(await served.ws.cleanup()).toBe(0);
  });
  return served;
}

describe('a client that cannot elicit, and a 2025 client', SLOW, () => {
  const served = servedOverHttp();
  const { open } = served;

  it('the input-required result carries the question and a requestState; a retry with an unknown one is refused, the real one finishes the call', async () => {
    const client = await connectV2(new HttpV2(new URL(served.url), served.auth()), { asked: [], sampled: [], answer: () => ({ action: 'decline' }) });
    open.push(() => client.close());
    const first = (await client.callTool({ name: 'mcp__travel__book', arguments: {} }, { ...CALL, allowInputRequired: true })) as unknown as {
      resultType?: string;
      inputRequests?: Record<string, { method: string; params: { message: string } }>;
      requestState?: string;
    };
    expect(first.resultType).toBe('input_required');
    const [key, question] = Object.entries(first.inputRequests ?? {})[0]!;
    expect(question).toMatchObject({ method: 'elicitation/create', params: { message: 'Which flight?' } });
    expect(first.requestState).toMatch(/^[0-9a-f-]{36}$/);

    const retry = (requestState: string) =>
      client.callTool({ name: 'mcp__travel__book', arguments: {}, inputResponses: { [key]: { action: 'accept', content: { date: '2027-01-01' } } }, requestState } as never, { ...CALL, allowInputRequired: true });
    await expect(retry('00000000-0000-0000-0000-000000000000')).rejects.toThrow(/requestState is unknown or expired .* call mcp__travel__book again without requestState/);
    const done = await retry(first.requestState!);
    expect(JSON.parse(textOf(done))).toEqual({ action: 'accept', content: { date: '2027-01-01', seats: 2 } });
    // The state is spent: it cannot finish the call twice.
    await expect(retry(first.requestState!)).rejects.toThrow(/unknown or expired/);
  });

  it('a prompt’s or a read’s requestState works once, for the same method, params and scope', async () => {
    const client = await connectV2(new HttpV2(new URL(served.url), served.auth()), { asked: [], sampled: [], answer: () => ({ action: 'decline' }) });
    open.push(() => client.close());
    type Pending = { resultType?: string; inputRequests?: Record<string, { method: string; params: { message?: string } }>; requestState?: string };
    const first = (await client.getPrompt({ name: 'mcp__travel__trip' }, { ...CALL, allowInputRequired: true } as never)) as unknown as Pending;
    expect(first.resultType).toBe('input_required');
    const [key, question] = Object.entries(first.inputRequests ?? {})[0]!;
    expect(question).toMatchObject({ method: 'elicitation/create', params: { message: 'Where to?' } });
    const answer = { [key]: { action: 'accept', content: { city: 'Oslo' } } };
    const retry = (c: ClientV2, params: Record<string, unknown>) => c.getPrompt({ ...params, inputResponses: answer, requestState: first.requestState } as never, { ...CALL, allowInputRequired: true } as never);
    // Another prompt, other arguments, another method, another scope: refused, and the state stays good.
    await expect(retry(client, { name: 'mcp__rich__greet', arguments: { name: 'x' } })).rejects.toThrow(/requestState is unknown or expired .* get the prompt mcp__rich__greet again without requestState/);
    await expect(retry(client, { name: 'mcp__travel__trip', arguments: { city: 'x' } })).rejects.toThrow(/unknown or expired/);
    await expect(client.readResource({ uri: 'travel://quote', inputResponses: answer, requestState: first.requestState } as never, { ...CALL, allowInputRequired: true } as never)).rejects.toThrow(
      /unknown or expired .* read travel:\/\/quote again without requestState/,
    );
    const scoped = await connectV2(new HttpV2(new URL(`${served.url}?servers=travel`), served.auth()), { asked: [], sampled: [], answer: () => ({ action: 'decline' }) });
    open.push(() => scoped.close());
    await expect(retry(scoped, { name: 'mcp__travel__trip' })).rejects.toThrow(/unknown or expired/);
    const done = await retry(client, { name: 'mcp__travel__trip' });
    expect(JSON.parse(promptText(done as never))).toEqual({ action: 'accept', content: { city: 'Oslo' } });
    await expect(retry(client, { name: 'mcp__travel__trip' })).rejects.toThrow(/unknown or expired/);
  });

  it('a 2026-07-28 client without elicitation gets the clear refusal; a 2025 client is asked by elicitation/create', async () => {
    const mute = await connectV2(new HttpV2(new URL(served.url), served.auth()), { asked: [], sampled: [], answer: () => ({ action: 'decline' }) }, {});
    open.push(() => mute.close());
    const refused = await mute.callTool({ name: 'mcp__a__echo', arguments: { text: 'x' } }, CALL);
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toMatch(/^tool_denied: Tool mcp__a__echo needs your approval .* and this host cannot ask/);

    const old = new Client({ name: 'old', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
    const asked: string[] = [];
    let decision = 'allow';
    old.setRequestHandler(ElicitRequestSchema, (request) => {
      asked.push(request.params.message);
      return { action: 'accept', content: { decision } };
    });
    await old.connect(new StreamableHTTPClientTransport(new URL(served.url), served.auth()));
    open.push(() => old.close());
    expect(textOf(await old.callTool({ name: 'mcp__a__echo', arguments: { text: 'old' } }, undefined, CALL))).toBe('old');
    expect(asked).toHaveLength(1);
    decision = 'deny';
    expect(textOf(await old.callTool({ name: 'mcp__a__echo', arguments: { text: 'old' } }, undefined, CALL))).toMatch(/^tool_denied: Tool mcp__a__echo was not approved/);
  });
});

/** A 2025 client (SDK v1) that answers questions and records what it was asked and told. */
async function connectV1(transport: StdioClientTransport | StreamableHTTPClientTransport, name: string) {
  const client = new Client({ name, version: '1.0.0' }, { capabilities: { elicitation: { form: {}, url: {} }, sampling: {} } });
  const asked: string[] = [];
  const completed: string[] = [];
  client.setRequestHandler(ElicitRequestSchema, (request) => {
    asked.push(request.params.message);
    return request.params.mode === 'url' ? { action: 'accept' } : { action: 'accept', content: { city: name } };
  });
  client.setRequestHandler(CreateMessageRequestSchema, () => {
    asked.push('sampling');
    return { role: 'assistant', model: 'old-model', content: { type: 'text', text: name } };
  });
  client.setNotificationHandler(ElicitationCompleteNotificationSchema, (n) => void completed.push(n.params.elicitationId));
  await client.connect(transport);
  return { client, asked, completed };
}

describe('a 2025 client: questions during prompts/get and resources/read, and URL elicitation completion', SLOW, () => {
  const served = servedOverHttp();
  const { ws, open } = served;
  const http = async (name: string) => {
    const c = await connectV1(new StreamableHTTPClientTransport(new URL(served.url), served.auth()), name);
    open.push(() => c.client.close());
    return c;
  };

  it('over HTTP the session that asked is asked (on its request), not the latest session', async () => {
    const first = await http('first');
    const later = await http('later');
    const trip = await first.client.getPrompt({ name: 'mcp__travel__trip' }, CALL);
    expect(JSON.parse(promptText(trip))).toEqual({ action: 'accept', content: { city: 'first' } });
    const quote = await first.client.readResource({ uri: 'travel://quote' }, CALL);
    expect(quote.contents).toEqual([{ uri: 'travel://quote', text: 'old-model: first' }]);
    const plan = await first.client.getPrompt({ name: 'mcp__ask__plan' }, CALL);
    expect(promptText(plan)).toBe('Plan for first');
    expect(first.asked).toEqual(['Where to?', 'sampling', 'Which city?']);
    expect(later.asked).toEqual([]);
  });

  it('over HTTP a URL elicitation’s completion reaches the session that was asked, after the call', async () => {
    const asker = await http('asker');
    const other = await http('other');
    const signed = JSON.parse(textOf(await asker.client.callTool({ name: 'mcp__travel__sign', arguments: {} }, undefined, CALL))) as { action: string; elicitationId: string };
    expect(signed.action).toBe('accept');
    expect(asker.asked).toEqual(['Sign the contract']);
    await waitFor(() => asker.completed.length > 0, 'notifications/elicitation/complete on the asking session', 30_000);
    expect(asker.completed).toEqual([signed.elicitationId]);
    expect(other.completed).toEqual([]);
  });

  it('over stdio the same: questions during prompts/get and resources/read, and the completion', async () => {
    const transport = new StdioClientTransport({ command: process.execPath, args: [cliMain, 'serve', '--stdio', ...ws.args()], env: ws.env() as Record<string, string>, stderr: 'pipe' });
    const c = await connectV1(transport, 'piped');
    open.push(() => c.client.close());
    const trip = await c.client.getPrompt({ name: 'mcp__travel__trip' }, CALL);
    expect(JSON.parse(promptText(trip))).toEqual({ action: 'accept', content: { city: 'piped' } });
    const pick = await c.client.readResource({ uri: 'ask://pick' }, CALL);
    expect(pick.contents).toEqual([{ uri: 'ask://pick', text: 'picked: piped' }]);
    const signed = JSON.parse(textOf(await c.client.callTool({ name: 'mcp__travel__sign', arguments: {} }, undefined, CALL))) as { elicitationId: string };
    await waitFor(() => c.completed.length > 0, 'notifications/elicitation/complete over stdio', 30_000);
    expect(c.completed).toEqual([signed.elicitationId]);
  });
});
