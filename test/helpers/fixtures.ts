/**
 * Paths of the compiled fixture servers and ready-made desired-server entries
 * for tests. Fixtures run as `dist/test/fixtures/<name>.js`, built by `tsc`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DesiredServer, Scope, ServerConfig } from '../../machines/types.js';
import { approvalHash, configHash, fingerprint } from '../../src/config/identity.js';

function findRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'tsconfig.json'))) return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error('test/helpers/fixtures: cannot find the repository root');
    dir = up;
  }
}

/** The repository root (the folder holding package.json). */
export const repoRoot = findRoot();

/** The built `mcp-reconciler` binary as package.json's `bin` names it (the bundle in dist/cli): what a user runs. */
export const cliBin = join(repoRoot, (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { bin: Record<string, string> }).bin['mcp-reconciler']!);

/**
 * Absolute path of the compiled fixture `dist/test/fixtures/<name>.js`.
 * Throws when it is missing: the fixtures must be built first.
 */
export function fixturePath(name: string): string {
  const path = resolve(repoRoot, 'dist', 'test', 'fixtures', `${name}.js`);
  if (!existsSync(path)) {
    throw new Error(`Fixture "${name}" is not built (${path} is missing): run \`npm run build\` (or \`npx tsc -p .\`) first.`);
  }
  return path;
}

/** Absolute path of a script inside node_modules, e.g. `@modelcontextprotocol/server-memory/dist/index.js`. */
export function modulePath(relative: string): string {
  return resolve(repoRoot, 'node_modules', relative);
}

/** A desired-server entry for `config`, with its fingerprint and approval hash computed. */
export function desiredServer(name: string, config: ServerConfig, scope: Scope = 'runtime', source = scope === 'sdk' ? 'sdk' : 'runtime'): DesiredServer {
  return { name, scope, source, config, fingerprint: fingerprint(config), hash: approvalHash(config), configHash: configHash(config) };
}

/** Options of {@link stdioFixture}. */
export interface StdioFixtureOptions {
  /** Server name; default the fixture name. */
  name?: string;
  env?: Record<string, string>;
  /** Extra arguments after the script path. */
  args?: string[];
  timeout?: number;
  scope?: Scope;
  cwd?: string;
}

/** The stdio config that runs fixture `fixture` with this Node binary. */
export function stdioFixtureConfig(fixture: string, options: StdioFixtureOptions = {}): ServerConfig {
  const config: ServerConfig = { type: 'stdio', command: process.execPath, args: [fixturePath(fixture), ...(options.args ?? [])] };
  if (options.env) config.env = options.env;
  if (options.timeout !== undefined) config.timeout = options.timeout;
  if (options.cwd !== undefined) config.cwd = options.cwd;
  return config;
}

/** A desired-server entry that runs fixture `fixture` over stdio. */
export function stdioFixture(fixture: string, options: StdioFixtureOptions = {}): DesiredServer {
  return desiredServer(options.name ?? fixture, stdioFixtureConfig(fixture, options), options.scope ?? 'runtime');
}
