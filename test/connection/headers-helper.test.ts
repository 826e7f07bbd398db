/**
 * Claude Code's `headersHelper`: run at connect time, its JSON output merged
 * over `headers`; part of the fingerprint and the approval hash; never a
 * header value in a message.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseSourceText } from '../../src/config/load.js';
import { parseHelperOutput, runHeadersHelper } from '../../src/connection/headers-helper.js';
import { openConnection, type ConnectOptions } from '../../src/connection/connect.js';
import { ProcessTracker } from '../../src/connection/processes.js';
import { approvalHash, configHash, fingerprint } from '../../src/config/identity.js';
import { McpReconcilerError } from '../../src/errors.js';
import { startHttpFixture, type HttpFixture } from '../fixtures/http-fixture.js';
import { desiredServer } from '../helpers/fixtures.js';

const node = JSON.stringify(process.execPath);
const TOKEN = 'tok-4f1d2c9e8b7a';
let dir: string;
let fixture: HttpFixture;
const tracker = new ProcessTracker({ graceMs: 500 });
const open: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mcpr-headers-helper-'));
  // Prints the token it was given through the server's env, and what Claude Code sets.
  await writeFile(
    join(dir, 'helper.mjs'),
    `process.stdout.write(JSON.stringify({ Authorization: 'Bearer ' + process.env.HELPER_TOKEN, 'X-Server': process.env.CLAUDE_CODE_MCP_SERVER_NAME, 'X-Cwd': process.cwd(), 'X-Url': process.env.CLAUDE_CODE_MCP_SERVER_URL ?? '' }));\n`,
  );
  fixture = await startHttpFixture({ bearerToken: TOKEN });
});
afterAll(async () => {
  await Promise.all(open.map((c) => c.close()));
  await fixture?.close();
  await tracker.killAll();
  await rm(dir, { recursive: true, force: true });
});

const options = (): ConnectOptions => ({ generation: 1, tracker, cwd: dir, timeoutMs: 10_000, parentEnv: { PATH: process.env.PATH } });

async function failure(p: Promise<unknown>): Promise<McpReconcilerError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(McpReconcilerError);
  return err as McpReconcilerError;
}

function gone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch {
    return true;
  }
}

describe('runHeadersHelper', () => {
  it('runs in the given cwd with the server env and the Claude Code variables, and returns the headers', async () => {
    const headers = await runHeadersHelper({ server: 'api', url: 'http://h/mcp', command: `${node} helper.mjs`, cwd: dir, env: { PATH: process.env.PATH!, HELPER_TOKEN: 'abc' } });
    expect(headers).toEqual({ Authorization: 'Bearer abc', 'X-Server': 'api', 'X-Cwd': await import('node:fs').then((fs) => fs.realpathSync(dir)), 'X-Url': 'http://h/mcp' });
  });

  it('output that is not a JSON object of string headers is refused without echoing it', async () => {
    const secret = 'sekrit-value-123';
    const cases = [`echo ${secret}`, `echo '{"Authorization": 5}'`, `echo '["${secret}"]'`];
    const messages = await Promise.all(cases.map(async (command) => (await failure(runHeadersHelper({ server: 's', command, cwd: dir, env: { PATH: process.env.PATH! } }))).message));
    expect(messages[0]).toMatch(/headersHelper printed \d+ bytes that are not JSON/);
    expect(messages[1]).toContain('header "Authorization" as number; every value must be a string');
    expect(messages[2]).toContain('not an object of headers');
    for (const m of messages) expect(m).not.toContain(secret);
    expect(parseHelperOutput('{"Bad Name": "x"}')).toEqual({ error: expect.stringContaining('header name that HTTP does not allow') });
    expect(parseHelperOutput('{"X-A": "a\\r\\nInjected: 1"}')).toEqual({ error: expect.stringContaining('line break') });
  });

  it('a failing helper says its exit code and the first stderr line, with credential shapes hidden', async () => {
    const err = await failure(runHeadersHelper({ server: 's', command: `echo "login expired Bearer ${TOKEN}" >&2; exit 3`, cwd: dir, env: { PATH: process.env.PATH! } }));
    expect(err.message).toContain('exited with code 3; its stderr says: login expired Bearer <redacted>');
    expect(err.message).not.toContain(TOKEN);
    expect(err.hint).toContain('mcp-reconciler reconnect s');
  });

  it('a helper that does not finish in time is stopped, its child processes too', async () => {
    const pidFile = join(dir, 'pid');
    const command = `${node} -e "require('fs').writeFileSync('pid', String(process.pid)); setInterval(() => {}, 1000)"; echo never`;
    const err = await failure(runHeadersHelper({ server: 's', command, cwd: dir, env: { PATH: process.env.PATH! }, timeoutMs: 1_500 }));
    expect(err.message).toContain('did not finish within 1500 ms and was stopped');
    const pid = Number(await readFile(pidFile, 'utf8'));
    // Killed with its process group; wait until the kernel has reaped it.
    for (let i = 0; i < 100 && !gone(pid); i++) await new Promise((r) => setTimeout(r, 50));
    expect(gone(pid)).toBe(true);
  });
});

describe('headersHelper at connect time', () => {
  it('its headers are sent: a server that needs the bearer token connects', async () => {
    const conn = await openConnection(
      desiredServer('guarded', { type: 'http', url: fixture.url, headers: { Authorization: 'Bearer wrong' }, headersHelper: `${node} helper.mjs`, env: { HELPER_TOKEN: TOKEN } }),
      options(),
    );
    open.push(conn);
    expect(conn.tools.length).toBeGreaterThan(0);
  });

  it('without it the same server refuses the connection, and a failing helper fails the connect saying why', async () => {
    await expect(openConnection(desiredServer('bare', { type: 'http', url: fixture.url }), options())).rejects.toThrow(/401|authori/i);
    const err = await failure(openConnection(desiredServer('broken', { type: 'http', url: fixture.url, headersHelper: 'exit 7' }), options()));
    expect(err.message).toContain('Server "broken": headersHelper exited with code 7');
  });
});

describe('config, fingerprint and approval', () => {
  it('Claude Code and default files keep headersHelper on the entry; changing it changes the fingerprint and the approval hash', () => {
    const text = JSON.stringify({ mcpServers: { a: { type: 'http', url: 'http://h/mcp', headersHelper: './token.sh' } } });
    for (const format of ['claude-code', 'default'] as const) {
      const r = parseSourceText(text, { scope: 'project', path: join(dir, '.mcp.json'), format }, {});
      expect(r.issues).toEqual([]);
      expect(r.servers.a?.headersHelper).toBe('./token.sh');
    }
    const base = { type: 'http' as const, url: 'http://h/mcp', headersHelper: './token.sh' };
    const other = { ...base, headersHelper: './other.sh' };
    expect(fingerprint(other)).not.toBe(fingerprint(base));
    expect(approvalHash(other)).not.toBe(approvalHash(base));
  });

  it('fallbackToSse is part of the fingerprint; false is the same as absent', () => {
    const base = { type: 'http' as const, url: 'http://h/mcp' };
    expect(fingerprint({ ...base, fallbackToSse: true })).not.toBe(fingerprint(base));
    expect(fingerprint({ ...base, fallbackToSse: false })).toBe(fingerprint(base));
  });
});
