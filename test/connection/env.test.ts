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

  it('drops credential-shaped names, cloud credentials and host prefixes, keeps the rest', () => {
    expect(childEnv(parent, undefined)).toEqual({ PATH: '/usr/bin', HOME: '/home/me', LANG: 'C.UTF-8' });
  });

  it('matches names case-insensitively', () => {
    expect(inheritsVariable('my_token')).toBe(false);
    expect(inheritsVariable('dsh_thing')).toBe(false);
    expect(inheritsVariable('KEYBOARD_LAYOUT')).toBe(true);
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
    const env = childEnv(parent, undefined, { hostPrefixes: ['MCP_RECONCILER_'], dropPatterns: [/^AWS_/] });
    expect(env.DSH_SESSION).toBe('host');
    expect(env.GITHUB_TOKEN).toBe('ghp_x');
    expect(env.AWS_PROFILE).toBeUndefined();
    expect(env.MCP_RECONCILER_DEBUG).toBeUndefined();
  });

  it('is not fooled by stateful /g patterns', () => {
    const g = /SECRET/g;
    expect(childEnv({ A_SECRET: '1', B_SECRET: '2', C: '3' }, undefined, { dropPatterns: [g] })).toEqual({ C: '3' });
  });

  it('exposes a frozen default policy', () => {
    expect(Object.isFrozen(defaultEnvPolicy)).toBe(true);
    expect(defaultEnvPolicy.hostPrefixes).toContain('DSH_');
  });
});
