/**
 * The request channel between one-shot commands and a running watch, in
 * process: one answer per request, no replay of requests a watch did not
 * take, withdrawal when nobody takes them, and refusal of a file others can write.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { requestChannelPath, sendRequest, serveRequests, type ChannelRequest, type RequestServer } from '../../src/cli/request-channel.js';
import { ErrorCode, McpReconcilerError } from '../../src/errors.js';

let dir: string;
let file: string;
const root = '/some/workspace';
const servers: RequestServer[] = [];

beforeEach(() => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), 'mcpr-channel-')));
  file = requestChannelPath(join(dir, 'approvals.json'), root);
});
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
  rmSync(dir, { recursive: true, force: true });
});

async function serve(handled: ChannelRequest[], fail?: McpReconcilerError): Promise<RequestServer> {
  const s = await serveRequests({
    file,
    root,
    handle: async (req) => {
      handled.push(req);
      if (fail) throw fail;
      return { ok: true, message: `did ${req.verb} ${req.server}` };
    },
  });
  servers.push(s);
  return s;
}

/** A channel file as another process would have left it. */
function writeRaw(doc: object): void {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  writeFileSync(file, JSON.stringify(doc), { mode: 0o600 });
}

describe('request channel', () => {
  it('is keyed by the approvals file and the workspace root', () => {
    expect(file.startsWith(join(dir, 'approvals.json.requests') + '/')).toBe(true);
    expect(requestChannelPath(join(dir, 'approvals.json'), '/other')).not.toBe(file);
    expect(requestChannelPath(join(dir, 'other.json'), root)).not.toBe(file);
  });

  it('answers "no-watch" at once when no watch is registered, and writes nothing', async () => {
    expect(await sendRequest({ file, root, request: { verb: 'reconnect', server: 'docs' } })).toEqual({ kind: 'no-watch' });
    expect(existsSync(file)).toBe(false);
  });

  it('delivers each request once to the running watch and returns its answer; closing leaves no file', async () => {
    const handled: ChannelRequest[] = [];
    const s = await serve(handled);
    const first = await sendRequest({ file, root, request: { verb: 'reconnect', server: 'docs' } });
    expect(first).toEqual({ kind: 'answered', by: process.pid, result: { ok: true, message: 'did reconnect docs' } });
    const second = await sendRequest({ file, root, request: { verb: 'approve-session', server: 'x' } });
    expect(second).toMatchObject({ kind: 'answered', result: { ok: true, message: 'did approve-session x' } });
    expect(handled).toEqual([
      { verb: 'reconnect', server: 'docs' },
      { verb: 'approve-session', server: 'x' },
    ]);
    // Answered requests are removed by their sender; only the registration is left.
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ requests: [], watchers: [{ pid: process.pid }] });
    await s.close();
    expect(existsSync(file)).toBe(false);
  });

  it("carries the watch's error code and hint back to the sender", async () => {
    const handled: ChannelRequest[] = [];
    await serve(handled, new McpReconcilerError(ErrorCode.UnknownServer, 'no MCP server named "nope" is configured', { hint: 'configured servers: a' }));
    const out = await sendRequest({ file, root, request: { verb: 'reconnect', server: 'nope' } });
    expect(out).toMatchObject({
      kind: 'answered',
      result: { ok: false, code: 'unknown_server', message: 'no MCP server named "nope" is configured', hint: 'configured servers: a' },
    });
  });

  it('never replays a request written before the watch started', async () => {
    const now = Date.now();
    const stale = {
      id: 'stale',
      verb: 'approve-session',
      server: 'old',
      from: { pid: process.pid, host: hostname() },
      at: now - 1_000,
      pickupBy: now + 60_000,
      expiresAt: now + 120_000,
      state: 'pending',
    };
    writeRaw({ version: 1, root, watchers: [{ pid: process.pid, host: hostname(), id: 'earlier', startedAt: now - 5_000 }], requests: [stale] });
    const handled: ChannelRequest[] = [];
    await serve(handled);
    // Requests are taken in file order, so once a later one is answered the stale one was passed over.
    expect(await sendRequest({ file, root, request: { verb: 'reconnect', server: 'new' } })).toMatchObject({ kind: 'answered' });
    expect(handled).toEqual([{ verb: 'reconnect', server: 'new' }]);
    const doc = JSON.parse(readFileSync(file, 'utf8')) as { requests: Array<{ id: string; state: string }> };
    expect(doc.requests).toEqual([expect.objectContaining({ id: 'stale', state: 'pending' })]);
  });

  it('withdraws a request no watch takes in time, and drops registrations of dead watches', async () => {
    // A registration whose process is alive (ours) but which serves nothing: a stuck watch.
    writeRaw({ version: 1, root, watchers: [{ pid: process.pid, host: hostname(), id: 'stuck', startedAt: Date.now() }], requests: [] });
    const out = await sendRequest({ file, root, request: { verb: 'reconnect', server: 'docs' }, pickupTimeoutMs: 200 });
    expect(out).toEqual({ kind: 'not-picked-up', watchers: [process.pid] });
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ requests: [] });

    // A registration of a process that is gone counts as no watch.
    writeRaw({ version: 1, root, watchers: [{ pid: 2 ** 22 + 1, host: hostname(), id: 'dead', startedAt: 0 }], requests: [] });
    expect(await sendRequest({ file, root, request: { verb: 'reconnect', server: 'docs' } })).toEqual({ kind: 'no-watch' });
    expect(existsSync(file)).toBe(false);
  });

  it('refuses a channel file that group or others can write', async () => {
    writeRaw({ version: 1, root, watchers: [], requests: [] });
    chmodSync(file, 0o666);
    const err = await sendRequest({ file, root, request: { verb: 'approve-session', server: 'docs' } }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(McpReconcilerError);
    expect((err as McpReconcilerError).message).toMatch(/^Refusing the request file .*: it is writable by group and others \(mode 0666\)/);
    expect((err as McpReconcilerError).hint).toContain('Delete');
  });

  it('starts over from a corrupt file instead of failing', async () => {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, '{not json', { mode: 0o600 });
    const handled: ChannelRequest[] = [];
    await serve(handled);
    expect(await sendRequest({ file, root, request: { verb: 'reconnect', server: 'a' } })).toMatchObject({ kind: 'answered' });
  });
});
