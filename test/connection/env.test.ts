import { describe, expect, it } from 'vitest';
import { childEnv, defaultEnvPolicy, inheritsVariable } from '../../src/connection/env.js';

describe('childEnv (SPEC §8.2)', () => {
  const parent = {
    PATH: '/usr/bin',
    HOME: '/home/me',
    LANG: 'C.UTF-8',
    GITHUB_TOKEN: 'ghp_x',
    NPM_TOKEN: 'npm_x',
    CLIENT_SECRET: 's',
    DB_PASSWORD: 'p',
    SSH_PRIVATE_KEY: 'k',
    OPENAI_API_KEY: 'sk',
    API_KEY_FILE: '/k',
    AWS_ACCESS_KEY_ID: 'a',
    AWS_PROFILE: 'dev',
    AZURE_CLIENT_ID: 'az',
    GOOGLE_APPLICATION_CREDENTIALS: '/creds.json',
    GCP_SERVICE_ACCOUNT: 'sa',
    DSH_SESSION: 'host',
    MCP_RECONCILER_DEBUG: '1',
    UNSET: undefined,
  };

  it('drops credential-shaped names, cloud credentials and host prefixes, keeps the allow-listed rest', () => {
    expect(childEnv(parent, undefined)).toEqual({ PATH: '/usr/bin', HOME: '/home/me', LANG: 'C.UTF-8' });
  });

  it('matches deny patterns case-insensitively, even under a wide policy', () => {
    const wide = { inherit: 'all-but-credentials' } as const;
    expect(inheritsVariable('my_token', wide)).toBe(false);
    expect(inheritsVariable('dsh_thing', wide)).toBe(false);
    expect(inheritsVariable('KEYBOARD_LAYOUT', wide)).toBe(true);
  });

  // Secrets the deny patterns never caught: the allow-list drops them by default.
  const leaky = {
    DATABASE_URL: 'postgres://u:p@db/x',
    SSH_AUTH_SOCK: '/tmp/ssh-agent.sock',
    MYSQL_PWD: 'pw',
    REDIS_URL: 'redis://:pw@r',
    MONGODB_URI: 'mongodb://u:p@m',
    SENTRY_DSN: 'https://k@sentry.io/1',
    SLACK_WEBHOOK_URL: 'https://hooks.slack.com/services/x',
    NETRC: '/home/me/.netrc',
    CI_JOB_JWT: 'eyJ',
  };

  it('inherits only the allow-list by default: none of the unlisted secrets, all of the basics', () => {
    const basics = {
      PATH: '/usr/bin', HOME: '/home/me', USER: 'me', LOGNAME: 'me', SHELL: '/bin/sh', TERM: 'xterm',
      LANG: 'C.UTF-8', LANGUAGE: 'en', LC_ALL: 'C.UTF-8', LC_CTYPE: 'C.UTF-8', TZ: 'UTC',
      HTTP_PROXY: 'http://p:3128', https_proxy: 'http://p:3128', NO_PROXY: 'localhost', no_proxy: 'localhost',
      TMPDIR: '/tmp', TMP: '/tmp', TEMP: '/tmp', XDG_CONFIG_HOME: '/c', XDG_RUNTIME_DIR: '/run/u', XDG_DATA_DIRS: '/d',
      NODE_EXTRA_CA_CERTS: '/ca.pem', SSL_CERT_FILE: '/ca.pem', SSL_CERT_DIR: '/certs',
      SYSTEMROOT: 'C:\\Windows', USERPROFILE: 'C:\\Users\\me',
    };
    const others = { NODE_OPTIONS: '--require /debugger/bootloader.js', XDG_SESSION_ID: '3', LC_: 'x', PLAIN_VAR: 'v', EDITOR: 'vim' };
    expect(childEnv({ ...basics, ...leaky, ...others }, undefined)).toEqual(basics);
  });

  it("passes a secret the server's own env names", () => {
    expect(childEnv(leaky, { DATABASE_URL: leaky.DATABASE_URL })).toEqual({ DATABASE_URL: leaky.DATABASE_URL });
  });

  it('lets a host widen with allow (names or patterns); credentials still drop unless kept', () => {
    const env = childEnv({ ...parent, ...leaky }, undefined, { allow: ['DATABASE_URL', /^REDIS_/, 'NPM_TOKEN'] });
    expect(env).toEqual({ PATH: '/usr/bin', HOME: '/home/me', LANG: 'C.UTF-8', DATABASE_URL: leaky.DATABASE_URL, REDIS_URL: leaky.REDIS_URL });
    expect(childEnv(parent, undefined, { allow: [/TOKEN/], keep: ['NPM_TOKEN'] }).NPM_TOKEN).toBe('npm_x');
  });

  it("inherit: 'all-but-credentials' restores the deny-list behaviour", () => {
    const env = childEnv({ ...parent, ...leaky }, undefined, { inherit: 'all-but-credentials' });
    expect(env).toEqual({ PATH: '/usr/bin', HOME: '/home/me', LANG: 'C.UTF-8', ...leaky });
  });

  it('keep passes a name that is neither allow-listed nor credential-shaped', () => {
    expect(childEnv(leaky, undefined, { keep: ['SSH_AUTH_SOCK'] })).toEqual({ SSH_AUTH_SOCK: leaky.SSH_AUTH_SOCK });
  });

  it('never inherits an exported shell function', () => {
    expect(childEnv({ PATH: '/bin', TERM: '() { :;}; echo pwned' }, undefined)).toEqual({ PATH: '/bin' });
  });

  it('reads the values of inherited variables only: a credential it drops is never read', () => {
    // process.env makes a new string at each read; a spawn must not read (and copy) what it drops.
    const read: string[] = [];
    const watched = new Proxy(parent, {
      get(target, name, receiver) {
        if (typeof name === 'string') read.push(name);
        return Reflect.get(target, name, receiver) as unknown;
      },
    });
    expect(childEnv(watched, undefined)).toEqual({ PATH: '/usr/bin', HOME: '/home/me', LANG: 'C.UTF-8' });
    expect(read.sort()).toEqual(['HOME', 'LANG', 'PATH']);
  });

  it("lets the server's own env overlay win, including credential-shaped names", () => {
    const env = childEnv(parent, { GITHUB_TOKEN: 'mine', PATH: '/opt/bin', EXTRA: 'x' });
    expect(env.GITHUB_TOKEN).toBe('mine');
    expect(env.PATH).toBe('/opt/bin');
    expect(env.EXTRA).toBe('x');
    expect(env.NPM_TOKEN).toBeUndefined();
  });

  it('takes a host policy field by field: keep adds exceptions, other fields stay default', () => {
    const env = childEnv(parent, undefined, { keep: ['GITHUB_TOKEN'] });
    expect(env.GITHUB_TOKEN).toBe('ghp_x');
    expect(env.NPM_TOKEN).toBeUndefined();
    expect(env.DSH_SESSION).toBeUndefined();
  });

  it('lets a host replace the prefixes and the patterns', () => {
    const env = childEnv(parent, undefined, { inherit: 'all-but-credentials', hostPrefixes: ['MCP_RECONCILER_'], dropPatterns: [/^AWS_/] });
    expect(env.DSH_SESSION).toBe('host');
    expect(env.GITHUB_TOKEN).toBe('ghp_x');
    expect(env.AWS_PROFILE).toBeUndefined();
    expect(env.MCP_RECONCILER_DEBUG).toBeUndefined();
  });

  it('is not fooled by stateful /g patterns', () => {
    const g = /SECRET/g;
    expect(childEnv({ A_SECRET: '1', B_SECRET: '2', C: '3' }, undefined, { inherit: 'all-but-credentials', dropPatterns: [g] })).toEqual({ C: '3' });
    const a = /^X_/g;
    expect(childEnv({ X_1: '1', X_2: '2', C: '3' }, undefined, { allow: [a] })).toEqual({ X_1: '1', X_2: '2' });
  });

  it('exposes a frozen default policy', () => {
    expect(Object.isFrozen(defaultEnvPolicy)).toBe(true);
    expect(defaultEnvPolicy.hostPrefixes).toContain('DSH_');
    expect(defaultEnvPolicy.inherit).toBe('allowlist');
  });
});
