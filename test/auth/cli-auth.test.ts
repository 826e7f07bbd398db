/**
 * `mcp-reconciler auth SERVER` / `logout SERVER` (run in-process), and a
 * running controller picking up the tokens the CLI stored: its server leaves
 * `needs_auth` without being told anything but the token file changing.
 */
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMcpController, MemoryApprovalStore, type McpController } from '../../src/index.js';
import { runCli } from '../../src/cli/main.js';
import { startOAuthFixture, type OAuthFixture } from '../fixtures/oauth-fixture.js';

async function browser(url: string): Promise<void> {
  const authorize = await fetch(url, { redirect: 'manual' });
  await (await fetch(authorize.headers.get('location')!)).text();
}

describe('CLI auth / logout', () => {
  let fixture: OAuthFixture;
  let dir: string;
  let controller: McpController | undefined;

  beforeEach(async () => {
    fixture = await startOAuthFixture();
    dir = mkdtempSync(join(tmpdir(), 'mcp-cli-auth-'));
  });
  afterEach(async () => {
    await controller?.dispose();
    controller = undefined;
    await fixture.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('signs in from another "terminal" and the running controller connects with the stored tokens', async () => {
    const storePath = join(dir, 'state', 'oauth.json');
    mkdirSync(join(dir, 'state'));
    const configFile = join(dir, 'mcp.json');
    writeFileSync(configFile, JSON.stringify({ mcpServers: { remote: { type: 'http', url: fixture.url } } }));

    controller = createMcpController({
      cwd: dir,
      sources: [{ scope: 'cli', path: configFile, root: dir }],
      debounceMs: 20,
      approvals: new MemoryApprovalStore(),
      processStateFile: false,
      oauth: { tokenStore: storePath },
    });
    await controller.start();
    expect(controller.status()[0]?.state).toBe('needs_auth');
    const c = controller;
    const connected = new Promise<void>((resolve) => {
      const off = c.on('server-state', (e) => {
        if (e.name === 'remote' && e.state === 'connected') {
          off();
          resolve();
        }
      });
    });

    let stdout = '';
    let driving: Promise<void> | undefined;
    const env = { ...process.env, HOME: dir, MCP_RECONCILER_OAUTH_STORE: storePath };
    const code = await runCli(['auth', 'remote', '--cwd', dir, '--config', configFile, '--approvals', join(dir, 'approvals.json')], {
      stdout: {
        write: (s: string) => {
          stdout += s;
          const url = /https?:\/\/\S+\/authorize\S*/.exec(s)?.[0];
          if (url && !driving) driving = browser(url);
        },
      },
      stderr: { write: (s: string) => (stdout += s) },
      env,
      cwd: dir,
    });
    expect(code, stdout).toBe(0);
    await driving;
    expect(stdout).toContain('Authorised "remote"');
    expect(statSync(storePath).mode & 0o777).toBe(0o600);
    // The token file is watched; a reload (what the watcher triggers) picks the tokens up in any case.
    await c.reload();
    await connected;
    expect((await c.callTool('mcp__remote__echo', { text: 'via cli' })).isError).toBeFalsy();

    let out = '';
    const logout = await runCli(['logout', 'remote', '--cwd', dir, '--config', configFile], {
      stdout: { write: (s: string) => (out += s) },
      stderr: { write: (s: string) => (out += s) },
      env,
      cwd: dir,
    });
    expect(logout, out).toBe(0);
    expect(out).toContain('Removed the stored OAuth credentials of "remote"');
  });

  it('says what to do when the server is not configured', async () => {
    let out = '';
    const code = await runCli(['auth', 'nope', '--cwd', dir], {
      stdout: { write: (s: string) => (out += s) },
      stderr: { write: (s: string) => (out += s) },
      env: { ...process.env, HOME: dir, MCP_RECONCILER_OAUTH_STORE: join(dir, 'oauth.json') },
      cwd: dir,
    });
    expect(code).toBe(1);
    expect(out).toMatch(/no MCP server named "nope"/);
  });
});
