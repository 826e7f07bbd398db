/**
 * `config` shows the expanded config: `${VAR}` has already become the secret,
 * so both outputs must hide env values, header values and credential-looking
 * args (docs/library.md). No server is started: `config` only reads files.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliCaptured } from '../helpers/cli.js';

const SECRETS = {
  DATABASE_URL: 'postgres://app:pg-hunter2@db.internal/app',
  API_KEY_VALUE: 'k-9f8e7d6c5b4a',
  BEARER_VALUE: 'bearer-0a1b2c3d',
  QUERY_TOKEN: 'qtok-5566',
  URL_PASSWORD: 'urlpass-7788',
  ARG_TOKEN: 'argtok-1122',
  HEADER_KEY: 'hdrkey-3344',
};

let dir: string;
let file: string;
const env = (): NodeJS.ProcessEnv => ({ PATH: process.env.PATH, HOME: dir, XDG_CONFIG_HOME: dir, ...SECRETS });
const run = (...extra: string[]) => runCliCaptured(['config', '--cwd', dir, '--config', file, '--approvals', join(dir, 'approvals.json'), ...extra], env(), dir);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mcpr-redact-'));
  file = join(dir, 'servers.json');
  await writeFile(
    file,
    JSON.stringify({
      mcpServers: {
        db: {
          command: 'npx',
          args: ['-y', 'db-mcp', '--token=${ARG_TOKEN}', '--api-key', '${API_KEY_VALUE}', '--header', 'Authorization: Bearer ${BEARER_VALUE}', '--verbose'],
          env: { DATABASE_URL: '${DATABASE_URL}', MODE: 'dev' },
        },
        remote: {
          type: 'http',
          url: 'https://svc:${URL_PASSWORD}@mcp.example.com/mcp?token=${QUERY_TOKEN}&region=eu',
          headers: { 'X-Api-Key': '${HEADER_KEY}', Authorization: 'Bearer ${BEARER_VALUE}' },
        },
      },
    }),
  );
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function expectNoSecret(text: string): void {
  for (const [name, value] of Object.entries(SECRETS)) expect(text, name).not.toContain(value);
}

describe('config redaction', () => {
  it('--json hides env values, header values and credential-looking args, keeps the rest', async () => {
    const r = await run('--json');
    expect(r.code).toBe(0);
    expectNoSecret(r.stdout);
    const servers = (JSON.parse(r.stdout) as { servers: Array<{ name: string; config: Record<string, unknown> }> }).servers;
    const by = Object.fromEntries(servers.map((s) => [s.name, s.config]));
    expect(by.db).toEqual({
      type: 'stdio',
      command: 'npx',
      args: ['-y', 'db-mcp', '--token=<redacted>', '--api-key', '<redacted>', '--header', 'Authorization: <redacted>', '--verbose'],
      env: { DATABASE_URL: '<redacted>', MODE: '<redacted>' },
    });
    expect(by.remote).toEqual({
      type: 'http',
      url: 'https://svc:<redacted>@mcp.example.com/mcp?token=<redacted>&region=eu',
      headers: { 'X-Api-Key': '<redacted>', Authorization: '<redacted>' },
    });
  });

  it('the text output shows no secret either', async () => {
    const r = await run();
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^db\s/m);
    expectNoSecret(r.stdout);
    expectNoSecret(r.stderr);
  });
});
