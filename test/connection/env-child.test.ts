/**
 * The stdio environment allow-list (SPEC §8.2, docs/library.md) seen from a real
 * child: the fixture server's `env` tool reports what it inherited.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { Harness, firstText, waitState } from '../controller/support.js';
import { stdioFixtureConfig } from '../helpers/fixtures.js';

const h = new Harness();
afterAll(() => h.cleanup());

/** Secrets that no credential-shaped pattern catches; each used to reach every child. */
const LEAKY = {
  DATABASE_URL: 'postgres://app:hunter2@db.internal/app',
  SSH_AUTH_SOCK: '/tmp/ssh-XXXX/agent.1',
  MYSQL_PWD: 'hunter2',
  REDIS_URL: 'redis://:hunter2@cache:6379',
  MONGODB_URI: 'mongodb://app:hunter2@mongo/app',
  SENTRY_DSN: 'https://abc123@o1.ingest.sentry.io/1',
  SLACK_WEBHOOK_URL: 'https://hooks.slack.com/services/T0/B0/xyz',
  NETRC: '/home/me/.netrc',
  CI_JOB_JWT: 'eyJhbGciOiJSUzI1NiJ9.e30.sig',
};
const BASICS = ['PATH', 'HOME', 'LANG'];

describe('stdio child environment', () => {
  it('drops unlisted secrets, keeps PATH/HOME/LANG, and passes what the entry names', async () => {
    const ws = h.workspace('mcp-env-child-');
    ws.env = { ...ws.env, ...LEAKY, LANG: 'C.UTF-8', NODE_OPTIONS: '--no-warnings' };
    ws.writeUserSettings({
      mcpServers: {
        plain: stdioFixtureConfig('basic-server'),
        // The user opts one secret in by naming it; `${…}` expands from the host env.
        db: { ...stdioFixtureConfig('basic-server'), env: { DATABASE_URL: '${DATABASE_URL}' } },
      },
    });
    const c = h.controller(ws);
    await c.start();
    await waitState(c, 'plain', 'connected');
    await waitState(c, 'db', 'connected');

    const names = [...Object.keys(LEAKY), ...BASICS, 'NODE_OPTIONS'];
    const seen = async (server: string) =>
      JSON.parse(firstText(await c.callTool(`mcp__${server}__env`, { names }))) as Record<string, string | null>;

    const plain = await seen('plain');
    for (const name of Object.keys(LEAKY)) expect(plain[name], name).toBeNull();
    expect(plain.NODE_OPTIONS).toBeNull();
    expect(plain.PATH).toBe(ws.env.PATH);
    expect(plain.HOME).toBe(ws.home);
    expect(plain.LANG).toBe('C.UTF-8');

    const db = await seen('db');
    expect(db.DATABASE_URL).toBe(LEAKY.DATABASE_URL);
    expect(db.REDIS_URL).toBeNull();
    expect(db.SSH_AUTH_SOCK).toBeNull();
  });

  it("lets the host's envPolicy widen the allow-list, still without credentials", async () => {
    const ws = h.workspace('mcp-env-child-');
    ws.env = { ...ws.env, ...LEAKY, MY_TOOL_HOME: '/opt/tool', MY_TOOL_TOKEN: 'tok' };
    ws.writeUserSettings({ mcpServers: { wide: stdioFixtureConfig('basic-server') } });
    const c = h.controller(ws, { envPolicy: { allow: [/^MY_TOOL_/, 'REDIS_URL'], keep: ['SSH_AUTH_SOCK'] } });
    await c.start();
    await waitState(c, 'wide', 'connected');
    const names = ['MY_TOOL_HOME', 'MY_TOOL_TOKEN', 'REDIS_URL', 'SSH_AUTH_SOCK', 'DATABASE_URL', 'CI_JOB_JWT'];
    const seen = JSON.parse(firstText(await c.callTool('mcp__wide__env', { names })));
    expect(seen).toEqual({
      MY_TOOL_HOME: '/opt/tool',
      MY_TOOL_TOKEN: null,
      REDIS_URL: LEAKY.REDIS_URL,
      SSH_AUTH_SOCK: LEAKY.SSH_AUTH_SOCK,
      DATABASE_URL: null,
      CI_JOB_JWT: null,
    });
  });
});
