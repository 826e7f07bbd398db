/**
 * `mcp-reconciler auth SERVER` as a user runs it: the built binary in its own
 * process, a loopback authorization server, and the "browser" being plain
 * fetches of the printed URL and of its redirect. The process must stay up
 * until the browser comes back (nothing else keeps its event loop busy),
 * refuse a redirect whose state it did not issue, store the tokens and exit 0.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMcpController, MemoryApprovalStore, type McpController } from '../../src/index.js';
import { startOAuthFixture, type OAuthFixture } from '../fixtures/oauth-fixture.js';
import { cliBin } from '../helpers/fixtures.js';
import { waitFor } from '../helpers/processes.js';
import { reach } from './support.js';

describe('mcp-reconciler auth (built binary, real process)', () => {
  let fixture: OAuthFixture;
  let dir: string;
  let child: ChildProcessWithoutNullStreams | undefined;
  let controller: McpController | undefined;

  beforeEach(async () => {
    fixture = await startOAuthFixture();
    dir = mkdtempSync(join(tmpdir(), 'mcp-cli-auth-proc-'));
  });
  afterEach(async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      const gone = new Promise((resolve) => child!.once('exit', resolve));
      child.kill('SIGKILL');
      await gone;
    }
    child = undefined;
    await controller?.dispose();
    controller = undefined;
    await fixture.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('waits for the browser, refuses a forged redirect, stores the tokens, exits 0; the server then connects', async () => {
    const configFile = join(dir, 'mcp.json');
    const storePath = join(dir, 'oauth.json');
    writeFileSync(configFile, JSON.stringify({ mcpServers: { remote: { type: 'http', url: fixture.url } } }));
    const env = { ...process.env, HOME: dir, XDG_CONFIG_HOME: join(dir, '.config'), MCP_RECONCILER_OAUTH_STORE: storePath };
    child = spawn(process.execPath, [cliBin, 'auth', 'remote', '--cwd', dir, '--config', configFile, '--approvals', join(dir, 'approvals.json'), '--timeout', '120000'], {
      env,
      stdio: 'pipe',
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
    child.stderr.setEncoding('utf8').on('data', (s: string) => (out += s));
    const proc = child;
    const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));

    let authorizeUrl: string | undefined;
    await waitFor(() => (authorizeUrl = /https?:\/\/\S+\/authorize\S*/.exec(out)?.[0]) !== undefined || proc.exitCode !== null, 'the authorization URL', 60_000);
    expect(authorizeUrl, `the CLI exited (${String(proc.exitCode)}) before printing a URL:\n${out}`).toBeDefined();
    expect(out).toContain('Waiting up to 120 s');

    // A redirect carrying a state this sign-in did not issue: refused, with a page that says so.
    const redirectUri = new URL(authorizeUrl!).searchParams.get('redirect_uri')!;
    const forged = new URL(redirectUri);
    forged.searchParams.set('code', 'forged-code');
    forged.searchParams.set('state', 'not-the-state');
    const refused = await fetch(forged);
    const page = await refused.text();
    expect(refused.status).toBe(400);
    expect(page).toContain('Sign-in failed');
    expect(page).toContain('state mismatch');
    expect(page).toContain('mcp-reconciler auth');
    expect(fixture.counts.authorization_code).toBe(0);

    // The real browser step: the authorization server redirects to the CLI's loopback receiver.
    const authorize = await fetch(authorizeUrl!, { redirect: 'manual' });
    const back = await fetch(authorize.headers.get('location')!);
    expect(back.status).toBe(200);
    expect(await back.text()).toContain('Authorized');

    expect(await exited, out).toBe(0);
    expect(out).toContain('Authorised "remote"; tokens stored in');
    expect(statSync(storePath).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(readFileSync(storePath, 'utf8')) as { servers: Record<string, { tokens?: { access_token?: string } }> };
    expect(stored.servers[fixture.url]?.tokens?.access_token).toBeTruthy();

    // What a watch started afterwards does: connect with the stored tokens, nobody signing in.
    controller = createMcpController({
      cwd: dir,
      sources: [{ scope: 'cli', path: configFile, root: dir }],
      watch: false,
      approvals: new MemoryApprovalStore(),
      processStateFile: false,
      oauth: { tokenStore: storePath },
    });
    const connected = reach(controller, 'connected');
    await controller.start();
    await connected;
    expect((await controller.callTool('mcp__remote__echo', { text: 'after cli sign-in' })).isError).toBeFalsy();
    expect(fixture.counts.authorization_code).toBe(1);
  }, 90_000);
});
